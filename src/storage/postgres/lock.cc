// Locking of the PostgreSQL backend. Locking a batch of pending work is one
// statement — one round trip, whatever the batch size: it selects the due
// rows FOR UPDATE SKIP LOCKED, applies the lock rules, appends the Locked
// events, updates the rows and returns what each LockedExecution needs
// (its Created event, history and responses), all in one implicit
// transaction. LockOne is a Journal append (two round trips) that reads the
// history with the row lock.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <variant>

#include "base/log.h"
#include "storage/postgres/connection.h"
#include "storage/postgres/journal.h"

namespace stele::storage::postgres::internal {

namespace {

// What a LockedExecution is made of, gathered from the rows of one query:
// kind 1 = a Created or history event (version in column 2, its json in
// column 5), kind 2 = a response (its 11 columns from column 6 on, as
// kResponseSelect). Columns 0 (kind) and 1 (execution id) lead every row.
constexpr int kEventJson = 5;
constexpr int kResponseCol0 = 6;

// kinds 1 and 2 for the executions of CTE/table `ok` (column execution_id).
const std::string kHistoryOfOk =
    "SELECT 1 AS k, l.execution_id::text AS id, l.version AS a, NULL::bigint AS b, "
    "NULL::bigint AS c, l.json_value::text AS j, NULL::bigint AS r0, NULL::bigint AS r1, "
    "NULL::text AS r2, NULL::text AS r3, NULL::boolean AS r4, NULL::text AS r5, "
    "NULL::bigint AS r6, NULL::text AS r7, NULL::text AS r8, NULL::text AS r9, "
    "NULL::text AS r10 "
    "FROM ok JOIN t_execution_log l ON l.execution_id = ok.execution_id "
    "WHERE l.variant IN ('created', 'history_event') "
    "UNION ALL "
    "SELECT 2, r.execution_id, r.idx, NULL, NULL, NULL, r.idx, r.created_at, r.join_set_id, "
    "r.delay_id, r.delay_success, r.child_execution_id, r.finished_version, "
    "r.child_result::text, f.json_value::text, r.message_id, r.message_body::text "
    "FROM ok JOIN t_join_set_response r ON r.execution_id = ok.execution_id "
    "LEFT JOIN t_execution_log f ON r.child_result IS NULL AND "
    "f.execution_id = r.child_execution_id AND f.version = r.finished_version AND "
    "f.variant = 'finished' ";

// One locking statement. $1 the ffqns (text[]) or the digest (bytea), $2
// due by, $3 batch size, $4 the lock's created_at, $5 executor, $6 run, $7
// the Locked event, $8 lock_expires_at, $9 max_retries, $10 the back-off.
//
// `c` locks the due rows (their ids in the default collation: t_state's
// ids are "C", the other tables' indexes are on the default one, and a join
// in "C" could not use them); `ok` keeps those the lock rules admit (a new lock
// once due by $4, or an extension by the same executor and run: storage/
// pending_state_rules.h) and whose history this statement's snapshot holds
// completely. A row another transaction changed between this statement's
// snapshot and its lock comes back from FOR UPDATE as changed (READ
// COMMITTED re-checks the newest version) while the reads below still see
// the snapshot: its version or response count then differs from the
// snapshot's log, and it is left for the next call instead of being handed
// out with a history missing the latest events.
std::string LockStatement(const char* filter) {
  return std::string(
             "WITH c AS (SELECT execution_id COLLATE \"default\" AS execution_id, "
             "corresponding_version, pending_expires_finished, "
             "intermittent_event_count, executor_id, run_id, response_count FROM t_state "
             "WHERE state = 'pending_at' AND paused = false AND ") +
         filter +
         " AND pending_expires_finished <= $2 "
         "ORDER BY pending_expires_finished, t_state.execution_id LIMIT $3 FOR UPDATE SKIP "
         "LOCKED), "
         "ok AS (SELECT * FROM c WHERE (c.pending_expires_finished <= $4 OR "
         "(c.executor_id = $5 AND c.run_id = $6)) AND c.corresponding_version = "
         "(SELECT MAX(l.version) FROM t_execution_log l WHERE l.execution_id = c.execution_id) "
         "AND c.response_count = (SELECT COUNT(*) FROM t_join_set_response r "
         "WHERE r.execution_id = c.execution_id)), "
         "ins AS (INSERT INTO t_execution_log (execution_id, version, created_at, json_value, "
         "variant) SELECT execution_id, corresponding_version + 1, $4, $7::json, 'locked' "
         "FROM ok), "
         "upd AS (UPDATE t_state s SET state = 'locked', "
         "corresponding_version = ok.corresponding_version + 1, pending_expires_finished = $8, "
         "updated_at = $4, last_lock_version = ok.corresponding_version + 1, executor_id = $5, "
         "run_id = $6, max_retries = $9, retry_exp_backoff = $10::json, join_set_id = NULL, "
         "join_set_closing = NULL, result_kind = NULL FROM ok "
         "WHERE s.execution_id = ok.execution_id) "
         "SELECT 0 AS k, ok.execution_id::text AS id, ok.pending_expires_finished AS a, "
         "ok.corresponding_version AS b, ok.intermittent_event_count AS c, NULL::text AS j, "
         "NULL::bigint AS r0, NULL::bigint AS r1, NULL::text AS r2, NULL::text AS r3, "
         "NULL::boolean AS r4, NULL::text AS r5, NULL::bigint AS r6, NULL::text AS r7, "
         "NULL::text AS r8, NULL::text AS r9, NULL::text AS r10 FROM ok UNION ALL " +
         kHistoryOfOk + "ORDER BY 1, 3, 2";
}

const std::string kLockByFfqns = LockStatement("ffqn = ANY($1::text[])");
const std::string kLockByDigest = LockStatement("component_id_input_digest = $1::bytea");

// The history of one execution (kinds 1 and 2), read with its row lock.
const std::string kHistoryOfOne =
    "WITH ok AS (SELECT $1::text AS execution_id) " + kHistoryOfOk + "ORDER BY 1, 3";

struct Parts {
  std::optional<core::Created> created;
  std::vector<std::pair<core::HistoryEvent, Version>> history;
  std::vector<core::JoinSetResponseEventOuter> responses;
};

Result<void, DbErrorGeneric> Gather(const PgResult& res, int row,
                                    std::map<std::string, Parts>& by_id) {
  const std::string id = res.Str(row, 1);
  Parts& parts = by_id[id];
  if (res.Int(row, 0) == 1) {
    const int64_t version = res.Int(row, 2);
    STELE_ASSIGN_OR_RETURN(auto event, DecodeEvent(res.Text(row, kEventJson), id, version));
    if (auto* c = std::get_if<core::Created>(&event)) {
      parts.created = std::move(*c);
    } else if (auto* h = std::get_if<core::HistoryEventRequest>(&event)) {
      parts.history.emplace_back(std::move(h->event), Version(static_cast<Version::Type>(version)));
    } else {
      return Unexpected(DbErrorGeneric::Uncategorized("corrupt t_execution_log row of `" + id +
                                                      "`: variant does not match the event"));
    }
  } else {
    STELE_ASSIGN_OR_RETURN(auto response, DecodeResponseRow(res, row, id, kResponseCol0));
    parts.responses.push_back(std::move(response.event));
  }
  return {};
}

Result<LockedExecution, DbErrorGeneric> Assemble(const ExecutionId& execution_id, Parts parts,
                                                 const core::Locked& locked, Version next_version,
                                                 uint32_t intermittent_event_count) {
  if (!parts.created) {
    return Unexpected(DbErrorGeneric::Uncategorized("execution log of `" + execution_id.ToString() +
                                                    "` does not start with Created"));
  }
  return LockedExecution{
      .execution_id = execution_id,
      .next_version = next_version,
      .metadata = std::move(parts.created->metadata),
      .locked_event = locked,
      .ffqn = std::move(parts.created->ffqn),
      .params = std::move(parts.created->params),
      .event_history = std::move(parts.history),
      .responses = std::move(parts.responses),
      .parent = std::move(parts.created->parent),
      .intermittent_event_count = intermittent_event_count,
      .policy = std::move(parts.created->policy),
  };
}

Result<std::vector<LockedExecution>, DbErrorGeneric> LockBatch(Store& store, const std::string& sql,
                                                               Params params,
                                                               const core::Locked& locked,
                                                               DateTime created_at) {
  // Every row would be refused (pending_state_rules.h): nothing to do.
  if (locked.lock_expires_at <= created_at) return std::vector<LockedExecution>();
  auto event = EncodeEvent(core::ExecutionRequest(locked));
  auto backoff = EncodeJson(locked.retry_config.retry_exp_backoff);
  if (!event || !backoff) {
    return Unexpected(DbErrorGeneric::Uncategorized(
        "cannot encode the Locked event: " +
        (event ? backoff.error().ToString() : event.error().ToString())));
  }
  std::optional<int64_t> max_retries;
  if (locked.retry_config.max_retries) max_retries = *locked.retry_config.max_retries;
  params.Int(TimeColumn(created_at))
      .Text(locked.executor_id.ToString())
      .Text(locked.run_id.ToString())
      .Text(*event)
      .Int(TimeColumn(locked.lock_expires_at))
      .OptInt(max_retries)
      .Text(*backoff);
  // One statement: an implicit transaction of its own (no BEGIN/COMMIT).
  STELE_ASSIGN_OR_RETURN(
      PgResult res,
      (store.Once<PgResult, DbErrorGeneric>([&](PgConn& db) -> Result<PgResult, DbErrorGeneric> {
        auto done = db.Exec(sql, params);
        if (!done) return Unexpected(done.error().ToGeneric());
        return std::move(*done);
      })));
  struct Head {
    int64_t scheduled_at;
    std::string id;
    Version next_version;
    uint32_t intermittent_event_count;
  };
  std::vector<Head> heads;
  std::map<std::string, Parts> by_id;
  std::map<std::string, std::string> broken;  // id → why it cannot be handed out
  for (int row = 0; row < res.rows(); ++row) {
    if (res.Int(row, 0) == 0) {
      const int64_t version = res.Int(row, 3);
      const int64_t count = res.Int(row, 4);
      heads.push_back(Head{res.Int(row, 2), res.Str(row, 1),
                           Version(static_cast<Version::Type>(version + 2)),
                           static_cast<uint32_t>(count)});
      continue;
    }
    if (auto gathered = Gather(res, row, by_id); !gathered) {
      broken.emplace(res.Str(row, 1), gathered.error().reason());
    }
  }
  // In lock order: oldest first, ties by id bytewise (as t_state's "C"
  // collation orders them).
  std::sort(heads.begin(), heads.end(), [](const Head& a, const Head& b) {
    return std::tie(a.scheduled_at, a.id) < std::tie(b.scheduled_at, b.id);
  });
  std::vector<LockedExecution> result;
  for (Head& head : heads) {
    auto assembled = [&]() -> Result<LockedExecution, DbErrorGeneric> {
      if (auto it = broken.find(head.id); it != broken.end()) {
        return Unexpected(DbErrorGeneric::Uncategorized(it->second));
      }
      STELE_ASSIGN_OR_RETURN(auto id, ParseColumn<ExecutionId>(head.id, "t_state.execution_id"));
      return Assemble(id, std::move(by_id[head.id]), locked, head.next_version,
                      head.intermittent_event_count);
    }();
    if (assembled) {
      result.push_back(std::move(*assembled));
    } else {
      // Locked already (the statement committed): nobody runs it, and its
      // lock expires like any abandoned one.
      STELE_LOG(kError,
                "locked " << head.id << " but cannot read it back: " << assembled.error().reason());
    }
  }
  return result;
}

// A text[] literal.
std::string TextArray(const std::vector<core::FunctionFqn>& ffqns) {
  ArrayParam array;
  for (const auto& ffqn : ffqns) array.Text(ffqn.ToString());
  return array.Literal();
}

}  // namespace

Result<std::vector<LockedExecution>, DbErrorGeneric> PostgresConnection::LockPendingByFfqns(
    uint32_t batch_size, DateTime pending_at_or_sooner, const std::vector<core::FunctionFqn>& ffqns,
    DateTime created_at, const core::ComponentId& component_id, const core::ExecutorId& executor_id,
    DateTime lock_expires_at, const core::RunId& run_id,
    const core::ComponentRetryConfig& retry_config) {
  const core::Locked locked{component_id, executor_id, run_id, lock_expires_at, retry_config};
  return LockBatch(
      *store_, kLockByFfqns,
      Params().Text(TextArray(ffqns)).Int(TimeColumn(pending_at_or_sooner)).Int(batch_size), locked,
      created_at);
}

Result<std::vector<LockedExecution>, DbErrorGeneric> PostgresConnection::LockPendingByComponentId(
    uint32_t batch_size, DateTime pending_at_or_sooner, const core::ComponentId& component_id,
    DateTime created_at, const core::ExecutorId& executor_id, DateTime lock_expires_at,
    const core::RunId& run_id, const core::ComponentRetryConfig& retry_config) {
  const core::Locked locked{component_id, executor_id, run_id, lock_expires_at, retry_config};
  return LockBatch(*store_, kLockByDigest,
                   Params()
                       .Text(DigestParam(component_id.input_digest))
                       .Int(TimeColumn(pending_at_or_sooner))
                       .Int(batch_size),
                   locked, created_at);
}

Result<LockedExecution, DbErrorWrite> PostgresConnection::LockOne(
    DateTime created_at, const core::ComponentId& component_id, const ExecutionId& execution_id,
    const core::RunId& run_id, Version version, const core::ExecutorId& executor_id,
    DateTime lock_expires_at, const core::ComponentRetryConfig& retry_config) {
  const core::Locked locked{component_id, executor_id, run_id, lock_expires_at, retry_config};
  const std::string id = execution_id.ToString();
  return store_->Write<LockedExecution, DbErrorWrite>(
      [&](Tx& tx) -> Result<LockedExecution, DbErrorWrite> {
        Journal journal(tx);
        // The history is read right after the row lock, in its pipeline.
        journal.Prefetch(id);
        const size_t history = tx.Read(kHistoryOfOne, Params().Text(id));
        STELE_ASSIGN_OR_RETURN(
            Version next,
            journal.Append(execution_id, version, AppendRequest{created_at, locked}, created_at));
        STELE_ASSIGN_OR_RETURN(const ExecutionState* state, journal.State(id));
        STELE_ASSIGN_OR_RETURN(const PgResult* res, tx.Get(history));
        std::map<std::string, Parts> by_id;
        for (int row = 0; row < res->rows(); ++row) STELE_TRY(Gather(*res, row, by_id));
        STELE_ASSIGN_OR_RETURN(LockedExecution result,
                               Assemble(execution_id, std::move(by_id[id]), locked, next,
                                        state->intermittent_event_count));
        STELE_TRY(journal.Flush());
        return result;
      });
}

}  // namespace stele::storage::postgres::internal
