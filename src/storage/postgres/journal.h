// The journal inside a write transaction (PostgreSQL): appending events
// and responses, creating executions, keeping t_state equal to the pending
// state prescribed by docs/model.md §4.3. Same checks in the same
// order as storage/sqlite/journal_tx.h; every check comes before anything
// is written.
//
// Round trips (docs/postgres.md has the table): a Journal locks each row
// it touches (SELECT ... FOR UPDATE, so concurrent writers of one execution
// serialise and the version check cannot race) together with what its
// batch will look up — the responses its JoinNexts await — in the
// transaction's first pipeline; several rows (a child and its parent) are
// locked in that same pipeline when Prefetched first. Events are then
// applied to the rows in memory, in the order the memory model applies
// them, and Flush() queues the writes: the new rows and all events as
// multi-row INSERTs (`unnest` of array parameters), one UPDATE per changed
// row with its final columns. They go out with COMMIT in the second
// pipeline; the (execution_id, version) key still fences every insert.
//
// Also the shared reads (state, events, responses, whole log), which run
// on a connection outside any Journal.
//
// Threading: on the thread holding the connection.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "core/execution_event.h"
#include "storage/db_errors.h"
#include "storage/postgres/codec.h"
#include "storage/postgres/store.h"
#include "storage/requests.h"

namespace stele::storage::postgres::internal {

// nullopt when the execution does not exist.
Result<std::optional<ExecutionState>, DbErrorGeneric> LoadState(PgConn& db, std::string_view id);
Result<std::optional<core::ExecutionEvent>, DbErrorGeneric> LoadEvent(PgConn& db,
                                                                      std::string_view id,
                                                                      Version version);
Result<std::vector<ResponseWithCursor>, DbErrorGeneric> LoadResponses(PgConn& db,
                                                                      std::string_view id,
                                                                      uint32_t from_cursor);
Result<std::optional<ExecutionLog>, DbErrorGeneric> LoadLog(PgConn& db,
                                                            const ExecutionId& execution_id);
Result<core::ExecutionEvent, DbErrorGeneric> DecodeEventRow(const PgResult& res, int row,
                                                            std::string_view id);

// The statements behind the reads above, for pipelines.
Statement SelectStateStatement(std::string_view id);
Statement SelectEventsStatement(std::string_view id);
Statement SelectResponsesStatement(std::string_view id, uint32_t from_cursor);
Result<std::optional<ExecutionState>, DbErrorGeneric> DecodeOptionalState(const PgResult& res);

class Journal {
 public:
  explicit Journal(Tx& tx) : tx_(tx) {}
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Queues the lock and read of `id`'s row — and, for `batch`, of the
  // responses its JoinNexts will look for — to go out with the next round
  // trip. A row loaded already is not read again.
  void Prefetch(const std::string& id, const std::vector<AppendRequest>* batch = nullptr);

  Result<Version, DbErrorWrite> Append(const ExecutionId& execution_id, Version version,
                                       const AppendRequest& req, DateTime current_time);
  Result<Version, DbErrorWrite> AppendBatch(const ExecutionId& execution_id, Version version,
                                            const std::vector<AppendRequest>& batch,
                                            DateTime current_time);
  // Creates the execution. With `lock`, also locks it as LockOne(
  // current_time, ..., Version(1), ...) would, when the lock rules allow
  // (then without the "became pending" notices: nobody need be woken for
  // it); returns whether it did. An existing id fails the transaction with
  // IllegalState when it commits.
  Result<bool, DbErrorWrite> Create(const CreateRequest& req, DateTime current_time,
                                    const core::Locked* lock = nullptr);
  // Appends a response to `execution_id` and may unblock it. A JoinNext
  // appended later in this Journal sees it (AppendOutcomesAndBatch: a
  // child's result, then its parent's next step). It must answer a request
  // (request_rules.h): NotFound for a delay without its live timer, a child
  // that does not exist or an id naming another execution or join set;
  // Conflict for a second response of a delay (here) or of a child (the
  // unique index, at commit). REQUIRES: no event of `execution_id` was
  // appended in this Journal before it.
  Result<void, DbErrorWrite> InsertResponse(const ExecutionId& execution_id,
                                            const core::JoinSetResponseEventOuter& response,
                                            DateTime current_time);
  // The message `message_id` delivered to `execution_id` before (its join
  // set and body), if any. Call after the row is locked (State).
  Result<std::optional<core::JoinSetResponseEvent>, DbErrorWrite> FindMessage(
      const ExecutionId& execution_id, const std::string& message_id);
  // Queues every write of the transaction. Call once, last.
  Result<void, DbErrorWrite> Flush();

