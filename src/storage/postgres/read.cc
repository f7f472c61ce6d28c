// Reads of the PostgreSQL backend: one statement each where possible,
// otherwise one read-only REPEATABLE READ snapshot.
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "base/log.h"
#include "core/backtrace.h"
#include "core/list_key.h"
#include "storage/postgres/connection.h"
#include "storage/postgres/journal.h"

namespace stele::storage::postgres::internal {

namespace {

Result<PgResult, DbErrorGeneric> Q(PgConn& db, const std::string& sql,
                                   const Params& params = Params()) {
  auto res = db.Exec(sql, params);
  if (!res) return Unexpected(res.error().ToGeneric());
  return std::move(*res);
}

const std::string kExists = "SELECT 1 FROM t_state WHERE execution_id = $1";

template <class T>
bool IsNewer(const core::Pagination<T>& page) {
  return page.direction == core::Pagination<T>::Direction::kNewerThan;
}

}  // namespace

Result<core::ExecutionEvent, DbErrorRead> PostgresConnection::GetExecutionEvent(
    const ExecutionId& execution_id, Version version) {
  return store_->Read<core::ExecutionEvent, DbErrorRead>(
      [&](PgConn& db) -> Result<core::ExecutionEvent, DbErrorRead> {
        STELE_ASSIGN_OR_RETURN(auto event, LoadEvent(db, execution_id.ToString(), version));
        if (!event) return Unexpected(DbErrorRead::NotFound());
        return std::move(*event);
      });
}

Result<core::ExecutionEvent, DbErrorRead> PostgresConnection::GetLastExecutionEvent(
    const ExecutionId& execution_id) {
  return store_->Read<core::ExecutionEvent, DbErrorRead>(
      [&](PgConn& db) -> Result<core::ExecutionEvent, DbErrorRead> {
        const std::string id = execution_id.ToString();
        // One statement: the state row names the last version.
        STELE_ASSIGN_OR_RETURN(
            PgResult res, Q(db,
                            "SELECT l.version, l.created_at, l.json_value::text FROM t_state s "
                            "JOIN t_execution_log l ON l.execution_id = $1 AND "
                            "l.version = s.corresponding_version WHERE s.execution_id = $1",
                            Params().Text(id)));
        if (res.rows() == 0) return Unexpected(DbErrorRead::NotFound());
        STELE_ASSIGN_OR_RETURN(auto event, DecodeEventRow(res, 0, id));
        return event;
      });
}

Result<core::PendingState, DbErrorRead> PostgresConnection::GetPendingState(
    const ExecutionId& execution_id) {
  return store_->Read<core::PendingState, DbErrorRead>(
      [&](PgConn& db) -> Result<core::PendingState, DbErrorRead> {
        STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, execution_id.ToString()));
        if (!state) return Unexpected(DbErrorRead::NotFound());
        return std::move(state->pending_state);
      });
}

Result<ExecutionLog, DbErrorRead> PostgresConnection::Get(const ExecutionId& execution_id) {
  return store_->Read<ExecutionLog, DbErrorRead>(
      [&](PgConn& db) -> Result<ExecutionLog, DbErrorRead> {
        STELE_ASSIGN_OR_RETURN(auto log, LoadLog(db, execution_id));
        if (!log) return Unexpected(DbErrorRead::NotFound());
        return std::move(*log);
      });
}

