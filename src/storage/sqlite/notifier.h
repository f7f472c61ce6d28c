// In-process wake-ups of the SQLite backend (docs/model.md §10).
//
// Write operations collect Notifications while they run; the writer thread
// hands them to Notifier::Notify only after the COMMIT that made them true
// (and drops those of operations rolled back to their savepoint), so a
// waiter never sees a change that is not durable.
//
// A Waiter is registered *before* its caller checks the database on a read
// connection, so no commit can slip between check and wait: a commit before
// the check's snapshot is seen by the check; any later one notifies the
// waiter, because Notify runs after the COMMIT. (A response both seen and
// delivered is harmless: responses carry their cursors.)
// Notifications are hints; callers loop and re-query.
//
// Threading: all methods are thread-safe. A Waiter is waited on by the one
// thread that registered it.
// Ownership: Notifier hands out shared_ptr<Waiter>; cancellation callbacks
// hold their waiter alive, never the Notifier.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/time.h"
#include "core/component_id.h"
#include "core/execution_event.h"
#include "core/function_fqn.h"
#include "core/ids.h"
#include "storage/wait.h"
#include "storage/watch_registry.h"

namespace stele::storage::sqlite::internal {

// An execution of `ffqn` / `digest` became pending at `scheduled_at` by an
// operation that ran at `current_time`.
struct PendingNotice {
  std::string ffqn;
  core::InputContentDigest digest;
  DateTime scheduled_at;
  DateTime current_time;
};
struct ResponseNotice {
  std::string execution_id;
  uint32_t cursor = 0;
  core::JoinSetResponseEventOuter response;
};
struct FinishedNotice {
  std::string execution_id;
  core::SupportedFunctionReturnValue result;
};

struct Notifications {
  std::vector<PendingNotice> pending;
  std::vector<ResponseNotice> responses;  // in commit (= cursor) order
  std::vector<FinishedNotice> finished;
  std::vector<std::string> published;  // ids of executions that wrote a Publish

  void Append(Notifications&& other);
  bool empty() const {
    return pending.empty() && responses.empty() && finished.empty() && published.empty();
  }
};

enum class WaitEnd { kNotified, kTimeout, kCancelled, kClosed };

class Waiter : public std::enable_shared_from_this<Waiter> {
 public:
  // Blocks until notified, the Notifier closes, or `wait` ends (deadline or
  // cancellation); unbounded when `wait` is nullopt. A notification that
  // already arrived wins over an expired deadline.
  WaitEnd Wait(const std::optional<WaitOptions>& wait);
  // Responses delivered so far (response waiters), in cursor order.
  std::vector<core::JoinSetResponseEventOuter> TakeResponses();
  // The result delivered (finished waiters).
  std::optional<core::SupportedFunctionReturnValue> TakeResult();

 private:
  friend class Notifier;
  enum class Kind { kPendingByFfqn, kPendingByDigest, kResponses, kFinished, kPublished };
  Waiter(Kind kind, std::vector<std::string> keys, DateTime pending_at_or_sooner,
         uint32_t from_cursor)
      : kind_(kind),
        keys_(std::move(keys)),
        pending_at_or_sooner_(pending_at_or_sooner),
        from_cursor_(from_cursor) {}

  // Immutable after construction; read by the Notifier under its mutex.
  const Kind kind_;
  const std::vector<std::string> keys_;
  const DateTime pending_at_or_sooner_;  // pending waiters
  const uint32_t from_cursor_;           // response waiters

  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;                                     // guarded by mu_
  bool cancelled_ = false;                                    // guarded by mu_
  bool closed_ = false;                                       // guarded by mu_
  std::vector<core::JoinSetResponseEventOuter> responses_;    // guarded by mu_
  std::optional<core::SupportedFunctionReturnValue> result_;  // guarded by mu_
};

class Notifier {
 public:
  using WaiterPtr = std::shared_ptr<Waiter>;

  // Waiters are made unregistered; Register arms them. The waiter's owner
  // calls Unregister on every path (idempotent, also when never armed).
  //
  // Woken when an execution of one of `ffqns` (or with `digest`) becomes
  // pending at or before max(the writer's current time, pending_at_or_sooner).
  static WaiterPtr ForPendingByFfqns(const std::vector<core::FunctionFqn>& ffqns,
                                     DateTime pending_at_or_sooner);
  static WaiterPtr ForPendingByDigest(const core::InputContentDigest& digest,
                                      DateTime pending_at_or_sooner);
  // Receives every response of `execution_id` with cursor >= from_cursor
  // committed after Register.
  static WaiterPtr ForResponses(const core::ExecutionId& execution_id, uint32_t from_cursor);
  // Receives the result when `execution_id` finishes.
  static WaiterPtr ForFinished(const core::ExecutionId& execution_id);
  // Woken when `execution_id` commits a Publish event or finishes.
  static WaiterPtr ForPublished(const core::ExecutionId& execution_id);

  // After Close the waiter is released at once instead (kClosed).
  void Register(const WaiterPtr& waiter);
  void Unregister(const WaiterPtr& waiter);

  // REQUIRES: called after the commit that made `notes` true.
  void Notify(const Notifications& notes);

  // Releases every waiter (kClosed) now and every waiter registered later;
  // fires every watch.
  void Close();

  // Callback watches (DbConnection::WatchFinished / WatchPublish), fired by
  // Notify after the waiters, outside mu_.
  WatchRegistry& watches() { return watches_; }

 private:
  using Registry = std::unordered_map<std::string, std::vector<WaiterPtr>>;
  static WaiterPtr Make(Waiter::Kind kind, std::vector<std::string> keys, DateTime at,
                        uint32_t from_cursor = 0);
  Registry& RegistryFor(Waiter::Kind kind);

  std::mutex mu_;
  bool closed_ = false;  // guarded by mu_
  Registry by_ffqn_;     // guarded by mu_
  Registry by_digest_;   // guarded by mu_
  Registry responses_;   // guarded by mu_
  Registry finished_;    // guarded by mu_
  Registry published_;   // guarded by mu_
  WatchRegistry watches_;
};

// Registry key of a component digest.
std::string DigestKey(const core::InputContentDigest& digest);

}  // namespace stele::storage::sqlite::internal
