#include "runtime/native/activity_worker.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>

#include "runtime/native/result_convert.h"

namespace stele {

bool ActivityContext::SleepFor(std::chrono::milliseconds duration) const {
  // A condition variable woken by the token: returns as soon as it fires.
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    bool fired = false;
  };
  auto waiter = std::make_shared<Waiter>();
  uint64_t registration = cancel_.OnCancel([waiter] {
    std::lock_guard lock(waiter->mu);
    waiter->fired = true;
    waiter->cv.notify_all();
  });
  bool fired;
  {
    std::unique_lock lock(waiter->mu);
    fired = waiter->cv.wait_for(lock, duration, [&] { return waiter->fired; });
  }
  if (registration != 0) cancel_.Unregister(registration);
  return !fired;
}

}  // namespace stele

namespace stele::runtime::native {

NativeActivityWorker::NativeActivityWorker(std::vector<NativeActivity> activities,
                                           ActivityOptions options)
    : activities_(std::move(activities)), options_(options) {
  for (const auto& activity : activities_) ffqns_.push_back(activity.ffqn);
}

const ActivityFn* NativeActivityWorker::Find(const core::FunctionFqn& ffqn) const {
  for (const auto& activity : activities_) {
    if (activity.ffqn == ffqn) return &activity.fn;
  }
  return nullptr;
}

executor::WorkerResult NativeActivityWorker::Run(executor::WorkerContext ctx) {
  const ActivityFn* fn = Find(ctx.ffqn);
  if (fn == nullptr) {
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCannotInstantiate,
                                         "no activity registered for " + ctx.ffqn.ToString());
  }
  ActivityContext activity_ctx(
      ctx.execution_id.ToString(),
      std::chrono::time_point_cast<std::chrono::system_clock::duration>(ctx.execution_deadline),
      ctx.cancel, ctx.intermittent_event_count + 1);
  std::optional<ActivityResult> result;
  std::string trap;
  try {
    result.emplace((*fn)(activity_ctx, ctx.params));
  } catch (const std::exception& e) {
    trap = std::string("activity threw: ") + e.what();
  } catch (...) {
    trap = "activity threw a non-std::exception";
  }

  if (!result) {
    return executor::WorkerResult::Err(ctx.version, executor::ActivityTrap{trap, std::nullopt, {}});
  }
  if (result->has_value()) {
    return executor::WorkerResult::Ok(core::ReturnValueOk{std::move(**result)}, ctx.version);
  }
  core::ReturnValueErr err{std::move(result->error())};
  if (options_.retry_on_err && !activity_ctx.non_retryable()) {
    return executor::WorkerResult::Err(ctx.version,
                                       executor::ActivityReturnedError{std::move(err), {}, {}});
  }
  return executor::WorkerResult::Ok(std::move(err), ctx.version);
}

}  // namespace stele::runtime::native