Result<std::vector<ExpiredTimer>, DbErrorGeneric> PostgresConnection::GetExpiredTimers(
    DateTime at) {
  return store_->Read<std::vector<ExpiredTimer>,
                      DbErrorGeneric>([&](PgConn& db)
                                          -> Result<std::vector<ExpiredTimer>, DbErrorGeneric> {
    std::vector<ExpiredTimer> expired;
    static const std::string kLocks = "SELECT " + std::string(kStateColumns) +
                                      " FROM t_state WHERE state = 'locked' AND "
                                      "pending_expires_finished <= $1 "
                                      "ORDER BY pending_expires_finished, execution_id";
    static const std::string kDelays =
        "SELECT execution_id, join_set_id, delay_id, expires_at "
        "FROM t_delay WHERE expires_at <= $1 ORDER BY expires_at";
    // Armed deadlines of unfinished executions only.
    static const std::string kDeadlines =
        "SELECT execution_id, deadline FROM t_deadline WHERE deadline <= $1 "
        "ORDER BY deadline, execution_id";
    // All in one snapshot, one round trip.
    STELE_ASSIGN_OR_RETURN(auto results,
                           SnapshotRead(db, {Statement{kLocks, Params().Int(TimeColumn(at))},
                                             Statement{kDelays, Params().Int(TimeColumn(at))},
                                             Statement{kDeadlines, Params().Int(TimeColumn(at))}}));
    const PgResult& locks = results[0];
    const PgResult& delays = results[1];
    const PgResult& deadlines = results[2];
    for (int row = 0; row < locks.rows(); ++row) {
      STELE_ASSIGN_OR_RETURN(ExecutionState state, DecodeStateRow(locks, row));
      STELE_ASSIGN_OR_RETURN(auto id, ParseColumn<ExecutionId>(state.execution_id, "execution_id"));
      const auto& locked = std::get<core::PendingStateLocked>(state.pending_state.value);
      if (!state.retry_exp_backoff) {
        return Unexpected(DbErrorGeneric::Uncategorized(
            "corrupt t_state row of `" + state.execution_id + "`: locked without retry config"));
      }
      expired.emplace_back(ExpiredLock{std::move(id), *state.last_lock_version, state.NextVersion(),
                                       state.intermittent_event_count, state.max_retries,
                                       *state.retry_exp_backoff, locked.locked_by});
    }
    for (int row = 0; row < delays.rows(); ++row) {
      STELE_ASSIGN_OR_RETURN(auto id,
                             ParseColumn<ExecutionId>(delays.Text(row, 0), "t_delay.execution_id"));
      STELE_ASSIGN_OR_RETURN(auto join_set_id, ParseColumn<core::JoinSetId>(delays.Text(row, 1),
                                                                            "t_delay.join_set_id"));
      STELE_ASSIGN_OR_RETURN(auto delay_id,
                             ParseColumn<core::DelayId>(delays.Text(row, 2), "t_delay.delay_id"));
      expired.emplace_back(ExpiredDelay{std::move(id), std::move(join_set_id), std::move(delay_id),
                                        TimeFromColumn(delays.Int(row, 3))});
    }
    for (int row = 0; row < deadlines.rows(); ++row) {
      STELE_ASSIGN_OR_RETURN(
          auto id, ParseColumn<ExecutionId>(deadlines.Text(row, 0), "t_deadline.execution_id"));
      expired.emplace_back(ExpiredDeadline{std::move(id), TimeFromColumn(deadlines.Int(row, 1))});
    }
    return expired;
  });
}

Result<std::vector<core::ExecutionEvent>, DbErrorRead> PostgresConnection::ListExecutionEvents(
    const ExecutionId& execution_id, Version since, Version::Type max_length,
    bool include_backtrace_id) {
  return store_->Read<std::vector<core::ExecutionEvent>, DbErrorRead>(
      [&](PgConn& db) -> Result<std::vector<core::ExecutionEvent>, DbErrorRead> {
        const std::string id = execution_id.ToString();
        // The backtrace covering a version is named by the version its
        // range starts at; the first one recorded wins.
        static const std::string kEvents =
            "SELECT l.version, l.created_at, l.json_value::text, "
            "CASE WHEN $4 THEN (SELECT b.version_min_including FROM t_backtrace b "
            "WHERE b.execution_id = l.execution_id AND b.version_min_including <= "
            "l.version AND b.version_max_excluding > l.version ORDER BY b.seq "
            "LIMIT 1) END "
            "FROM t_execution_log l WHERE l.execution_id = $1 AND l.version >= $2 "
            "ORDER BY l.version LIMIT $3";
        // The existence check and the page in one snapshot, one round trip.
        STELE_ASSIGN_OR_RETURN(
            auto results, SnapshotRead(db, {Statement{kExists, Params().Text(id)},
                                            Statement{kEvents, Params()
                                                                   .Text(id)
                                                                   .Int(since.value())
                                                                   .Int(max_length)
                                                                   .Bool(include_backtrace_id)}}));
        if (results[0].rows() == 0) return Unexpected(DbErrorRead::NotFound());
        const PgResult& res = results[1];
        std::vector<core::ExecutionEvent> events;
        for (int row = 0; row < res.rows(); ++row) {
          STELE_ASSIGN_OR_RETURN(auto event, DecodeEventRow(res, row, id));
          if (auto min = res.OptInt(row, 3)) {
            event.backtrace_id = Version(static_cast<Version::Type>(*min));
          }
          events.push_back(std::move(event));
        }
        return events;
      });
}

