// Notification-based waits of the SQLite backend (docs/model.md §10).
// Each registers its waiter before checking the database on a read
// connection, so a commit lands either before the check's snapshot (and is
// seen) or after the registration (and notifies it: Notify runs after the
// COMMIT). Every wait is bounded by its WaitOptions.
#include <string>
#include <utility>
#include <variant>

#include "storage/sqlite/connection.h"
#include "storage/sqlite/queries.h"
#include "storage/sqlite/row_codec.h"

namespace stele::storage::sqlite::internal {

namespace {

// Is anything selected by `sql` (key, time) due at `at`? Runs on a read
// connection; errors count as "yes" so that the caller re-queries at once
// and meets the error there instead of sleeping on it.
template <class Bind>
bool AnyDue(Store& store, const char* sql, Bind bind, DateTime at) {
  auto found = store.Read([&](Connection& db) -> Result<bool, DbErrorGeneric> {
    STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(sql));
    bind(stmt);
    stmt.BindInt64(2, TimeColumn(at));
    return stmt.Step();
  });
  return !found || *found;
}

constexpr const char* kAnyDueByFfqn =
    "SELECT 1 FROM t_state WHERE state = 'pending_at' AND paused = 0 AND ffqn = ? AND "
    "pending_expires_finished <= ? LIMIT 1";
constexpr const char* kAnyDueByDigest =
    "SELECT 1 FROM t_state WHERE state = 'pending_at' AND paused = 0 AND component_id_input_digest "
    "= ? AND "
    "pending_expires_finished <= ? LIMIT 1";

DbErrorReadWithTimeout WaitError(WaitEnd end) {
  switch (end) {
    case WaitEnd::kClosed:
      return DbErrorGeneric::Close();
    case WaitEnd::kCancelled:
      return DbErrorReadWithTimeout::Timeout(TimeoutOutcome::kCancel);
    case WaitEnd::kTimeout:
    case WaitEnd::kNotified:
      break;
  }
  return DbErrorReadWithTimeout::Timeout(TimeoutOutcome::kTimeout);
}

// Owns a waiter for one wait; unregisters it on every path out (also when
// it was never armed because the check failed).
class Registration {
 public:
  Registration(Notifier& notifier, Notifier::WaiterPtr waiter)
      : notifier_(notifier), waiter_(std::move(waiter)) {}
  ~Registration() { notifier_.Unregister(waiter_); }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  const Notifier::WaiterPtr& waiter() const { return waiter_; }
  void Arm() { notifier_.Register(waiter_); }
  // After this no further delivery can reach the waiter.
  void Disarm() { notifier_.Unregister(waiter_); }

 private:
  Notifier& notifier_;
  Notifier::WaiterPtr waiter_;
};

// Whether `execution_id` is finished or its log holds a Publish at or after
// `since` (WaitForPublish's condition), in one statement on a read
// connection. NotFound when there is no such execution.
Result<bool, DbErrorRead> PublishReady(Store& store, const ExecutionId& execution_id,
                                       Version since) {
  return store.Read([&](Connection& db) -> Result<bool, DbErrorRead> {
    // NULL first column: no such execution; the second is a range of the
    // log's primary key.
    STELE_ASSIGN_OR_RETURN(
        Statement stmt,
        db.Prepare("SELECT (SELECT state = 'finished' FROM t_state WHERE execution_id = ?1), "
                   "EXISTS (SELECT 1 FROM t_execution_log WHERE exec_key = (SELECT exec_key FROM "
                   "t_state WHERE execution_id = ?1) AND "
                   "version >= ?2 AND history_event_type = 'publish')"));
    stmt.BindText(1, execution_id.ToString());
    stmt.BindInt64(2, static_cast<int64_t>(since.value()));
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row || stmt.IsNull(0)) return Unexpected(DbErrorRead::NotFound());
    return stmt.Int64(0) != 0 || stmt.Int64(1) != 0;
  });
}

}  // namespace

void SqliteConnection::WaitForPendingByFfqn(DateTime pending_at_or_sooner,
                                            const std::vector<core::FunctionFqn>& ffqns,
                                            const WaitOptions& wait) {
  Registration registration(store_->notifier(),
                            Notifier::ForPendingByFfqns(ffqns, pending_at_or_sooner));
  registration.Arm();  // before the check: register-then-check
  for (const core::FunctionFqn& ffqn : ffqns) {
    const std::string name = ffqn.ToString();
    if (AnyDue(
            *store_, kAnyDueByFfqn, [&](Statement& stmt) { stmt.BindText(1, name); },
            pending_at_or_sooner)) {
      return;
    }
  }
  registration.waiter()->Wait(wait);
}

void SqliteConnection::WaitForPendingByComponentId(DateTime pending_at_or_sooner,
                                                   const core::ComponentId& component_id,
                                                   const WaitOptions& wait) {
  const core::InputContentDigest& digest = component_id.input_digest;
  Registration registration(store_->notifier(),
                            Notifier::ForPendingByDigest(digest, pending_at_or_sooner));
  registration.Arm();
  if (AnyDue(
          *store_, kAnyDueByDigest,
          [&](Statement& stmt) { stmt.BindBlob(1, digest.bytes().data(), digest.bytes().size()); },
          pending_at_or_sooner)) {
    return;
  }
  registration.waiter()->Wait(wait);
}

