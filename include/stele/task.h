// stele/task.h — Task<T>, the coroutine type of workflows.
//
// A workflow is an ordinary C++20 coroutine returning stele::Task<T>:
//
//   stele::Task<stele::Json> Greet(stele::WorkflowContext& ctx, stele::Json params) {
//     auto r = co_await ctx.call("demo:hello/api.greet", params);
//     co_return r.value;
//   }
//
// A Task is lazy: its body starts when it is awaited (or driven by the
// engine). Task<void> is for helpers that return nothing. Tasks compose: a workflow may `co_await`
// helper coroutines that return Task<U>; an exception thrown inside propagates to the awaiter as in
// ordinary C++. An exception escaping the workflow itself fails it permanently (a workflow trap).
//
// How suspension works: every WorkflowContext operation asks the replay
// engine synchronously. When the engine answers, the operation completes
// without suspending. When it cannot (the awaited response has not arrived
// yet, the history diverged, the database failed) the operation suspends the
// coroutine, control returns to the engine, and the engine destroys the
// suspended frames; the workflow is later replayed from its event log. So
// unloading a blocked workflow never depends on user code: no exception is
// thrown that a `catch (...)` could swallow. Destructors of the workflow's
// locals do run then, so keep side effects out of them.
// A workflow must `co_await` only WorkflowContext operations and other
// stele::Tasks; suspending on anything else fails the workflow.
//
// Threading: a Task belongs to the one run that drives it.
// Ownership: a Task owns its coroutine frame (move-only); destroying it
// destroys the frame and every Task frame it is awaiting.
#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace stele {

template <class T>
class TaskDriver;

namespace internal {
// Where a promise keeps the value of co_return (nothing for Task<void>).
template <class T>
struct TaskResultSlot {
  std::optional<T> value;
  template <class U>
  requires std::is_convertible_v<U&&, T>
  void return_value(U&& v) { value.emplace(std::forward<U>(v)); }
  T Take() { return std::move(*value); }
};
template <>
struct TaskResultSlot<void> {
  void return_void() noexcept {}
  void Take() {}
};
}  // namespace internal

template <class T>
class [[nodiscard]] Task {
  static_assert(!std::is_reference_v<T>, "Task<T&> is not supported");

 public:
  struct promise_type : internal::TaskResultSlot<T> {
    std::exception_ptr exception;
    std::coroutine_handle<> continuation;

    Task get_return_object() {
      return Task(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct FinalAwaiter {
      bool await_ready() noexcept { return false; }
      // Resumes the awaiting coroutine (symmetric transfer), or returns to
      // the driver for the root task.
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        auto next = h.promise().continuation;
        return next ? next : std::noop_coroutine();
      }
      void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void unhandled_exception() noexcept { exception = std::current_exception(); }
  };

  Task() = default;
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { Reset(); }

  // Awaiting a Task runs it to completion (or until the workflow is
  // suspended by the engine) and yields its value.
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> caller) noexcept {
    handle_.promise().continuation = caller;
    return handle_;
  }
  T await_resume() {
    auto& promise = handle_.promise();
    if (promise.exception) std::rethrow_exception(promise.exception);
    return promise.Take();
  }

 private:
  template <class>
  friend class TaskDriver;
  explicit Task(std::coroutine_handle<promise_type> h) : handle_(h) {}
  void Reset() {
    if (handle_) handle_.destroy();
    handle_ = {};
  }
  std::coroutine_handle<promise_type> handle_;
};

// Drives a root Task for the engine: Start() runs the body until it
// finishes or suspends. Used by the native workflow worker and tests.
template <class T>
class TaskDriver {
 public:
  explicit TaskDriver(Task<T> task) : task_(std::move(task)) {}
  // REQUIRES: called once, with a valid task.
  void Start() { task_.handle_.resume(); }
  bool valid() const { return static_cast<bool>(task_.handle_); }
  bool done() const { return task_.handle_ && task_.handle_.done(); }
  // REQUIRES: done(). The exception that escaped the body, if any.
  std::exception_ptr exception() const { return task_.handle_.promise().exception; }
  // REQUIRES: done() and no exception.
  T TakeValue() { return task_.handle_.promise().Take(); }
  // Destroys the (possibly suspended) frames now.
  void Destroy() { task_.Reset(); }

 private:
  Task<T> task_;
};

}  // namespace stele
