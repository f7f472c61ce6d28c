// Request and response records of the storage contract
// (docs/storage_contract.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/time.h"
#include "core/component_id.h"
#include "core/execution_event.h"
#include "core/function_fqn.h"
#include "core/ids.h"
#include "core/pending_state.h"
#include "core/version.h"

namespace stele::storage {

using core::ExecutionId;
using core::Version;

struct AppendRequest {
  DateTime created_at;
  core::ExecutionRequest event;  // never core::Created
  friend bool operator==(const AppendRequest&, const AppendRequest&) = default;
};

struct CreateRequest {
  DateTime created_at;
  ExecutionId execution_id;
  core::FunctionFqn ffqn;
  core::Params params;
  std::optional<std::pair<ExecutionId, core::JoinSetId>> parent;
  DateTime scheduled_at;
  core::ComponentId component_id;
  core::ExecutionMetadata metadata;
  std::optional<ExecutionId> scheduled_by;
  // Deadline and retry override (core::ExecutionPolicy); the deadline is
  // also kept queryable (GetExpiredTimers' ExpiredDeadline).
  core::ExecutionPolicy policy = {};

  core::Created ToCreatedEvent() const;
  friend bool operator==(const CreateRequest&, const CreateRequest&) = default;
};

// What an executor receives for each execution it locked. `event_history`
// holds only HistoryEvents (with their versions); `responses` all responses
// in arrival order.
struct LockedExecution {
  ExecutionId execution_id;
  Version next_version;
  core::ExecutionMetadata metadata;
  core::Locked locked_event;
  core::FunctionFqn ffqn;
  core::Params params;
  std::vector<std::pair<core::HistoryEvent, Version>> event_history;
  std::vector<core::JoinSetResponseEventOuter> responses;
  std::optional<std::pair<ExecutionId, core::JoinSetId>> parent;
  uint32_t intermittent_event_count = 0;
  // Of the Created event.
  core::ExecutionPolicy policy = {};
  friend bool operator==(const LockedExecution&, const LockedExecution&) = default;
};

// A new child to lock in the transaction that creates it
// (DbConnection::AppendBatchCreateAndLockChildren): the Locked event to
// append at Version(1).
struct ChildLock {
  ExecutionId child_id;
  core::Locked locked;
  friend bool operator==(const ChildLock&, const ChildLock&) = default;
};

struct CreatedAndLockedChildren {
  Version next_version;                 // of the parent
  std::vector<LockedExecution> locked;  // in the order of the ChildLocks
  friend bool operator==(const CreatedAndLockedChildren&,
                         const CreatedAndLockedChildren&) = default;
};

// The whole journal of one execution (test/oracle view).
struct ExecutionLog {
  ExecutionId execution_id;
  std::vector<core::ExecutionEvent> events;
  std::vector<core::JoinSetResponseEventOuter> responses;
  Version next_version;  // not advanced once Finished
  core::PendingState pending_state;
  friend bool operator==(const ExecutionLog&, const ExecutionLog&) = default;
};

struct AppendEventsToExecution {
  ExecutionId execution_id;
  Version version;
  std::vector<AppendRequest> batch;
};

struct AppendResponseToExecution {
  ExecutionId parent_execution_id;
  DateTime created_at;
  core::JoinSetId join_set_id;
  core::ExecutionIdDerived child_execution_id;
  Version finished_version;
  core::SupportedFunctionReturnValue result;
  friend bool operator==(const AppendResponseToExecution&,
                         const AppendResponseToExecution&) = default;
};

// A child's outcome: its events, ending with Finished, and its response to
// its parent, written together (StepWrite::outcomes).
struct ChildOutcome {
  AppendEventsToExecution child;       // the child's events, ending with Finished
  AppendResponseToExecution response;  // to the parent
  // The parent's response count before it (the index the parent's run
  // consumed it at); nullopt: wherever it lands, as AppendBatchRespondToParent
  // (a finishing workflow's own response, in the transaction that also
  // records its children's outcomes).
  std::optional<uint32_t> response_index = 0;
};

// Everything one step of an execution commits, in one transaction
// (DbExecutor::WriteStep; docs/storage_contract.md, "The step write"):
//  1. `outcomes`, in order: each child's events and its response to its
//     parent. A warm workflow that took its children's results in memory
//     (executor/response_handoff.h) makes them durable with its own next
//     step; an execution ending as a child writes its own end as the last
//     outcome (no response_index), responding to its parent.
//  2. when `batch` is not empty: the writer's events from `version`, the
//     `children` they request created, and those named in `locks` locked
//     for this process (handed straight to its executor).
// The convenience forms (DbExecutor::AppendBatchRespondToParent,
// DbConnection::AppendBatch ...) are writes of this one shape.
struct StepWrite {
  DateTime current_time;     // not persisted; decides wake-ups and lock times
  ExecutionId execution_id;  // the writer
  Version version;           // of batch[0]
  std::vector<AppendRequest> batch;
  std::vector<CreateRequest> children;
  std::vector<ChildLock> locks;
  std::vector<ChildOutcome> outcomes;
};

struct ExpiredLock {
  ExecutionId execution_id;
  Version locked_at_version;  // of the last Locked event: detects progress
  Version next_version;
  // temporary failures + timeouts before this run
  uint32_t intermittent_event_count = 0;
  std::optional<uint32_t> max_retries;
  core::Duration retry_exp_backoff;
  core::LockedBy locked_by;
  friend bool operator==(const ExpiredLock&, const ExpiredLock&) = default;
};
struct ExpiredDelay {
  ExecutionId execution_id;
  core::JoinSetId join_set_id;
  core::DelayId delay_id;
  DateTime expires_at;  // when it is due (the watcher fires it then, not at its next tick)
  friend bool operator==(const ExpiredDelay&, const ExpiredDelay&) = default;
};
// An unfinished execution past its deadline (core::ExecutionPolicy) that
// no terminate request has disarmed yet: appending a HistoryCancelRequest
// with terminate set clears it (docs/storage_contract.md).
struct ExpiredDeadline {
  ExecutionId execution_id;
  DateTime deadline;
  friend bool operator==(const ExpiredDeadline&, const ExpiredDeadline&) = default;
};
using ExpiredTimer = std::variant<ExpiredLock, ExpiredDelay, ExpiredDeadline>;

// Executions per pending state (children included), for monitoring.
// Each unfinished paused execution counts as `paused` only.
struct ExecutionCounts {
  uint64_t pending_at = 0;
  uint64_t locked = 0;
  uint64_t blocked_by_join_set = 0;
  uint64_t finished = 0;
  uint64_t paused = 0;
  friend bool operator==(const ExecutionCounts&, const ExecutionCounts&) = default;
};

// The queue of a set of functions (DbExternalApi::CountPendingByFfqns): its
// pending executions due by a given instant, those scheduled after it, and
// those locked (being run) now.
struct PendingCounts {
  uint64_t due = 0;
  uint64_t scheduled_later = 0;
  uint64_t locked = 0;
  friend bool operator==(const PendingCounts&, const PendingCounts&) = default;
};

// How many executions one component digest holds
// (DbExternalApi::CountPendingByComponentDigest).
struct DigestCount {
  core::InputContentDigest digest;
  uint64_t count = 0;
  friend bool operator==(const DigestCount&, const DigestCount&) = default;
};

// Where a retention pass resumes (DbExternalApi::DeleteFinishedExecutions):
// the last top-level execution it examined, in (created_at, id text) order.
struct RetentionCursor {
  DateTime created_at;
  ExecutionId execution_id;
  friend bool operator==(const RetentionCursor&, const RetentionCursor&) = default;
};

// What one call of DeleteFinishedExecutions did.
struct DeletedExecutions {
  uint32_t examined = 0;           // top-level executions looked at
  uint32_t deleted_top_level = 0;  // of them, deleted with their trees
  uint64_t deleted = 0;            // executions deleted, children included
  // Where the next call of the same pass resumes; nullopt when no
  // top-level execution created at or before the cutoff follows.
  std::optional<RetentionCursor> next;
  friend bool operator==(const DeletedExecutions&, const DeletedExecutions&) = default;
};

struct ExecutionWithState {
  ExecutionId execution_id;
  core::FunctionFqn ffqn;
  core::PendingState pending_state;
  DateTime created_at;
  DateTime first_scheduled_at;
  core::InputContentDigest component_digest;
  friend bool operator==(const ExecutionWithState&, const ExecutionWithState&) = default;
};

struct ResponseWithCursor {
  core::JoinSetResponseEventOuter event;
  uint32_t cursor = 0;  // per-execution arrival order
  friend bool operator==(const ResponseWithCursor&, const ResponseWithCursor&) = default;
};

enum class CancelOutcome { kCancelled, kAlreadyFinished };
enum class AppendDelayResponseOutcome { kSuccess, kAlreadyFinished, kAlreadyCancelled };
// DbConnection::AppendMessage: written now, or delivered before under the
// same message id with the same channel and body (nothing written).
enum class AppendMessageOutcome { kDelivered, kAlreadyDelivered };
enum class LockKind { kExtending, kCreatingNewLock };

struct BacktraceFilter {
  enum class Kind { kFirst, kLast, kSpecific };
  Kind kind = Kind::kLast;
  Version version;  // kSpecific only
  static BacktraceFilter First() { return {Kind::kFirst, {}}; }
  static BacktraceFilter Last() { return {Kind::kLast, {}}; }
  static BacktraceFilter Specific(Version v) { return {Kind::kSpecific, v}; }
};

}  // namespace stele::storage
