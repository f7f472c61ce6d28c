// stele/workflow_context.h — what a workflow can do: call and submit child
// executions, await them, sleep durably, schedule top-level executions,
// write stub results, draw deterministic random values, log.
//
// Every operation is awaited: `co_await ctx.call(...)`. Each operation is
// matched against the workflow's event history by the replay engine
// (docs/model.md §6.2): the first time it runs it is recorded, on
// replay the recorded outcome is returned. See stele/task.h for how a
// workflow that must wait is unloaded.
//
// What a workflow must not do (replay would diverge, and the run fails with
// "nondeterminism detected"): read the clock, draw its own random numbers,
// do I/O, read mutable globals, or decide its operations from anything but
// its params and the values operations returned. Side effects belong in
// activities. Changing the code of a workflow is safe only after the part
// of it that existing executions have already recorded.
//
// Every operation takes the call site as its last parameter (defaulted:
// never pass it). With EngineOptions::store_backtraces, the call site of an
// operation that wrote to the log is stored as the execution's backtrace
// for those versions (DbExternalApi::GetBacktrace, GET
// /v1/executions/{id}/backtrace): where a waiting workflow waits.
//
// ffqns are "namespace:package/interface.function" strings; an ffqn that
// does not parse, or names no registered function, fails the workflow
// permanently with a clear reason. Params are a JSON array.
//
// Threading: a context belongs to one run; use it only from the workflow's
// own coroutine. Ownership: the engine owns the context; it lives as long as
// the run. JoinSet values are plain handles, valid only inside the run.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "stele/execution_result.h"
#include "stele/json.h"
#include "stele/log_level.h"
#include "stele/result.h"
#include "stele/source_location.h"
#include "stele/task.h"

namespace stele {

namespace runtime::native {
class NativeRun;
}  // namespace runtime::native

// An awaitable workflow operation. The engine is asked in await_ready; when
// it has no answer the coroutine stays suspended and the engine unloads it.
template <class T>
class [[nodiscard]] Op {
 public:
  using Fn = std::function<std::optional<T>()>;
  explicit Op(Fn fn) : fn_(std::move(fn)) {}

  bool await_ready() {
    result_ = fn_();
    return result_.has_value();
  }
  void await_suspend(std::coroutine_handle<>) noexcept {}
  T await_resume() { return std::move(*result_); }

  // A derived operation: `f(T)` applied to this one's value.
  template <class F>
  auto Then(F f) && -> Op<std::invoke_result_t<F, T>> {
    using U = std::invoke_result_t<F, T>;
    return Op<U>([fn = std::move(fn_), f = std::move(f)]() mutable -> std::optional<U> {
      std::optional<T> value = fn();
      if (!value) return std::nullopt;
      return f(std::move(*value));
    });
  }

 private:
  Fn fn_;
  std::optional<T> result_;
};

// The value of an operation that returns nothing.
struct Done {
  friend bool operator==(const Done&, const Done&) = default;
};

// A join set: a group of child executions and delays the workflow awaits
// with join_next. Join sets still open when the workflow returns are closed
// (unawaited activities and delays cancelled, child workflows awaited).
class JoinSet {
 public:
  // "g:1", "n:payments", ...
  const std::string& id() const { return id_; }
  friend bool operator==(const JoinSet&, const JoinSet&) = default;

 private:
  friend class WorkflowContext;
  explicit JoinSet(std::string id) : id_(std::move(id)) {}
  std::string id_;
};

// One response taken from a join set by join_next.
struct JoinNextResponse {
  std::string id;         // the child execution id or the delay id
  bool is_delay = false;  // a delay: result is Ok (expired) or Failed("cancelled")
  ExecutionResult result;
};

struct JoinNextError {
  enum class Kind {
    kAllProcessed,      // every submission of the set was already awaited
    kFunctionMismatch,  // the next response is of another function (join_next with ffqn)
    kCancelled,         // the workflow is being cancelled (Engine::Cancel): clean up and return
  };
  Kind kind = Kind::kAllProcessed;
  std::string message;
};

// What a workflow sets for one child it calls or submits (docs/sdk.md,
// "Deadlines"): a timeout from now — the child ends `timed_out` past it,
// and never outlives this workflow's own deadline, which it inherits
// anyway — and overrides of the child function's retry policy. A timeout
// that is not positive or a jitter over 100 fails the workflow (constraint
// violation).
struct ChildOptions {
  std::optional<std::chrono::milliseconds> timeout = std::nullopt;
  std::optional<uint32_t> max_retries = std::nullopt;
  std::optional<std::chrono::milliseconds> backoff = std::nullopt;
  std::optional<std::chrono::milliseconds> max_backoff = std::nullopt;
  std::optional<uint32_t> jitter_percent = std::nullopt;
};

// A message taken from a channel by receive (docs/sdk.md, "Messages").
struct ReceivedMessage {
  std::string id;       // the sender's message id
  std::string channel;  // the channel it was sent to
  Json body;
};

struct ReceiveError {
  enum class Kind {
    kTimedOut,   // the timeout of receive came first
    kCancelled,  // the workflow is being cancelled (Engine::Cancel): clean up and return
  };
  Kind kind = Kind::kTimedOut;
  std::string message;
};

class WorkflowContext {
 public:
  explicit WorkflowContext(runtime::native::NativeRun& run) : run_(run) {}
  WorkflowContext(const WorkflowContext&) = delete;
  WorkflowContext& operator=(const WorkflowContext&) = delete;

