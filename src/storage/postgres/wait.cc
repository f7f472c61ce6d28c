// Notification-based waits of the PostgreSQL backend (notifier.h): each
// registers its waiter, then checks the database, then sleeps until a
// notice, the poll interval, cancellation, Close or the deadline — and
// re-checks after every wake-up (notices are hints).
#include <algorithm>
#include <string>
#include <utility>
#include <variant>

#include "storage/postgres/connection.h"
#include "storage/postgres/journal.h"

namespace stele::storage::postgres::internal {

namespace {

using Clock = std::chrono::steady_clock;

// Is anything of the given keys due? Errors count as "yes", so that the
// caller re-queries at once and meets the error there.
bool AnyDue(Store& store, const std::string& sql, const Params& params) {
  auto found = store.Read<bool, DbErrorGeneric>([&](PgConn& db) -> Result<bool, DbErrorGeneric> {
    auto res = db.Exec(sql, params);
    if (!res) return Unexpected(res.error().ToGeneric());
    return res->rows() > 0;
  });
  return !found || *found;
}

Clock::time_point NextWake(Store& store, Clock::time_point deadline) {
  return std::min(deadline, Clock::now() + store.PollInterval());
}

// Runs `check` (nullopt = nothing yet) until it yields, the deadline
// (nullopt: none) passes, or the wait is cancelled / the store closed.
template <class T, class Check>
Result<T, DbErrorReadWithTimeout> WaitLoop(Store& store, Registration& registration,
                                           const std::optional<WaitOptions>& wait, Check check) {
  const Clock::time_point deadline = wait ? wait->deadline : Clock::time_point::max();
  while (true) {
    STELE_ASSIGN_OR_RETURN(std::optional<T> found, check());
    if (found) return std::move(*found);
    if (Clock::now() >= deadline) {
      return Unexpected(DbErrorReadWithTimeout::Timeout(TimeoutOutcome::kTimeout));
    }
    switch (registration.waiter().Wait(NextWake(store, deadline))) {
      case WaitEnd::kClosed:
        return Unexpected(DbErrorReadWithTimeout(DbErrorGeneric::Close()));
      case WaitEnd::kCancelled:
        return Unexpected(DbErrorReadWithTimeout::Timeout(TimeoutOutcome::kCancel));
      case WaitEnd::kNotified:
      case WaitEnd::kTimeout:
        break;  // re-check (a timeout past the deadline ends after it)
    }
  }
}

// Whether `id` is finished or its log holds a Publish at or after `since`
// (WaitForPublish's condition), in one statement. NotFound when there is
// no such execution.
Result<bool, DbErrorRead> PublishReady(Store& store, const std::string& id, Version since) {
  return store.Read<bool, DbErrorRead>([&](PgConn& db) -> Result<bool, DbErrorRead> {
    // No row: no such execution; the EXISTS is a range of the log's
    // primary key.
    auto res = db.Exec(
        "SELECT s.state = 'finished', EXISTS (SELECT 1 FROM t_execution_log l "
        "WHERE l.execution_id = $1 AND l.version >= $2 AND "
        "l.history_event_type = 'publish') FROM t_state s WHERE s.execution_id = $1",
        Params().Text(id).Int(static_cast<int64_t>(since.value())));
    if (!res) return Unexpected(DbErrorRead(res.error().ToGeneric()));
    if (res->rows() == 0) return Unexpected(DbErrorRead::NotFound());
    return res->Bool(0, 0) || res->Bool(0, 1);
  });
}

}  // namespace

void PostgresConnection::WaitForPendingByFfqn(DateTime pending_at_or_sooner,
                                              const std::vector<core::FunctionFqn>& ffqns,
                                              const WaitOptions& wait) {
  std::vector<std::string> keys;
  ArrayParam names;
  for (const auto& ffqn : ffqns) {
    names.Text(ffqn.ToString());
    keys.push_back(PendingFfqnKey(ffqn.ToString()));
  }
  Registration registration(store_->notifier(), keys, pending_at_or_sooner, wait.cancel);
  while (true) {
    // One query for all the ffqns (the partial pending index serves each).
    if (!ffqns.empty() &&
        AnyDue(*store_,
               "SELECT 1 FROM t_state WHERE state = 'pending_at' AND paused = false AND ffqn = "
               "ANY($1::text[]) AND "
               "pending_expires_finished <= $2 LIMIT 1",
               Params().Text(names.Literal()).Int(TimeColumn(pending_at_or_sooner)))) {
      return;
    }
    if (Clock::now() >= wait.deadline) return;
    if (registration.waiter().Wait(NextWake(*store_, wait.deadline)) != WaitEnd::kTimeout) return;
  }
}

void PostgresConnection::WaitForPendingByComponentId(DateTime pending_at_or_sooner,
                                                     const core::ComponentId& component_id,
                                                     const WaitOptions& wait) {
  const core::InputContentDigest& digest = component_id.input_digest;
  Registration registration(store_->notifier(), {PendingDigestKey(digest)}, pending_at_or_sooner,
                            wait.cancel);
  while (true) {
    if (AnyDue(*store_,
               "SELECT 1 FROM t_state WHERE state = 'pending_at' AND paused = false AND "
               "component_id_input_digest = $1::bytea AND pending_expires_finished <= $2 LIMIT 1",
               Params().Text(DigestParam(digest)).Int(TimeColumn(pending_at_or_sooner)))) {
      return;
    }
    if (Clock::now() >= wait.deadline) return;
    if (registration.waiter().Wait(NextWake(*store_, wait.deadline)) != WaitEnd::kTimeout) return;
  }
}

Result<std::vector<core::JoinSetResponseEventOuter>, DbErrorReadWithTimeout>
PostgresConnection::SubscribeToNextResponses(const ExecutionId& execution_id, uint32_t start_idx,
                                             const WaitOptions& wait) {
  using Responses = std::vector<core::JoinSetResponseEventOuter>;
  const std::string id = execution_id.ToString();
  Registration registration(store_->notifier(), {ResponseKey(id)}, std::nullopt, wait.cancel);
  return WaitLoop<Responses>(
      *store_, registration, wait,
      [&]() -> Result<std::optional<Responses>, DbErrorReadWithTimeout> {
        return store_->Read<std::optional<Responses>, DbErrorReadWithTimeout>(
            [&](PgConn& db) -> Result<std::optional<Responses>, DbErrorReadWithTimeout> {
              // The responses and, for an empty answer, whether the
              // execution exists: one round trip.
              auto results = db.ExecPipeline(
                  {SelectResponsesStatement(id, start_idx),
                   Statement{"SELECT 1 FROM t_state WHERE execution_id = $1", Params().Text(id)}});
              if (!results) {
                return Unexpected(DbErrorReadWithTimeout(results.error().error.ToGeneric()));
              }
              std::vector<ResponseWithCursor> rows;
              for (int row = 0; row < (*results)[0].rows(); ++row) {
                auto response = DecodeResponseRow((*results)[0], row, id);
                if (!response) return Unexpected(DbErrorReadWithTimeout(response.error()));
                rows.push_back(std::move(*response));
              }
              if (rows.empty()) {
                if ((*results)[1].rows() == 0) return Unexpected(DbErrorRead::NotFound());
                return std::optional<Responses>();
              }
              Responses responses;
              for (auto& row : rows) responses.push_back(std::move(row.event));
              return std::optional<Responses>(std::move(responses));
            });
      });
}

Result<core::SupportedFunctionReturnValue, DbErrorReadWithTimeout>
PostgresConnection::WaitForFinishedResult(const ExecutionId& execution_id,
                                          const std::optional<WaitOptions>& wait) {
  using Value = core::SupportedFunctionReturnValue;
  const std::string id = execution_id.ToString();
  std::optional<CancellationToken> cancel;
  if (wait) cancel = wait->cancel;
  Registration registration(store_->notifier(), {FinishedKey(id)}, std::nullopt, cancel);
  return WaitLoop<Value>(
      *store_, registration, wait, [&]() -> Result<std::optional<Value>, DbErrorReadWithTimeout> {
        return store_->Read<std::optional<Value>, DbErrorReadWithTimeout>(
            [&](PgConn& db) -> Result<std::optional<Value>, DbErrorReadWithTimeout> {
              // One statement: the state and, when finished, its last event.
              auto res = db.Exec(
                  "SELECT s.state, l.json_value::text, s.corresponding_version FROM t_state s "
                  "LEFT JOIN t_execution_log l ON s.state = 'finished' AND "
                  "l.execution_id = $1 AND l.version = s.corresponding_version "
                  "WHERE s.execution_id = $1",
                  Params().Text(id));
              if (!res) return Unexpected(DbErrorReadWithTimeout(res.error().ToGeneric()));
              if (res->rows() == 0) return Unexpected(DbErrorRead::NotFound());
              if (res->Text(0, 0) != "finished") return std::optional<Value>();
              if (res->IsNull(0, 1)) {
                return Unexpected(DbErrorReadWithTimeout(DbErrorGeneric::Uncategorized(
                    "t_state of `" + id + "` is finished but its last event is missing")));
              }
              auto event = DecodeEvent(res->Text(0, 1), id, res->Int(0, 2));
              if (!event) return Unexpected(DbErrorReadWithTimeout(event.error()));
              const auto* finished = std::get_if<core::Finished>(&*event);
              if (finished == nullptr) {
                return Unexpected(DbErrorReadWithTimeout(DbErrorGeneric::Uncategorized(
                    "t_state of `" + id + "` is finished but its last event is not Finished")));
              }
              return std::optional<Value>(finished->result);
            });
      });
}

Result<void, DbErrorReadWithTimeout> PostgresConnection::WaitForPublish(
    const ExecutionId& execution_id, Version since, const WaitOptions& wait) {
  const std::string id = execution_id.ToString();
  // A value waiter wakes on a Publish and on the end (no value follows it).
  Registration registration(store_->notifier(), {PublishKey(id), FinishedKey(id)}, std::nullopt,
                            wait.cancel);
  auto done = WaitLoop<bool>(*store_, registration, wait,
                             [&]() -> Result<std::optional<bool>, DbErrorReadWithTimeout> {
                               STELE_ASSIGN_OR_RETURN(bool ready, PublishReady(*store_, id, since));
                               return ready ? std::optional<bool>(true) : std::nullopt;
                             });
  if (!done) return Unexpected(std::move(done).error());
  return {};
}

Result<WatchToken, DbErrorRead> PostgresConnection::WatchFinished(const ExecutionId& execution_id,
                                                                  WatchCallback on_change) {
  const std::string id = execution_id.ToString();
  return AddWatchThenCheck(
      store_->notifier().watches(), id, WatchKind::kFinished, std::move(on_change), [&] {
        return store_->Read<bool, DbErrorRead>([&](PgConn& db) -> Result<bool, DbErrorRead> {
          auto res =
              db.Exec("SELECT state FROM t_state WHERE execution_id = $1", Params().Text(id));
          if (!res) return Unexpected(DbErrorRead(res.error().ToGeneric()));
          if (res->rows() == 0) return Unexpected(DbErrorRead::NotFound());
          return res->Text(0, 0) == "finished";
        });
      });
}

Result<WatchToken, DbErrorRead> PostgresConnection::WatchPublish(const ExecutionId& execution_id,
                                                                 Version since,
                                                                 WatchCallback on_change) {
  const std::string id = execution_id.ToString();
  return AddWatchThenCheck(store_->notifier().watches(), id, WatchKind::kPublish,
                           std::move(on_change), [&] { return PublishReady(*store_, id, since); });
}

void PostgresConnection::Unwatch(WatchToken token) { store_->notifier().watches().Remove(token); }

}  // namespace stele::storage::postgres::internal
