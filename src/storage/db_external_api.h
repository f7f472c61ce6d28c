// DbExternalApi: reads the API and UI need (lists, events, responses,
// backtraces) plus component upgrade. Implementations serve these from read
// connections so they never queue behind writes.
#pragma once

#include <optional>
#include <vector>

#include "core/pagination.h"
#include "storage/db_connection.h"
#include "storage/retention.h"
#include "storage/schedule.h"

namespace stele::storage {

class DbExternalApi : public DbConnection {
 public:
  // Latest (or first / specific-version-covering) backtrace.
  // Errors: NotFound, Generic.
  virtual Result<core::BacktraceInfo, DbErrorRead> GetBacktrace(const ExecutionId& execution_id,
                                                                BacktraceFilter filter) = 0;

  // Executions matching the filter, sorted descending by the pagination
  // key (created_at, ties by id; or id). Default: the 20 newest.
  virtual Result<std::vector<ExecutionWithState>, DbErrorGeneric> ListExecutions(
      const std::optional<core::FunctionFqn>& ffqn, bool top_level_only,
      const core::ExecutionListPagination& pagination) = 0;

  // Events with version >= since, at most max_length of them.
  // Errors: NotFound (no such execution), Generic.
  virtual Result<std::vector<core::ExecutionEvent>, DbErrorRead> ListExecutionEvents(
      const ExecutionId& execution_id, Version since, Version::Type max_length,
      bool include_backtrace_id) = 0;

  // A page of the execution's responses, each with its cursor (its 0-based
  // arrival index). The page is always in arrival order (ascending
  // cursor), whatever the direction: NewerThan gives the first
  // `pagination.length` responses after the cursor, OlderThan the last
  // `length` before it; `including_cursor` also admits the response at the
  // cursor itself. Errors: NotFound when the execution does not exist (an
  // existing execution without responses gives an empty page), Generic.
  virtual Result<std::vector<ResponseWithCursor>, DbErrorRead> ListResponses(
      const ExecutionId& execution_id, const core::Pagination<uint32_t>& pagination) = 0;

  // How many executions are in each pending state. A consistent snapshot;
  // its cost grows with the store (a scan on SQLite), so callers cache it
  // (the server's /metrics does). Errors: Generic.
  virtual Result<ExecutionCounts, DbErrorGeneric> CountExecutionsByState() = 0;

  // The queue of the functions `ffqns` (children included): executions
  // PendingAt with scheduled_at <= now (`due`) or > now
  // (`scheduled_later`, e.g. retries backing off, a warm run's lease), and
  // Locked ones. Each execution counts once, whatever duplicates `ffqns`
  // holds; an empty `ffqns` counts nothing. A consistent snapshot, served
  // by the pending indexes (it does not scan finished executions).
  // Errors: Generic.
  virtual Result<PendingCounts, DbErrorGeneric> CountPendingByFfqns(
      const std::vector<core::FunctionFqn>& ffqns, DateTime now) = 0;

  // PendingAt executions per component digest (due or not), in digest
  // order, digests without any left out. An execution whose digest no
  // running component serves is never locked: the server compares these
  // with what it serves (docs/api.md, "Upgrade"). Served by the partial
  // index of pending rows by digest. Errors: Generic.
  virtual Result<std::vector<DigestCount>, DbErrorGeneric> CountPendingByComponentDigest() = 0;

  // Moves an unfinished execution from component digest `old_digest` to
  // `new_digest`. Errors: NotFound; NonRetriable when the current digest is
  // not `old_digest` (Conflict) or the execution is finished (IllegalState).
  virtual Result<void, DbErrorWrite> UpgradeExecutionComponent(
      const ExecutionId& execution_id, const core::InputContentDigest& old_digest,
      const core::InputContentDigest& new_digest) = 0;