  // This execution's id ("E_01K...", or a child's derived id).
  const std::string& execution_id() const;

  // --- Child executions -------------------------------------------------

  // Runs `ffqn(params)` as a child and waits for its result (a one-off
  // join set). An activity's retries and timeouts happen inside the child;
  // the result is what it finished with.
  Op<ExecutionResult> call(std::string_view ffqn, Json params,
                           SourceLocation where = SourceLocation::current());
  // call() with the child's own timeout and retry policy.
  Op<ExecutionResult> call(std::string_view ffqn, Json params, ChildOptions options,
                           SourceLocation where = SourceLocation::current());
  // call() with the ok value converted to T; an error string otherwise.
  template <class T>
  Op<Result<T, std::string>> call_as(std::string_view ffqn, Json params,
                                     SourceLocation where = SourceLocation::current()) {
    return call(ffqn, std::move(params), where).Then([](ExecutionResult r) { return r.As<T>(); });
  }

  // A new generated join set ("g:1", "g:2", ...).
  Op<JoinSet> new_join_set(SourceLocation where = SourceLocation::current());
  // A named join set ("n:<name>"); the name is ASCII alphanumerics, '-' and
  // '/'. Error: a bad name, or a set of that name exists already.
  Op<Result<JoinSet, std::string>> new_join_set(std::string_view name,
                                                SourceLocation where = SourceLocation::current());

  // Starts `ffqn(params)` as a child in `join_set`; returns its id at once.
  Op<std::string> submit(const JoinSet& join_set, std::string_view ffqn, Json params,
                         SourceLocation where = SourceLocation::current());
  // submit() with the child's own timeout and retry policy.
  Op<std::string> submit(const JoinSet& join_set, std::string_view ffqn, Json params,
                         ChildOptions options, SourceLocation where = SourceLocation::current());
  // A durable timer in `join_set` that responds after `delay`; returns its id.
  Op<std::string> submit_delay(const JoinSet& join_set, std::chrono::milliseconds delay,
                               SourceLocation where = SourceLocation::current());

  // The next response of `join_set`, in arrival order; waits for it.
  // Error kAllProcessed when everything submitted was already awaited.
  Op<Result<JoinNextResponse, JoinNextError>> join_next(
      const JoinSet& join_set, SourceLocation where = SourceLocation::current());
  // As above, but the response must be of `ffqn` (kFunctionMismatch
  // otherwise; the response is consumed all the same).
  Op<Result<JoinNextResponse, JoinNextError>> join_next(
      const JoinSet& join_set, std::string_view ffqn,
      SourceLocation where = SourceLocation::current());
  // join_next without waiting: the next response when it has arrived,
  // nullopt when none has yet (the answer is recorded: a replay gives the
  // same). Error kAllProcessed as join_next.
  Op<Result<std::optional<JoinNextResponse>, JoinNextError>> join_next_try(
      const JoinSet& join_set, SourceLocation where = SourceLocation::current());
  // The result of child `child_execution_id` of function `ffqn` whose
  // response join_next already returned. Error: the id is not among the
  // processed responses, or the child runs another function.
  Op<Result<ExecutionResult, std::string>> get(std::string_view ffqn,
                                               std::string_view child_execution_id,
                                               SourceLocation where = SourceLocation::current());

  // Closes `join_set` now: cancels its unawaited activities and delays and
  // waits for every unawaited child. Later submissions to it fail the
  // workflow.
  Op<Done> close(const JoinSet& join_set, SourceLocation where = SourceLocation::current());

  // --- Time -------------------------------------------------------------

  // Sleeps durably for `duration`. True when the timer expired, false when
  // it was cancelled (Engine::Cancel on its delay id).
  Op<bool> sleep(std::chrono::milliseconds duration,
                 SourceLocation where = SourceLocation::current());

  // --- Other executions -------------------------------------------------

  // Creates a new top-level execution of `ffqn(params)`, due after `delay`;
  // fire and forget. Returns its id (deterministic on replay).
  Op<std::string> schedule(std::string_view ffqn, Json params,
                           std::chrono::milliseconds delay = std::chrono::milliseconds(0),
                           SourceLocation where = SourceLocation::current());
  // Writes `result` into `execution_id`, a child of this workflow running
  // the stub activity `ffqn`. Idempotent for the same value; an error when
  // another value is there.
  Op<Result<void, std::string>> stub(std::string_view ffqn, std::string_view execution_id,
                                     ExecutionResult result,
                                     SourceLocation where = SourceLocation::current());