Result<core::BacktraceInfo, DbErrorRead> PostgresConnection::GetBacktrace(
    const ExecutionId& execution_id, BacktraceFilter filter) {
  return store_->Read<core::BacktraceInfo, DbErrorRead>(
      [&](PgConn& db) -> Result<core::BacktraceInfo, DbErrorRead> {
        // Ties (same range start) go to the backtrace recorded first.
        const char* kColumns =
            "SELECT component_id::text, version_min_including, version_max_excluding, "
            "wasm_backtrace::text FROM t_backtrace WHERE execution_id = $1 ";
        std::string sql = kColumns;
        Params params;
        params.Text(execution_id.ToString());
        switch (filter.kind) {
          case BacktraceFilter::Kind::kFirst:
            sql += "ORDER BY version_min_including, seq LIMIT 1";
            break;
          case BacktraceFilter::Kind::kLast:
            sql += "ORDER BY version_min_including DESC, seq LIMIT 1";
            break;
          case BacktraceFilter::Kind::kSpecific:
            sql +=
                "AND version_min_including <= $2 AND version_max_excluding > $2 "
                "ORDER BY seq LIMIT 1";
            params.Int(filter.version.value());
            break;
        }
        STELE_ASSIGN_OR_RETURN(PgResult res, Q(db, sql, params));
        if (res.rows() == 0) return Unexpected(DbErrorRead::NotFound());
        STELE_ASSIGN_OR_RETURN(auto component, DecodeJson<core::ComponentId>(
                                                   res.Text(0, 0), "t_backtrace.component_id"));
        STELE_ASSIGN_OR_RETURN(auto backtrace, DecodeJson<core::WasmBacktrace>(
                                                   res.Text(0, 3), "t_backtrace.wasm_backtrace"));
        const int64_t min = res.Int(0, 1);
        const int64_t max = res.Int(0, 2);
        if (min < 0 || max < 0 || min > int64_t{UINT32_MAX} || max > int64_t{UINT32_MAX}) {
          return Unexpected(DbErrorGeneric::Uncategorized("corrupt t_backtrace row of `" +
                                                          execution_id.ToString() + "`"));
        }
        return core::BacktraceInfo{execution_id, std::move(component),
                                   Version(static_cast<Version::Type>(min)),
                                   Version(static_cast<Version::Type>(max)), std::move(backtrace)};
      });
}

