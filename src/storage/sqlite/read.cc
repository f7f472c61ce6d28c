// Point reads of the SQLite backend, each one snapshot on a read connection.
#include <string>
#include <utility>

#include "storage/sqlite/connection.h"
#include "storage/sqlite/event_codec.h"
#include "storage/sqlite/queries.h"
#include "storage/sqlite/row_codec.h"

namespace stele::storage::sqlite::internal {

Result<core::ExecutionEvent, DbErrorRead> SqliteConnection::GetExecutionEvent(
    const ExecutionId& execution_id, Version version) {
  return store_->Read([&](Connection& db) -> Result<core::ExecutionEvent, DbErrorRead> {
    STELE_ASSIGN_OR_RETURN(auto event, LoadEvent(db, execution_id.ToString(), version));
    if (!event) return Unexpected(DbErrorRead::NotFound());
    return std::move(*event);
  });
}

Result<core::ExecutionEvent, DbErrorRead> SqliteConnection::GetLastExecutionEvent(
    const ExecutionId& execution_id) {
  return store_->Read([&](Connection& db) -> Result<core::ExecutionEvent, DbErrorRead> {
    // The state row knows the last version: one PK probe each.
    STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, execution_id.ToString()));
    if (!state) return Unexpected(DbErrorRead::NotFound());
    STELE_ASSIGN_OR_RETURN(auto event,
                           LoadEvent(db, execution_id.ToString(), state->corresponding_version));
    if (!event) {
      return Unexpected(DbErrorGeneric::Uncategorized(
          "t_state of `" + execution_id.ToString() + "` names version " +
          state->corresponding_version.ToString() + " which is not in the log"));
    }
    return std::move(*event);
  });
}

Result<core::PendingState, DbErrorRead> SqliteConnection::GetPendingState(
    const ExecutionId& execution_id) {
  return store_->Read([&](Connection& db) -> Result<core::PendingState, DbErrorRead> {
    STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, execution_id.ToString()));
    if (!state) return Unexpected(DbErrorRead::NotFound());
    return std::move(state->pending_state);
  });
}

Result<ExecutionLog, DbErrorRead> SqliteConnection::Get(const ExecutionId& execution_id) {
  return store_->Read([&](Connection& db) -> Result<ExecutionLog, DbErrorRead> {
    STELE_ASSIGN_OR_RETURN(auto log, LoadLog(db, execution_id));
    if (!log) return Unexpected(DbErrorRead::NotFound());
    return std::move(*log);
  });
}

Result<std::vector<ExpiredTimer>, DbErrorGeneric> SqliteConnection::GetExpiredTimers(DateTime at) {
  return store_->Read([&](Connection& db) -> Result<std::vector<ExpiredTimer>, DbErrorGeneric> {
    std::vector<ExpiredTimer> expired;
    {
      // Partial index idx_t_state_expired_locks: only locked rows.
      static const std::string kLocks = "SELECT " + std::string(kStateColumns) +
                                        " FROM t_state WHERE state = 'locked' AND "
                                        "pending_expires_finished <= ? "
                                        "ORDER BY pending_expires_finished, execution_id";
      STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(kLocks));
      stmt.BindInt64(1, TimeColumn(at));
      while (true) {
        STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
        if (!row) break;
        STELE_ASSIGN_OR_RETURN(ExecutionState state, DecodeStateRow(stmt));
        STELE_ASSIGN_OR_RETURN(auto id,
                               ParseColumn<ExecutionId>(state.execution_id, "execution_id"));
        const auto& locked = std::get<core::PendingStateLocked>(state.pending_state.value);
        if (!state.retry_exp_backoff) {
          return Unexpected(DbErrorGeneric::Uncategorized(
              "corrupt t_state row of `" + state.execution_id + "`: locked without retry config"));
        }
        expired.emplace_back(ExpiredLock{std::move(id), *state.last_lock_version,
                                         state.NextVersion(), state.intermittent_event_count,
                                         state.max_retries, *state.retry_exp_backoff,
                                         locked.locked_by});
      }
    }
    // t_delay holds live timers only; idx_t_delay_expires_at.
    STELE_ASSIGN_OR_RETURN(Statement stmt,
                           db.Prepare("SELECT execution_id, join_set_id, delay_id, expires_at "
                                      "FROM t_delay WHERE expires_at <= ? ORDER BY expires_at"));
    stmt.BindInt64(1, TimeColumn(at));
    while (true) {
      STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      STELE_ASSIGN_OR_RETURN(auto id,
                             ParseColumn<ExecutionId>(stmt.Text(0), "t_delay.execution_id"));
      STELE_ASSIGN_OR_RETURN(auto join_set_id,
                             ParseColumn<core::JoinSetId>(stmt.Text(1), "t_delay.join_set_id"));
      STELE_ASSIGN_OR_RETURN(auto delay_id,
                             ParseColumn<core::DelayId>(stmt.Text(2), "t_delay.delay_id"));
      expired.emplace_back(ExpiredDelay{std::move(id), std::move(join_set_id), std::move(delay_id),
                                        TimeFromColumn(stmt.Int64(3))});
    }
    // t_deadline holds the armed deadlines of unfinished executions only.
    STELE_ASSIGN_OR_RETURN(Statement deadlines,
                           db.Prepare("SELECT execution_id, deadline FROM t_deadline "
                                      "WHERE deadline <= ? ORDER BY deadline, execution_id"));
    deadlines.BindInt64(1, TimeColumn(at));
    while (true) {
      STELE_ASSIGN_OR_RETURN(bool row, deadlines.Step());
      if (!row) break;
      STELE_ASSIGN_OR_RETURN(
          auto id, ParseColumn<ExecutionId>(deadlines.Text(0), "t_deadline.execution_id"));
      expired.emplace_back(ExpiredDeadline{std::move(id), TimeFromColumn(deadlines.Int64(1))});
    }
    return expired;
  });
}