  // --- Messages and published values (docs/sdk.md, "Messages") ---------

  // The next message sent to this execution on `channel` (Engine::
  // SendMessage, POST /v1/executions/{id}/messages/{channel}, another
  // workflow's send), in arrival order; waits for it. Messages sent before
  // the workflow asks are kept; each is received exactly once, and a replay
  // receives the same ones in the same order. A channel is 1 to 128 ASCII
  // letters, digits, '-' or '/'; another fails the workflow.
  Op<Result<ReceivedMessage, ReceiveError>> receive(
      std::string_view channel, SourceLocation where = SourceLocation::current());
  // receive, waiting at most `timeout` (a durable timer): kTimedOut when
  // no message came first.
  Op<Result<ReceivedMessage, ReceiveError>> receive(
      std::string_view channel, std::chrono::milliseconds timeout,
      SourceLocation where = SourceLocation::current());
  // receive without waiting: nullopt when no message has arrived yet (the
  // answer is recorded: a replay gives the same).
  Op<Result<std::optional<ReceivedMessage>, ReceiveError>> try_receive(
      std::string_view channel, SourceLocation where = SourceLocation::current());
  // Publishes `value` under `key` (the rules of a channel) for readers
  // outside (Engine::GetValue, GET /v1/executions/{id}/values/{key}); the
  // last value of a key wins. Visible once the call returns.
  Op<Done> publish(std::string_view key, Json value,
                   SourceLocation where = SourceLocation::current());
  // Sends `body` to `channel` of execution `execution_id`, exactly once
  // (replays do not send again). Error: no such execution, or it finished.
  Op<Result<void, std::string>> send(std::string_view execution_id, std::string_view channel,
                                     Json body, SourceLocation where = SourceLocation::current());

  // --- Durable steps ----------------------------------------------------

  // Runs `fn` here, in the workflow's own process, and records its ok or
  // err value in the workflow's log: one write, no child execution and no
  // lock of its own (docs/sdk.md, "Steps"). On replay the recorded value is
  // returned and `fn` does not run. At least once, like an activity: a crash
  // between `fn` and the record runs it again, so make it idempotent. An
  // exception escaping `fn` fails the run, which is retried after the
  // workflow's backoff. `name` identifies the step on replay (another name
  // at the same point is nondeterminism). A step must end well within the
  // workflow's lease (WorkflowOptions::lock_expiry): the lease is extended
  // before it runs, not while it runs.
  //
  // `fn` is a function, a named callable, or a lambda that owns nothing
  // (captures by reference or trivially copyable values). GCC 12 destroys a
  // closure built inside a co_await expression twice when it owns what it
  // captures (a std::string, a shared_ptr); name such a lambda before the
  // co_await (docs/sdk.md, "Steps"). The static_assert keeps that mistake
  // from compiling on every compiler.
  template <class F>
  Op<ExecutionResult> step(std::string_view name, F&& fn,
                           SourceLocation where = SourceLocation::current()) {
    static_assert(
        std::is_lvalue_reference_v<F> || std::is_trivially_destructible_v<std::remove_cvref_t<F>>,
        "ctx.step: a lambda that owns its captures must be named before co_await "
        "(GCC 12 destroys it twice otherwise; docs/sdk.md, \"Steps\")");
    return StepOp(name, std::function<Result<Json, Json>()>(std::forward<F>(fn)), where);
  }

  // --- Deterministic randomness -----------------------------------------

  // Uniform in [min, max_exclusive). REQUIRES: min < max_exclusive.
  Op<uint64_t> random_u64(uint64_t min, uint64_t max_exclusive,
                          SourceLocation where = SourceLocation::current());
  // Uniform in [min, max_inclusive]. REQUIRES: min <= max_inclusive.
  Op<uint64_t> random_u64_inclusive(uint64_t min, uint64_t max_inclusive,
                                    SourceLocation where = SourceLocation::current());
  // Alphanumeric, length in [min_length, max_length_exclusive).
  Op<std::string> random_string(uint32_t min_length, uint32_t max_length_exclusive,
                                SourceLocation where = SourceLocation::current());

  // --- Logging ----------------------------------------------------------

  // Logged with the execution id (stele's log, STELE_LOG level); dropped
  // while replaying recorded steps.
  void log(std::string_view message, LogLevel level = LogLevel::kInfo) const;

 private:
  Op<ExecutionResult> StepOp(std::string_view name, std::function<Result<Json, Json>()> fn,
                             SourceLocation where);

  runtime::native::NativeRun& run_;
};

// The signature of a workflow function. `params` is the JSON array the
// execution was created with. A workflow finishes with its co_return value
// (Task<Json>) or, for Task<WorkflowResult>, with ok or err.
using WorkflowResult = Result<Json, Json>;
using WorkflowFn = std::function<Task<Json>(WorkflowContext&, Json params)>;
using WorkflowFnWithErr = std::function<Task<WorkflowResult>(WorkflowContext&, Json params)>;

}  // namespace stele