Result<std::vector<ExecutionWithState>, DbErrorGeneric> PostgresConnection::ListExecutions(
    const std::optional<core::FunctionFqn>& ffqn, bool top_level_only,
    const core::ExecutionListPagination& pagination) {
  return store_->Read<std::vector<ExecutionWithState>, DbErrorGeneric>(
      [&](PgConn& db) -> Result<std::vector<ExecutionWithState>, DbErrorGeneric> {
        const bool by_created_at =
            std::holds_alternative<core::Pagination<std::optional<DateTime>>>(pagination);
        bool newer = false;
        bool has_cursor = false;
        std::string rel;
        uint16_t length = 0;
        std::visit(
            [&](const auto& page) {
              newer = IsNewer(page);
              has_cursor = page.cursor.has_value();
              rel = std::string(page.Rel());
              length = page.length;
            },
            pagination);
        std::string sql = "SELECT " + std::string(kStateColumns) + " FROM t_state";
        std::vector<std::string> where;
        Params params;
        int n = 0;
        if (ffqn) {
          where.push_back("ffqn = $" + std::to_string(++n));
          params.Text(ffqn->ToString());
        }
        if (top_level_only) where.push_back("is_top_level");
        // By id: in list_key order (core::ListKey: `_2` before
        // `_10`), served by idx_t_state_list_key / idx_t_state_ffqn_list_key.
        const char* key = by_created_at ? "created_at" : "list_key";
        if (has_cursor) {
          where.push_back(std::string(key) + " " + rel + " $" + std::to_string(++n));
          if (by_created_at) {
            params.Int(TimeColumn(*std::get<0>(pagination).cursor));
          } else {
            params.Text(core::ListKey(*std::get<1>(pagination).cursor));
          }
        }
        for (size_t i = 0; i < where.size(); ++i) sql += (i == 0 ? " WHERE " : " AND ") + where[i];
        // execution_id and list_key have collation "C": they compare bytewise.
        const char* direction = newer ? " ASC" : " DESC";
        if (by_created_at) {
          sql += std::string(" ORDER BY created_at") + direction + ", execution_id" + direction;
        } else {
          sql += std::string(" ORDER BY list_key") + direction;
        }
        sql += " LIMIT $" + std::to_string(++n);
        params.Int(length);
        STELE_ASSIGN_OR_RETURN(PgResult res, Q(db, sql, params));
        std::vector<ExecutionWithState> rows;
        for (int row = 0; row < res.rows(); ++row) {
          auto decoded = [&]() -> Result<ExecutionWithState, DbErrorGeneric> {
            STELE_ASSIGN_OR_RETURN(ExecutionState state, DecodeStateRow(res, row));
            STELE_ASSIGN_OR_RETURN(
                auto id, ParseColumn<ExecutionId>(state.execution_id, "t_state.execution_id"));
            STELE_ASSIGN_OR_RETURN(auto function,
                                   ParseColumn<core::FunctionFqn>(state.ffqn, "t_state.ffqn"));
            return ExecutionWithState{
                std::move(id),    std::move(function),      std::move(state.pending_state),
                state.created_at, state.first_scheduled_at, state.digest};
          }();
          if (decoded) {
            rows.push_back(std::move(*decoded));
          } else {
            STELE_LOG(kWarn, "skipping t_state row in a list: " << decoded.error().reason());
          }
        }
        if (newer) std::reverse(rows.begin(), rows.end());
        return rows;
      });
}

Result<ExecutionCounts, DbErrorGeneric> PostgresConnection::CountExecutionsByState() {
  return store_->Read<ExecutionCounts, DbErrorGeneric>(
      [&](PgConn& db) -> Result<ExecutionCounts, DbErrorGeneric> {
        STELE_ASSIGN_OR_RETURN(
            PgResult res,
            Q(db,
              "SELECT CASE WHEN paused AND state <> 'finished' THEN 'paused' ELSE state END AS s, "
              "COUNT(*) FROM t_state GROUP BY s",
              Params()));
        ExecutionCounts counts;
        for (int row = 0; row < res.rows(); ++row) {
          std::string_view state = res.Text(row, 0);
          auto count = static_cast<uint64_t>(res.Int(row, 1));
          if (state == "paused") counts.paused += count;
          if (state == "pending_at") counts.pending_at += count;
          if (state == "locked") counts.locked += count;
          if (state == "blocked_by_join_set") counts.blocked_by_join_set += count;
          if (state == "finished") counts.finished += count;
        }
        return counts;
      });
}