  // The locked row of `id`; NotFound when it does not exist.
  Result<const ExecutionState*, DbErrorWrite> State(const std::string& id);

  // What the database holds about a delay: its first response's `ok`, if
  // any, and whether its live timer (execution, join set, delay) is there.
  struct DelayStatus {
    std::optional<bool> first_response;
    bool live = false;
  };
  // Queues the lookup of Delay() to go out with the next round trip.
  void PrefetchDelay(const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
                     const core::DelayId& delay_id);
  Result<DelayStatus, DbErrorWrite> Delay(const ExecutionId& execution_id,
                                          const core::JoinSetId& join_set_id,
                                          const core::DelayId& delay_id);

 private:
  // The responses a join set's next JoinNexts await, looked up when the
  // row is locked.
  struct Lookahead {
    std::optional<size_t> ticket;  // rows: created_at of the awaited responses, in order
    size_t start = 0;              // the first row is what JoinNext number `start` awaits
    size_t limit = 0;              // rows asked for
    size_t used = 0;               // JoinNexts of this join set applied so far
    // Responses of the join set this Journal had inserted when the lookup
    // was queued: the lookup sees those, not the ones inserted after.
    size_t inserted_before = 0;
  };
  struct Row {
    ExecutionState state;
    bool created = false;                        // inserted by this transaction
    bool dirty = false;                          // to be written back
    std::map<std::string, Lookahead> lookahead;  // by join set id
    // created_at of the responses inserted by this Journal, in cursor
    // order, by join set id (not in the database until Flush's pipeline).
    std::map<std::string, std::vector<DateTime>> inserted_responses;
  };
  struct FinishedHere {
    std::string id;
    Version version;
    const core::SupportedFunctionReturnValue* result;
  };

  Result<Row*, DbErrorWrite> Load(const std::string& id);
  Lookahead QueueLookahead(const std::string& id, const std::string& join_set, size_t offset,
                           size_t limit);
  Result<std::optional<DateTime>, DbErrorWrite> AwaitedResponse(Row& row,
                                                                const core::JoinSetId& join_set);
  Result<Version, DbErrorWrite> Apply(Row& row, Version version, const AppendRequest& req,
                                      DateTime current_time);
  void AddEvent(std::string_view id, Version version, DateTime created_at, std::string json,
                std::string_view variant, const std::optional<std::string>& join_set);
  void NotifyPending(const ExecutionState& state, DateTime scheduled_at, DateTime current_time);

  Tx& tx_;
  std::map<std::string, Row> rows_;        // loaded or created; stable addresses
  std::map<std::string, size_t> loading_;  // id → ticket of its row lock
  std::map<std::string, size_t> delays_;   // delay id → ticket of its DelayStatus
  // Lookaheads queued with a row lock, moved into the Row when it loads.
  std::map<std::string, std::map<std::string, Lookahead>> loading_lookaheads_;
  std::vector<std::string> created_order_;  // new rows, in creation order
  std::vector<FinishedHere> finished_here_;
  // Columns of the events to insert.
  ArrayParam event_ids_, event_versions_, event_created_, event_json_, event_variants_,
      event_join_sets_;
  std::optional<Version> first_event_version_;
  bool flushed_ = false;
};

// Notice keys (notifier.h).
std::string PendingFfqnKey(std::string_view ffqn);
std::string PendingDigestKey(const core::InputContentDigest& digest);
std::string ResponseKey(std::string_view execution_id);
std::string FinishedKey(std::string_view execution_id);
std::string PublishKey(std::string_view execution_id);

}  // namespace stele::storage::postgres::internal