  // Retention: deletes finished execution trees, one bounded batch per
  // call (docs/storage_contract.md, "Retention").
  //
  // Examines at most `batch_size` top-level executions created at or
  // before `cutoff`, in (created_at, id text) order, starting after
  // `after` (from the oldest when nullopt), and deletes each whose whole
  // tree is collectable: the execution itself and every descendant (the
  // executions whose ids extend its id: children, their children, ...)
  // are Finished at or before `cutoff` (storage/retention.h states the
  // rule once). Nothing still running, and nothing with a running
  // descendant, is deleted. A tree goes with everything stored for it:
  // events, responses (those it received; a top-level execution sends
  // none), live timers, backtraces and states. The batch is one
  // transaction: its trees are deleted whole or not at all. Afterwards the
  // ids are unknown (NotFound everywhere) and may be created again.
  //
  // Returns what was examined and deleted, and the cursor of the next
  // batch (nullopt: the pass is complete). Idempotent: a tree already
  // deleted is simply no longer found; a second pass with the same cutoff
  // deletes nothing more. Errors: ValidationFailed for a batch_size of 0
  // or over kMaxRetentionBatch (nothing written), Generic.
  virtual Result<DeletedExecutions, DbErrorWrite> DeleteFinishedExecutions(
      DateTime cutoff, uint32_t batch_size, const std::optional<RetentionCursor>& after) = 0;
  // --- Cron schedules (docs/storage_contract.md, "Schedules") ------------
  // Creates `definition` at `at` (created_at = updated_at = last_tick =
  // at, not paused). Errors: IllegalState("schedule already exists"),
  // Generic.
  virtual Result<Schedule, DbErrorWrite> CreateSchedule(const ScheduleDefinition& definition,
                                                        DateTime at) = 0;
  // Creates `definition` as CreateSchedule does, or replaces the stored
  // definition of that name, keeping its paused flag, created_at, last_tick
  // and last execution (stele.toml's schedules at every start). Returns the
  // stored schedule. Errors: Generic.
  virtual Result<Schedule, DbErrorWrite> UpsertSchedule(const ScheduleDefinition& definition,
                                                        DateTime at) = 0;
  // Errors: NotFound, Generic.
  virtual Result<Schedule, DbErrorRead> GetSchedule(const std::string& name) = 0;
  // Every schedule, by name (byte order). Errors: Generic.
  virtual Result<std::vector<Schedule>, DbErrorGeneric> ListSchedules() = 0;
  // Pauses or resumes; idempotent. Resuming a paused schedule moves its
  // last_tick to `at` when earlier, so ticks that fell in the pause never
  // fire. Returns the stored schedule. Errors: NotFound, Generic.
  virtual Result<Schedule, DbErrorWrite> SetSchedulePaused(const std::string& name, bool paused,
                                                           DateTime at) = 0;
  // Errors: NotFound, Generic.
  virtual Result<void, DbErrorWrite> DeleteSchedule(const std::string& name) = 0;
  // Advances last_tick to `watermark` when later (never back: several
  // nodes may record the same tick, in any order). With `execution_id`
  // (a tick fired) it becomes the last execution unless a later watermark
  // is stored already. Errors: NotFound, Generic.
  virtual Result<void, DbErrorWrite> RecordScheduleTick(
      const std::string& name, DateTime watermark,
      const std::optional<core::ExecutionId>& execution_id) = 0;
};

// Test-only additions (Obelisk's `DbConnectionTest`).
class DbConnectionTest : public DbExternalApi {
 public:
  // Appends a response without going through a child or delay.
  // Same rules as the real paths: it must answer a request (NotFound
  // otherwise), at most one per child and delay (Conflict), unblocking.
  virtual Result<void, DbErrorWrite> AppendResponse(DateTime created_at,
                                                    const ExecutionId& execution_id,
                                                    const core::JoinSetResponseEvent& response) = 0;
  // The whole journal. Errors: NotFound, Generic.
  virtual Result<ExecutionLog, DbErrorRead> Get(const ExecutionId& execution_id) = 0;
};

}  // namespace stele::storage