Result<PendingCounts, DbErrorGeneric> PostgresConnection::CountPendingByFfqns(
    const std::vector<core::FunctionFqn>& ffqns, DateTime now) {
  if (ffqns.empty()) return PendingCounts{};
  ArrayParam names;
  for (const auto& ffqn : ffqns) names.Text(ffqn.ToString());
  return store_->Read<PendingCounts, DbErrorGeneric>(
      [&](PgConn& db) -> Result<PendingCounts, DbErrorGeneric> {
        // One statement, one snapshot; the pending half is served by the
        // partial index on (ffqn, pending_expires_finished), the locked
        // half by the partial index of locked rows.
        static const std::string kSql =
            "SELECT COUNT(*) FILTER (WHERE pending_expires_finished <= $2), "
            "COUNT(*) FILTER (WHERE pending_expires_finished > $2), 0::bigint FROM t_state "
            "WHERE state = 'pending_at' AND paused = false AND ffqn = ANY($1::text[]) "
            "UNION ALL SELECT 0, 0, COUNT(*) FROM t_state "
            "WHERE state = 'locked' AND ffqn = ANY($1::text[])";
        STELE_ASSIGN_OR_RETURN(PgResult res,
                               Q(db, kSql, Params().Text(names.Literal()).Int(TimeColumn(now))));
        PendingCounts counts;
        for (int row = 0; row < res.rows(); ++row) {
          counts.due += static_cast<uint64_t>(res.Int(row, 0));
          counts.scheduled_later += static_cast<uint64_t>(res.Int(row, 1));
          counts.locked += static_cast<uint64_t>(res.Int(row, 2));
        }
        return counts;
      });
}

Result<std::vector<DigestCount>, DbErrorGeneric>
PostgresConnection::CountPendingByComponentDigest() {
  return store_->Read<std::vector<DigestCount>, DbErrorGeneric>(
      [&](PgConn& db) -> Result<std::vector<DigestCount>, DbErrorGeneric> {
        // A scan of idx_t_state_pending_digest (pending rows only).
        static const std::string kSql =
            "SELECT component_id_input_digest, COUNT(*) FROM t_state "
            "WHERE state = 'pending_at' AND paused = false GROUP BY component_id_input_digest "
            "ORDER BY component_id_input_digest";
        STELE_ASSIGN_OR_RETURN(PgResult res, Q(db, kSql, Params()));
        std::vector<DigestCount> counts;
        for (int row = 0; row < res.rows(); ++row) {
          STELE_ASSIGN_OR_RETURN(core::InputContentDigest digest,
                                 DecodeDigest(res.Text(row, 0), "(pending count)"));
          counts.push_back(DigestCount{digest, static_cast<uint64_t>(res.Int(row, 1))});
        }
        return counts;
      });
}

Result<std::vector<ResponseWithCursor>, DbErrorRead> PostgresConnection::ListResponses(
    const ExecutionId& execution_id, const core::Pagination<uint32_t>& pagination) {
  return store_->Read<std::vector<ResponseWithCursor>, DbErrorRead>(
      [&](PgConn& db) -> Result<std::vector<ResponseWithCursor>, DbErrorRead> {
        const std::string id = execution_id.ToString();
        const bool newer = IsNewer(pagination);
        std::string sql = std::string(kResponseSelect) + "WHERE r.execution_id = $1 AND r.idx " +
                          std::string(pagination.Rel()) + " $2 ORDER BY r.idx" +
                          (newer ? " ASC" : " DESC") + " LIMIT $3";
        STELE_ASSIGN_OR_RETURN(
            auto results,
            SnapshotRead(
                db,
                {Statement{kExists, Params().Text(id)},
                 Statement{sql, Params().Text(id).Int(pagination.cursor).Int(pagination.length)}}));
        if (results[0].rows() == 0) return Unexpected(DbErrorRead::NotFound());
        const PgResult& res = results[1];
        std::vector<ResponseWithCursor> page;
        for (int row = 0; row < res.rows(); ++row) {
          STELE_ASSIGN_OR_RETURN(auto response, DecodeResponseRow(res, row, id));
          page.push_back(std::move(response));
        }
        if (!newer) std::reverse(page.begin(), page.end());
        return page;
      });
}

}  // namespace stele::storage::postgres::internal