Result<std::vector<core::JoinSetResponseEventOuter>, DbErrorReadWithTimeout>
SqliteConnection::SubscribeToNextResponses(const ExecutionId& execution_id, uint32_t start_idx,
                                           const WaitOptions& wait) {
  using Responses = std::vector<core::JoinSetResponseEventOuter>;
  Registration registration(store_->notifier(), Notifier::ForResponses(execution_id, start_idx));
  // Register, then check on a read connection: a response committed before
  // the check's snapshot is seen by it, any later one is delivered to the
  // waiter (Notify runs after its COMMIT). The check then needs no turn on
  // the writer thread, which a warm workflow would otherwise take on every
  // step it awaits.
  registration.Arm();
  auto found = store_->Read([&](Connection& db) -> Result<Responses, DbErrorReadWithTimeout> {
    const std::string id = execution_id.ToString();
    STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, id));
    if (!state) return Unexpected(DbErrorRead::NotFound());
    STELE_ASSIGN_OR_RETURN(auto rows, LoadResponses(db, id, start_idx));
    Responses responses;
    for (auto& row : rows) responses.push_back(std::move(row.event));
    return responses;
  });
  if (!found) return Unexpected(std::move(found).error());
  // Anything the waiter got meanwhile is also in the snapshot's list, which
  // runs contiguously from start_idx.
  if (!found->empty()) return std::move(*found);
  WaitEnd end = registration.waiter()->Wait(wait);
  // Responses delivered before disarming count even if the deadline passed
  // meanwhile.
  registration.Disarm();
  Responses responses = registration.waiter()->TakeResponses();
  if (!responses.empty()) return responses;
  return Unexpected(WaitError(end));
}

Result<core::SupportedFunctionReturnValue, DbErrorReadWithTimeout>
SqliteConnection::WaitForFinishedResult(const ExecutionId& execution_id,
                                        const std::optional<WaitOptions>& wait) {
  using Value = std::optional<core::SupportedFunctionReturnValue>;
  Registration registration(store_->notifier(), Notifier::ForFinished(execution_id));
  registration.Arm();  // register-then-check, as for responses
  auto found = store_->Read([&](Connection& db) -> Result<Value, DbErrorReadWithTimeout> {
    const std::string id = execution_id.ToString();
    STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, id));
    if (!state) return Unexpected(DbErrorRead::NotFound());
    const auto* finished = std::get_if<core::PendingStateFinished>(&state->pending_state.value);
    if (finished == nullptr) return Value();
    STELE_ASSIGN_OR_RETURN(auto event, LoadEvent(db, id, Version(finished->version)));
    const core::Finished* payload = event ? std::get_if<core::Finished>(&event->event) : nullptr;
    if (payload == nullptr) {
      return Unexpected(DbErrorGeneric::Uncategorized(
          "t_state of `" + id + "` is finished at version " + std::to_string(finished->version) +
          " but that event is not Finished"));
    }
    return Value(payload->result);
  });
  if (!found) return Unexpected(std::move(found).error());
  if (*found) return std::move(**found);
  WaitEnd end = registration.waiter()->Wait(wait);
  registration.Disarm();
  if (auto result = registration.waiter()->TakeResult()) return std::move(*result);
  return Unexpected(WaitError(end));
}

Result<void, DbErrorReadWithTimeout> SqliteConnection::WaitForPublish(
    const ExecutionId& execution_id, Version since, const WaitOptions& wait) {
  Registration registration(store_->notifier(), Notifier::ForPublished(execution_id));
  registration.Arm();  // register-then-check, as for responses
  auto found = PublishReady(*store_, execution_id, since);
  if (!found) return Unexpected(std::move(found).error());
  if (*found) return {};
  // A notification is a hint: the caller re-reads the log either way.
  WaitEnd end = registration.waiter()->Wait(wait);
  if (end == WaitEnd::kNotified) return {};
  return Unexpected(WaitError(end));
}

Result<WatchToken, DbErrorRead> SqliteConnection::WatchFinished(const ExecutionId& execution_id,
                                                                WatchCallback on_change) {
  return AddWatchThenCheck(
      store_->notifier().watches(), execution_id.ToString(), WatchKind::kFinished,
      std::move(on_change), [&] {
        return store_->Read([&](Connection& db) -> Result<bool, DbErrorRead> {
          STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, execution_id.ToString()));
          if (!state) return Unexpected(DbErrorRead::NotFound());
          return std::holds_alternative<core::PendingStateFinished>(state->pending_state.value);
        });
      });
}

Result<WatchToken, DbErrorRead> SqliteConnection::WatchPublish(const ExecutionId& execution_id,
                                                               Version since,
                                                               WatchCallback on_change) {
  return AddWatchThenCheck(store_->notifier().watches(), execution_id.ToString(),
                           WatchKind::kPublish, std::move(on_change),
                           [&] { return PublishReady(*store_, execution_id, since); });
}

void SqliteConnection::Unwatch(WatchToken token) { store_->notifier().watches().Remove(token); }

}  // namespace stele::storage::sqlite::internal
