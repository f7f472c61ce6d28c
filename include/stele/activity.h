// stele/activity.h — activities: ordinary C++ callables that do the side
// effects of a workflow (I/O, payments, emails), run by the engine with a
// deadline, a cancellation token and retries.
//
//   stele::ActivityResult Charge(stele::ActivityContext& ctx, const stele::Json& params) {
//     auto amount = stele::Param<int>(params, 0);
//     if (!amount) return stele::Unexpected(stele::Json(amount.error()));
//     ...
//     return stele::Json{{"receipt", "R-1"}};
//   }
//
// An activity returns ok (its value) or err (a business error value). An
// err is retried while retries remain when `retry_on_err` is set, then
// stored as the result; an err returned through ctx.NonRetryable(e) is a
// permanent failure (a declined card, a malformed request): stored at
// once, whatever retries remain. An exception escaping the callable is a trap:
// retried while retries remain, then the execution fails ("uncategorized").
// Running past the deadline (ActivityOptions::timeout) is a timeout: the
// token fires, the attempt is recorded as timed out and retried.
// Activities may run more than once (a crash between the side effect and
// the record of its result): make them idempotent. The result is recorded
// exactly once.
//
// Threading: the engine calls activities concurrently from its threads;
// one call per attempt. Ownership: the context lives for the call.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "stele/cancellation.h"
#include "stele/json.h"
#include "stele/result.h"

namespace stele {

struct ActivityOptions {
  // Retries after the first attempt; 0: the first failure is final.
  uint32_t max_retries = 5;
  // Delay before retry n is backoff * 2^(n-1), at most max_backoff,
  // shortened by a pseudo-random share of up to jitter_percent % (0..100)
  // so that activities failing together do not retry together.
  std::chrono::milliseconds backoff{100};
  std::chrono::milliseconds max_backoff{300'000};
  uint32_t jitter_percent = 10;
  // Whether an `err` result is retried (true) or final at once (false).
  bool retry_on_err = true;
  // Longest time one attempt may take (the lock lease).
  std::chrono::milliseconds timeout{10000};
};

class ActivityContext {
 public:
  ActivityContext(std::string execution_id, std::chrono::system_clock::time_point deadline,
                  CancellationToken cancel, uint32_t attempt)
      : execution_id_(std::move(execution_id)),
        deadline_(deadline),
        cancel_(std::move(cancel)),
        attempt_(attempt) {}

  // The activity execution's id (stable across retries: an idempotency key).
  const std::string& execution_id() const { return execution_id_; }
  // When this attempt times out.
  std::chrono::system_clock::time_point deadline() const { return deadline_; }
  // 1 for the first attempt, 2 for the first retry, ...
  uint32_t attempt() const { return attempt_; }
  // Fires at the deadline, on cancellation and at engine shutdown; a
  // long-running activity should watch it and return soon after.
  const CancellationToken& cancellation() const { return cancel_; }
  bool cancelled() const { return cancel_.IsCancelled(); }
  // Sleeps up to `duration`; returns false early when cancelled.
  bool SleepFor(std::chrono::milliseconds duration) const;
  // Returns `err` as a permanent failure: the execution finishes with it at
  // once, without the retries that remain.
  //   if (declined) return ctx.NonRetryable(stele::Json{{"code", "declined"}});
  Unexpected<Json> NonRetryable(Json err) {
    non_retryable_ = true;
    return Unexpected<Json>(std::move(err));
  }
  // Whether NonRetryable was called (read by the engine).
  bool non_retryable() const { return non_retryable_; }

 private:
  std::string execution_id_;
  std::chrono::system_clock::time_point deadline_;
  CancellationToken cancel_;
  uint32_t attempt_;
  bool non_retryable_ = false;
};

// ok value or err value.
using ActivityResult = Result<Json, Json>;
using ActivityFn = std::function<ActivityResult(ActivityContext&, const Json& params)>;

}  // namespace stele
