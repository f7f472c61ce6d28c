// The event log vocabulary (Obelisk's `ExecutionRequest`, `HistoryEvent`,
// `JoinSetRequest`, `JoinSetResponse`) — see docs/model.md §3.
//
// Every state change of an execution is one `ExecutionEvent` appended at the
// next `Version`. `Created` is always version 0 and is written only by
// `DbConnection::Create`. HistoryEvents are written only by the lock holder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "core/component_id.h"
#include "core/duration.h"
#include "core/function_fqn.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/metadata.h"
#include "core/retry_config.h"
#include "core/return_value.h"
#include "core/version.h"

namespace stele::core {

// The *intent* of a schedule; replay compares intents, not resolved times.
struct ScheduleNow {
  friend bool operator==(const ScheduleNow&, const ScheduleNow&) = default;
};
struct ScheduleAtTime {
  DateTime at;
  friend bool operator==(const ScheduleAtTime&, const ScheduleAtTime&) = default;
};
struct ScheduleIn {
  Duration in;
  friend bool operator==(const ScheduleIn&, const ScheduleIn&) = default;
};
struct HistoryEventScheduleAt {
  std::variant<ScheduleNow, ScheduleAtTime, ScheduleIn> value;

  static HistoryEventScheduleAt Now() { return {ScheduleNow{}}; }
  static HistoryEventScheduleAt At(DateTime t) { return {ScheduleAtTime{t}}; }
  static HistoryEventScheduleAt In(Duration d) { return {ScheduleIn{d}}; }
  struct OutOfRangeError {
    friend bool operator==(const OutOfRangeError&, const OutOfRangeError&) = default;
  };
  // Resolves the intent at `now`; `In` out of the DateTime range is an error.
  Result<DateTime, OutOfRangeError> AsDateTime(DateTime now) const;
  std::string ToString() const;
  friend bool operator==(const HistoryEventScheduleAt&, const HistoryEventScheduleAt&) = default;
};

struct PersistKindRandomU64 {
  uint64_t min = 0;
  uint64_t max_inclusive = 0;
  friend bool operator==(const PersistKindRandomU64&, const PersistKindRandomU64&) = default;
};
struct PersistKindRandomString {
  uint64_t min_length = 0;
  uint64_t max_length_exclusive = 0;
  friend bool operator==(const PersistKindRandomString&, const PersistKindRandomString&) = default;
};
// The time of a workflow step (WorkflowRun::Now, what a JS workflow's
// Date.now() returns): `value` holds the milliseconds since the Unix epoch
// as 8 little-endian bytes. Unlike random values, replay returns the
// recorded time instead of comparing it with a new one.
struct PersistKindTime {
  friend bool operator==(const PersistKindTime&, const PersistKindTime&) = default;
};
using PersistKind = std::variant<PersistKindRandomU64, PersistKindRandomString, PersistKindTime>;

// --- JoinSetRequest ---------------------------------------------------------
struct DelayRequest {
  DelayId delay_id;
  DateTime expires_at;  // resolved on the first run
  HistoryEventScheduleAt schedule_at;
  friend bool operator==(const DelayRequest&, const DelayRequest&) = default;
};
struct ChildExecutionRequest {
  ExecutionIdDerived child_execution_id;
  FunctionFqn target_ffqn;
  Params params;
  friend bool operator==(const ChildExecutionRequest&, const ChildExecutionRequest&) = default;
};
using JoinSetRequest = std::variant<DelayRequest, ChildExecutionRequest>;

// --- HistoryEvent -----------------------------------------------------------
struct HistoryPersist {
  std::vector<uint8_t> value;  // only for determinism checks
  PersistKind kind;
  friend bool operator==(const HistoryPersist&, const HistoryPersist&) = default;
};
struct HistoryJoinSetCreate {
  JoinSetId join_set_id;
  friend bool operator==(const HistoryJoinSetCreate&, const HistoryJoinSetCreate&) = default;
};
struct HistoryJoinSetRequest {
  JoinSetId join_set_id;
  JoinSetRequest request;
  friend bool operator==(const HistoryJoinSetRequest&, const HistoryJoinSetRequest&) = default;
};
// Await the next response of a join set; blocks the execution when the
// matching response has not arrived (docs/model.md §4.3).
struct HistoryJoinNext {
  JoinSetId join_set_id;
  DateTime run_expires_at;  // lease kept by a warm run; == now for "interrupt"
  std::optional<FunctionFqn> requested_ffqn;
  bool closing = false;  // emitted by join-set close; never carries an ffqn
  friend bool operator==(const HistoryJoinNext&, const HistoryJoinNext&) = default;
};
struct HistoryJoinNextTooMany {
  JoinSetId join_set_id;
  std::optional<FunctionFqn> requested_ffqn;
  friend bool operator==(const HistoryJoinNextTooMany&, const HistoryJoinNextTooMany&) = default;
};
struct HistorySchedule {
  ExecutionId execution_id;
  HistoryEventScheduleAt schedule_at;
  friend bool operator==(const HistorySchedule&, const HistorySchedule&) = default;
};
struct HistoryStub {
  ExecutionIdDerived target_execution_id;
  SupportedFunctionReturnValue result;
  bool persist_result_ok = true;  // Obelisk's `persist_result: Result<(),()>`
  friend bool operator==(const HistoryStub&, const HistoryStub&) = default;
};
// The result of a durable step (libstele's WorkflowContext::step): a
// function the workflow ran in its own process, whose ok or err value is
// recorded in the workflow's log so that a replay returns it without running
// the function again (docs/model.md §6). Matched on replay by name.
struct HistoryStep {
  std::string name;
  SupportedFunctionReturnValue result;
  friend bool operator==(const HistoryStep&, const HistoryStep&) = default;
};
// A non-blocking JoinNext (WorkflowRun::JoinNextTry) that found no
// response: recorded so that a replay answers "nothing yet" too, whatever
// has arrived since. A try that found one records a plain JoinNext.
struct HistoryJoinNextTry {
  JoinSetId join_set_id;
  friend bool operator==(const HistoryJoinNextTry&, const HistoryJoinNextTry&) = default;
};
// A request from outside to cancel the workflow (docs/model.md §9.5): the
// one history event the lock holder does not write. The service appends it
// at the end of the log, where its position decides, the same way on every
// replay, at which blocking call the workflow sees the cancellation.
// `terminate`: end at once, without running guest code further; a run
// writes one itself when the grace period of a cancel is over.
struct HistoryCancelRequest {
  DateTime grace_expires_at;
  bool terminate = false;
  std::string reason;
  // A terminate for the execution's deadline (ExecutionPolicy::deadline):
  // it ends `timed_out` instead of `cancelled` (docs/model.md §9.7).
  bool timed_out = false;
  friend bool operator==(const HistoryCancelRequest&, const HistoryCancelRequest&) = default;
};
// A named value the workflow published (WorkflowRun::PublishValue): readers
// outside see the last value of each key (docs/model.md §3.3). Matched on
// replay by key and value.
struct HistoryPublish {
  std::string key;
  Json value;
  friend bool operator==(const HistoryPublish&, const HistoryPublish&) = default;
};
// What delivering a message answered (HistorySendMessage).
enum class SendOutcome { kDelivered, kNotFound, kAlreadyFinished };
std::string_view SendOutcomeName(SendOutcome outcome);  // "delivered", ...
// A message the workflow sent to another execution (WorkflowRun::SendMessage):
// the message was delivered (idempotently, by `message_id`) before this
// event was written; `outcome` records what the delivery answered, which a
// replay reads back rather than predicts (docs/model.md §3.5).
struct HistorySendMessage {
  ExecutionId target_execution_id;
  std::string channel;
  std::string message_id;
  Json body;
  SendOutcome outcome = SendOutcome::kDelivered;
  friend bool operator==(const HistorySendMessage&, const HistorySendMessage&) = default;
};
using HistoryEvent =
    std::variant<HistoryPersist, HistoryJoinSetCreate, HistoryJoinSetRequest, HistoryJoinNext,
                 HistoryJoinNextTooMany, HistorySchedule, HistoryStub, HistoryStep,
                 HistoryCancelRequest, HistoryJoinNextTry, HistoryPublish, HistorySendMessage>;

// --- ExecutionRequest -------------------------------------------------------
// What one execution sets for itself at creation (a submission, or its
// parent's call) on top of its component's settings (docs/model.md §5.7).
struct ExecutionPolicy {
  // Past it the execution ends `timed_out` with its subtree (children
  // inherit the parent's unless they set an earlier one).
  std::optional<DateTime> deadline;
  RetryOverride retry;
  bool IsEmpty() const { return !deadline && retry.IsEmpty(); }
  friend bool operator==(const ExecutionPolicy&, const ExecutionPolicy&) = default;
};

struct Created {
  FunctionFqn ffqn;
  Params params;
  std::optional<std::pair<ExecutionId, JoinSetId>> parent;
  DateTime scheduled_at;
  ComponentId component_id;
  ExecutionMetadata metadata;
  std::optional<ExecutionId> scheduled_by;
  // Absent (empty) in events written before policies existed.
  ExecutionPolicy policy = {};
  friend bool operator==(const Created&, const Created&) = default;
};
struct Locked {
  ComponentId component_id;
  ExecutorId executor_id;
  RunId run_id;
  DateTime lock_expires_at;
  ComponentRetryConfig retry_config;
  friend bool operator==(const Locked&, const Locked&) = default;
};
// Back to pending without counting as a retry (limit reached, shutdown,
// a workflow whose lock expired after it made progress).
struct Unlocked {
  DateTime backoff_expires_at;
  std::string reason;
  // The WebAssembly engine of the run ("v8 10.2.154.26-node.36"), when a
  // wasm worker ran it (WorkerResult::engine); absent in rows written
  // without one. Likewise on the three events below.
  std::optional<std::string> engine = std::nullopt;
  friend bool operator==(const Unlocked&, const Unlocked&) = default;
};
// Which attempt of a retry policy failed: "attempt 3 of 6" (docs/model.md
// §5.3). max_attempts: max_retries + 1, nullopt when unlimited.
struct RetryAttempt {
  uint32_t attempt = 0;
  std::optional<uint32_t> max_attempts;
  friend bool operator==(const RetryAttempt&, const RetryAttempt&) = default;
};
// "attempt 3 of 6", "attempt 3" (unlimited).
std::string RetryAttemptToString(const RetryAttempt& attempt);

struct TemporarilyFailed {
  DateTime backoff_expires_at;
  std::string reason;
  std::optional<std::string> detail;
  HttpClientTraces http_client_traces;
  std::optional<std::string> engine = std::nullopt;
  // Absent in events written before it existed.
  std::optional<RetryAttempt> attempt = std::nullopt;
  friend bool operator==(const TemporarilyFailed&, const TemporarilyFailed&) = default;
};
struct TemporarilyTimedOut {
  DateTime backoff_expires_at;
  HttpClientTraces http_client_traces;
  std::optional<std::string> engine = std::nullopt;
  // Which limit the run exceeded and where it is set (executor/outcome.h,
  // TimeoutReason). Absent in events written before it existed.
  std::optional<std::string> reason = std::nullopt;
  std::optional<RetryAttempt> attempt = std::nullopt;
  friend bool operator==(const TemporarilyTimedOut&, const TemporarilyTimedOut&) = default;
};
struct Finished {
  SupportedFunctionReturnValue result;
  HttpClientTraces http_client_traces;
  std::optional<std::string> engine = std::nullopt;
  friend bool operator==(const Finished&, const Finished&) = default;
};
// Pause and resume from outside (docs/model.md §9.6): not history, so a
// replay never sees them. A pause fences out a running lock holder (the
// version moves on) and keeps the execution from being locked until a
// Resumed; what arrives meanwhile (responses, expired delays) makes it
// pending as usual and it runs after the resume.
struct Paused {
  std::string reason;
  friend bool operator==(const Paused&, const Paused&) = default;
};
struct Resumed {
  std::string reason;
  friend bool operator==(const Resumed&, const Resumed&) = default;
};
struct HistoryEventRequest {
  HistoryEvent event;
  friend bool operator==(const HistoryEventRequest&, const HistoryEventRequest&) = default;
};

using ExecutionRequest =
    std::variant<Created, Locked, Unlocked, TemporarilyFailed, TemporarilyTimedOut, Finished,
                 HistoryEventRequest, Paused, Resumed>;

// "Created", "Locked", ..., "HistoryEvent" (Obelisk's `variant()`).
std::string_view ExecutionRequestVariantName(const ExecutionRequest& request);
// snake_case tag used in the log table: "created", ..., "history_event".
std::string_view ExecutionRequestVariantTag(const ExecutionRequest& request);
// "persist", "join_set_create", "join_set_request", "join_next", ...
std::string_view HistoryEventTypeTag(const HistoryEvent& event);
bool IsTemporaryEvent(const ExecutionRequest& request);
// Join set an event refers to (Created with parent, JoinSetCreate/Request/Next).
std::optional<JoinSetId> ExecutionRequestJoinSetId(const ExecutionRequest& request);
// Short human form, e.g. "Locked(`2026-...Z`, workflow:name)".
std::string ExecutionRequestToString(const ExecutionRequest& request);

struct ExecutionEvent {
  DateTime created_at;
  ExecutionRequest event;
  std::optional<Version> backtrace_id;
  Version version;
  friend bool operator==(const ExecutionEvent&, const ExecutionEvent&) = default;
};

// --- Responses --------------------------------------------------------------
struct DelayFinished {
  DelayId delay_id;
  bool ok = true;  // true: expired; false: cancelled
  friend bool operator==(const DelayFinished&, const DelayFinished&) = default;
};
struct ChildExecutionFinished {
  ExecutionIdDerived child_execution_id;
  Version finished_version;
  SupportedFunctionReturnValue result;
  friend bool operator==(const ChildExecutionFinished&, const ChildExecutionFinished&) = default;
};
// A message sent to the execution on a channel (docs/model.md §3.5): the
// response of the channel's join set `m:<channel>`, kept until a receive
// consumes it. `message_id` is unique per execution (the sender's
// idempotency key).
struct MessageReceived {
  std::string message_id;
  Json body;
  friend bool operator==(const MessageReceived&, const MessageReceived&) = default;
};
using JoinSetResponse = std::variant<DelayFinished, ChildExecutionFinished, MessageReceived>;

// A message id: 1 to kMaxMessageIdLength characters of ASCII letters,
// digits and `_ . : @ / -` (docs/api.md, "Messages").
inline constexpr size_t kMaxMessageIdLength = 128;
bool IsValidMessageId(std::string_view id);
// A channel is the name of its join set (JoinSetId::IsValidName), at most
// kMaxChannelLength characters.
inline constexpr size_t kMaxChannelLength = 128;
bool IsValidChannel(std::string_view channel);
// The join set `m:<channel>` of a valid channel.
Result<JoinSetId, IdParseError> ChannelJoinSet(std::string_view channel);
// A published value's key: the rules of a channel.
inline bool IsValidValueKey(std::string_view key) { return IsValidChannel(key); }

struct JoinSetResponseEvent {
  JoinSetId join_set_id;
  JoinSetResponse event;
  friend bool operator==(const JoinSetResponseEvent&, const JoinSetResponseEvent&) = default;
};
struct JoinSetResponseEventOuter {
  DateTime created_at;
  JoinSetResponseEvent event;
  friend bool operator==(const JoinSetResponseEventOuter&,
                         const JoinSetResponseEventOuter&) = default;
};

}  // namespace stele::core