Result<std::vector<core::ExecutionEvent>, DbErrorRead> SqliteConnection::ListExecutionEvents(
    const ExecutionId& execution_id, Version since, Version::Type max_length,
    bool include_backtrace_id) {
  return store_->Read(
      [&](Connection& db) -> Result<std::vector<core::ExecutionEvent>, DbErrorRead> {
        const std::string id = execution_id.ToString();
        STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, id));
        if (!state) return Unexpected(DbErrorRead::NotFound());
        // The backtrace covering a version is named by the version its range
        // starts at; the first one recorded wins.
        STELE_ASSIGN_OR_RETURN(
            Statement stmt,
            db.Prepare("SELECT l.version, l.created_at, l.json_value, "
                       "CASE WHEN ?4 THEN (SELECT b.version_min_including FROM t_backtrace b "
                       "WHERE b.exec_key = l.exec_key AND b.version_min_including <= "
                       "l.version AND b.version_max_excluding > l.version ORDER BY b.rowid "
                       "LIMIT 1) END "
                       "FROM t_execution_log l WHERE l.exec_key = (SELECT exec_key FROM t_state "
                       "WHERE execution_id = ?1) AND l.version >= ?2 "
                       "ORDER BY l.version LIMIT ?3"));
        stmt.BindText(1, id);
        stmt.BindInt64(2, since.value());
        stmt.BindInt64(3, max_length);
        stmt.BindInt64(4, include_backtrace_id ? 1 : 0);
        std::vector<core::ExecutionEvent> events;
        while (true) {
          STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
          if (!row) return events;
          const int64_t version = stmt.Int64(0);
          STELE_ASSIGN_OR_RETURN(std::string json, EventJsonColumn(stmt, 2, id, version));
          STELE_ASSIGN_OR_RETURN(auto event, DecodeEvent(json, id, version));
          std::optional<Version> backtrace_id;
          if (auto min = stmt.OptionalInt64(3))
            backtrace_id = Version(static_cast<Version::Type>(*min));
          events.push_back(core::ExecutionEvent{TimeFromColumn(stmt.Int64(1)), std::move(event),
                                                backtrace_id,
                                                Version(static_cast<Version::Type>(version))});
        }
      });
}

Result<core::BacktraceInfo, DbErrorRead> SqliteConnection::GetBacktrace(
    const ExecutionId& execution_id, BacktraceFilter filter) {
  return store_->Read([&](Connection& db) -> Result<core::BacktraceInfo, DbErrorRead> {
    // Ties (same range start) go to the backtrace recorded first.
    // Since schema V9 the texts are shared rows of t_backtrace_text.
    constexpr std::string_view kSelect =
        "SELECT t.component_id, b.version_min_including, b.version_max_excluding, "
        "t.wasm_backtrace FROM t_backtrace b JOIN t_backtrace_text t ON t.id = b.text_id "
        "WHERE b.exec_key = (SELECT exec_key FROM t_state WHERE execution_id = ?1) ";
    std::string_view order;
    switch (filter.kind) {
      case BacktraceFilter::Kind::kFirst:
        order = "ORDER BY b.version_min_including, b.rowid LIMIT 1";
        break;
      case BacktraceFilter::Kind::kLast:
        order = "ORDER BY b.version_min_including DESC, b.rowid LIMIT 1";
        break;
      case BacktraceFilter::Kind::kSpecific:
        order =
            "AND b.version_min_including <= ?2 AND b.version_max_excluding > ?2 "
            "ORDER BY b.rowid LIMIT 1";
        break;
    }
    STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(std::string(kSelect) + std::string(order)));
    stmt.BindText(1, execution_id.ToString());
    if (filter.kind == BacktraceFilter::Kind::kSpecific) {
      stmt.BindInt64(2, filter.version.value());
    }
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return Unexpected(DbErrorRead::NotFound());
    STELE_ASSIGN_OR_RETURN(auto component,
                           DecodeJson<core::ComponentId>(stmt.Text(0), "t_backtrace.component_id"));
    STELE_ASSIGN_OR_RETURN(auto backtrace, DecodeJson<core::WasmBacktrace>(
                                               stmt.Text(3), "t_backtrace.wasm_backtrace"));
    const int64_t min = stmt.Int64(1);
    const int64_t max = stmt.Int64(2);
    if (min < 0 || max < 0 || min > int64_t{UINT32_MAX} || max > int64_t{UINT32_MAX}) {
      return Unexpected(DbErrorGeneric::Uncategorized("corrupt t_backtrace row of `" +
                                                      execution_id.ToString() + "`"));
    }
    return core::BacktraceInfo{execution_id, std::move(component),
                               Version(static_cast<Version::Type>(min)),
                               Version(static_cast<Version::Type>(max)), std::move(backtrace)};
  });
}

}  // namespace stele::storage::sqlite::internal
