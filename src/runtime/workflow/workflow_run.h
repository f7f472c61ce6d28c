// WorkflowRun: the replay engine of one run of one workflow execution
// (docs/model.md §6–§8). Engine-neutral: the native C++ SDK calls it from
// its awaiters, the WebAssembly host functions from host imports. Every
// workflow effect goes through one method here; the run matches it against
// the recorded history and only appends in new territory.
//
// Replay (docs/model.md §6.2). The cursor is the first unprocessed history
// event of the locked execution. Each call produces one or more events (its
// "keys"); each key is compared with the event under the cursor by kind and
// payload (schedule *intents*, not resolved times; params structurally):
//   match            → the event becomes processed; its recorded outcome is
//                      returned; nothing is written;
//   no event left    → new territory: the event is appended (version-fenced)
//                      and processed;
//   anything else    → Interruption kNondeterminism ("... at version N").
// Every derived decision — the index of a generated or one-off join set, the
// index of a child or delay in its join set, whether a named join set
// exists, whether a join set has unawaited submissions, which response a
// JoinNext consumes — is computed from processed events only, never from the
// unreplayed tail. Finish() reports an unreplayed tail as nondeterminism.
// Indices are kept incrementally, so replaying N events costs O(N).
//
// Join sets (docs/model.md §8). One-off join sets (`o:<k>-<fn>`,
// `o:<k>-sleep`) back direct calls and sleeps and are awaited at once. Named
// (`n:<name>`) and generated (`g:<k>`) ones are handles the guest passes
// back. A JoinNext consumes the responses of its join set in arrival order.
// Closing (explicit CloseJoinSet, or Finish for every open set in reverse
// creation order) cancels unawaited activities and delays, leaves child
// workflows running, and emits one JoinNext{closing} per unawaited
// submission, blocking until each response is in. A closed join set
// rejects submissions (kConstraintViolation). A workflow that fails for good
// (ToWorkerResult of a fatal interruption, Trap) cancels the unawaited
// activities and delays of all its join sets the same way, without closing
// JoinNexts.
//
// Blocking (docs/model.md §7). When a JoinNext has no response yet:
//   kInterrupt  the JoinNext is written with run_expires_at = now and the
//               call returns Interruption kBlocked: the run ends writing
//               nothing more (DbUpdatedByWorkerOrWatcher); the response
//               makes the execution pending and a later run replays.
//   kAwait      the JoinNext carries the lock's expiry as its lease and the
//               run waits warm for the response (SubscribeToNextResponses,
//               each wait bounded by subscription_interruption) until the
//               lease ends, then returns kBlocked the same way.
// Both strategies append exactly the same history events (only the
// JoinNext leases differ). Before each call the lock is extended (a Locked
// event by the same executor and run) once it is within
// lock_extension_leeway of its expiry; a run whose lock has expired stops
// (kLeaseExpired) without writing. Every call does, Log and Get included,
// although they write no event. An extension is an event: in new territory
// it counts against max_events_per_execution like any other, so a loop of
// calls that write nothing else still ends.
//
// Batching. Non-blocking events (JoinSetCreate, Persist, child and delay
// submissions with the children's Created, Schedule with its Created, Stub)
// are kept in memory, at most non_blocking_event_batching of them, and
// written in the transaction of the next blocking write (a JoinNext that
// must wait, a direct call, a sleep, a join-set close, Finish — whose
// write carries the execution's Finished too). A
// submission and the JoinNext that awaits it therefore cost one commit. A
// JoinNext whose response is already known does not block: it is batched
// too, so draining a join set whose responses have arrived costs one
// commit in all. Deviation from Obelisk,
// which batches only under kAwait: we batch under both strategies; the
// events and their order are the same, only fewer commits are chained.
// A lost cache (crash) is harmless: the next run replays to the same point
// and writes the same events (ids are deterministic, stubs idempotent).
//
// Other choices where Obelisk's model leaves room (docs/model.md §12): a
// JoinNext whose response is already known carries the lock's expiry as its
// lease under both strategies (the run continues, so it keeps its lease);
// children and scheduled executions are created with empty metadata;
// one-off join set names replace characters a join set name may not hold
// ('_') by '-'.
//
// Randomness (docs/model.md §6.5): xoshiro256** seeded through splitmix64
// from ExecutionId::RandomSeed() (workflow_prng.h). Values are Persist-ed
// and compared on replay, so the algorithm is part of the replay contract.
// Scheduled executions get ids from the same generator.
//
// Cancellation (docs/model.md §9.5). A HistoryCancelRequest in the log is
// not produced by a call: the cursor passes it (at the start of a call or
// of a step) and the run remembers it. The first blocking call that
// follows — or the JoinNext directly before it, which the request
// interrupted — returns "cancelled" instead of waiting: JoinNext
// JoinNextError::kCancelled, Call a FinishedExecutionError kCancelled,
// Sleep SleepCancelled. Only a JoinNext the log records consumes a
// response slot (one directly before the request discards its slot's
// response). From then on the workflow may clean up, calling activities as
// usual, until the grace period the request carries ends: each join set it
// then awaits gets a delay expiring with the grace period (its response
// ends the run), and a call past the grace period in new territory
// records a terminate request. A terminate request, or the workflow
// returning after a request, ends the execution (kTerminated): its open
// activities and delays are cancelled, its open child workflows get a
// terminate request and are awaited (closing JoinNexts), and it finishes
// with the execution error `cancelled`. All of it follows from the log's
// order, so a replay takes the same path.
//
// Errors. A call returns Interruption when the guest must stop now: the
// SDK destroys the coroutine frame, the WASM host traps the guest, and the
// worker returns ToWorkerResult(interruption). Business outcomes the guest
// handles (all-processed, function mismatch, stub conflict, not found in
// processed responses, named join set conflict, cancelled sleep) are the
// inner error of a CallResult<T, E> = Result<Result<T, E>, Interruption>.
// After an Interruption every further call returns the same Interruption.
//
// Threading: a run is used from one thread; it blocks that thread only
// while waiting for a response (kAwait) or for the database. It starts no
// threads and throws no exceptions.
// Ownership: the run owns the WorkerContext moved into it; `deps` are
// borrowed and must outlive the run. Values returned are owned by the
// caller.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "base/clock.h"
#include "base/log.h"
#include "base/result.h"
#include "base/time.h"
#include "core/execution_event.h"
#include "core/function_fqn.h"
#include "core/ids.h"
#include "core/return_value.h"
#include "executor/cancel_registry.h"
#include "executor/local_dispatch.h"
#include "executor/response_handoff.h"
#include "executor/worker.h"
#include "runtime/workflow/function_registry.h"
#include "storage/db_connection.h"
#include "storage/db_errors.h"

namespace stele::runtime::workflow {

enum class BlockingStrategy {
  kInterrupt,  // unload at once when a JoinNext has no response
  kAwait,      // keep the run warm until its lease ends
};

struct WorkflowRunOptions {
  BlockingStrategy blocking_strategy = BlockingStrategy::kAwait;
  // Most non-blocking events kept in memory before they are written on
  // their own; 0 writes each at once.
  uint32_t non_blocking_event_batching = 100;
  // Lease added by each lock extension; 0 disables extension.
  std::chrono::milliseconds lock_extension{1000};
  // Extend once the lock expires within this much.
  std::chrono::milliseconds lock_extension_leeway{100};
  // Longest single wait for a response (steady time); the run then
  // re-checks its lease and the database. Notifications are hints.
  std::chrono::milliseconds subscription_interruption{1000};
  // kAwait: longest steady time one blocking call waits warm in total,
  // besides the lease; nullopt = until the lease ends. Tests driven by a
  // ManualClock set it (the lease never ends on a frozen clock).
  std::optional<std::chrono::milliseconds> max_warm_wait;
  // After writing this many events a run unlocks itself (Unlocked, pending
  // at once) and stops with kYielded, so one workflow cannot hog an
  // executor slot; 0 = no limit.
  uint32_t max_events_per_run = 0;
  // Limits that end the execution (kConstraintViolation) instead of letting
  // a runaway loop grow it without bound; checked for new events only, so
  // replaying a recorded log never trips them. 0: no limit.
  uint32_t max_events_per_execution = 100'000;  // log length (versions)
  // Where max_events_per_execution is set, in the face's words: named by
  // the error of an execution that reaches it.
  std::string max_events_setting = "WorkflowRunOptions::max_events_per_execution";
  uint32_t max_join_set_size = 10'000;  // submissions to one join set
  // Params (as JSON) of a child or scheduled execution the workflow
  // creates; the same default as EngineOptions::max_params_bytes for
  // top-level submissions.
  uint64_t max_params_bytes = 1u << 20;
  // Counts the messages the run consumes in new territory (a replay
  // counts nothing): the service's stele_messages_consumed_total. nullptr:
  // not counted.
  std::shared_ptr<std::atomic<uint64_t>> messages_consumed;
  // Counts the messages the run delivers with SendMessage (the service's
  // stele_messages_sent_total). nullptr: not counted.
  std::shared_ptr<std::atomic<uint64_t>> messages_sent;
  // Stamped on the Finished the run writes itself (Finish): the engine
  // that ran the guest (wasm runs), as the executor stamps the events it
  // writes from WorkerResult::engine.
  std::optional<std::string> engine;
};

// Borrowed collaborators; all must outlive the run.
struct WorkflowRunDeps {
  storage::DbConnection* db = nullptr;          // REQUIRES: non-null
  const Clock* clock = nullptr;                 // REQUIRES: non-null
  const FunctionRegistry* functions = nullptr;  // REQUIRES: non-null
  // Executors of this process by function: children they serve are locked
  // for them in the transaction that creates them and handed over at once
  // (executor/local_dispatch.h). nullptr: every child is created pending.
  const executor::LocalDispatch* dispatch = nullptr;
  // Children's results handed over in memory while this run waits warm on
  // one child; they commit with the run's next step
  // (executor/response_handoff.h). nullptr: results arrive through the
  // database only.
  executor::ResponseHandoff* handoff = nullptr;
  // The process's registry of running activities (executor/cancel_registry.h):
  // an activity this run cancels (join-set close, a failing workflow) and
  // that an executor of this process is running has its token fired at
  // once. nullptr: the cancel is written to the database only, and a local
  // run stops at its deadline (or when the executor's cancel watcher sees
  // it finished).
  executor::CancelRegistry* cancel_registry = nullptr;
};

// The guest must stop now.
struct Interruption {
  enum class Kind {
    kBlocked,                    // waiting on a join set: unloaded (DbUpdatedByWorkerOrWatcher)
    kLeaseExpired,               // the lock expired before the call (DbUpdated)
    kYielded,                    // max_events_per_run reached; Unlocked written (DbUpdated)
    kNondeterminism,             // replay diverged (Finished: nondeterminism_detected)
    kConstraintViolation,        // submit to / join on a closed, one-off or unknown join set
    kImportedFunctionCallError,  // unknown ffqn, stub target mismatch
    kTrap,                       // invalid argument (empty random range ...): a workflow trap
    kDbError,                    // storage failed; nothing more is written (WorkerDbError)
    kCancelled,                  // the run's cancellation token fired
    kStepFailed,                 // a durable step's function failed: the run is
                                 // retried by the component's policy (not fatal)
    kTerminated,                 // a cancel request ends the workflow: its subtree
                                 // is cancelled and it finishes `cancelled`
  };
  Kind kind = Kind::kBlocked;
  std::string reason;
  std::optional<storage::DbErrorWrite> db_error;  // kDbError only

  // True for the kinds that end the execution permanently when recorded.
  bool IsFatal() const;
  // "blocked", "lease expired", ..., plus ": <reason>" when set.
  std::string ToString() const;
  friend bool operator==(const Interruption&, const Interruption&) = default;
};
std::string_view InterruptionKindName(Interruption::Kind kind);

// A call that may return a business error E the guest handles, or an
// Interruption after which the guest must stop.
template <class T, class E>
using CallResult = Result<Result<T, E>, Interruption>;

// --- Responses ------------------------------------------------------------------

// What a workflow sets for one child it creates (a submission or a direct
// call): a timeout from now, and retry overrides (core::RetryOverride).
struct ChildOptions {
  std::optional<std::chrono::milliseconds> timeout;
  core::RetryOverride retry;
};

struct ChildResponse {
  core::ExecutionIdDerived child_execution_id;
  core::FunctionFqn ffqn;  // the function the child runs
  core::SupportedFunctionReturnValue result;
  friend bool operator==(const ChildResponse&, const ChildResponse&) = default;
};
struct DelayResponse {
  core::DelayId delay_id;
  bool ok = true;  // true: expired; false: cancelled
  friend bool operator==(const DelayResponse&, const DelayResponse&) = default;
};
// A message of a channel's join set; only Receive and TryReceive see one
// (a JoinNext on a channel's join set is a constraint violation).
struct MessageResponse {
  std::string message_id;
  core::Json body;
  friend bool operator==(const MessageResponse&, const MessageResponse&) = default;
};
using JoinSetResponseValue = std::variant<ChildResponse, DelayResponse, MessageResponse>;

// A message received on a channel (WorkflowRun::Receive).
struct Message {
  std::string message_id;
  std::string channel;
  core::Json body;
  friend bool operator==(const Message&, const Message&) = default;
};

// --- Business errors --------------------------------------------------------------

struct JoinSetCreateError {
  enum class Kind {
    kInvalidName,  // not [A-Za-z0-9/-]+
    kConflict,     // a named join set of that name exists
  };
  Kind kind = Kind::kConflict;
  friend bool operator==(const JoinSetCreateError&, const JoinSetCreateError&) = default;
};

struct JoinNextError {
  enum class Kind {
    kAllProcessed,      // every submission was awaited (recorded as JoinNextTooMany)
    kFunctionMismatch,  // the response is not of the requested ffqn; it is consumed
    kCancelled,         // the workflow is asked to cancel (see Cancellation above)
  };
  Kind kind = Kind::kAllProcessed;
  // kFunctionMismatch: the consumed response (a delay has no ffqn).
  std::optional<JoinSetResponseValue> actual;
  friend bool operator==(const JoinNextError&, const JoinNextError&) = default;
};

struct GetError {
  enum class Kind { kNotFoundInProcessedResponses, kFunctionMismatch };
  Kind kind = Kind::kNotFoundInProcessedResponses;
  std::optional<core::FunctionFqn> actual_ffqn;  // kFunctionMismatch
  friend bool operator==(const GetError&, const GetError&) = default;
};

struct StubError {
  enum class Kind { kConflict };  // the target holds a different result
  Kind kind = Kind::kConflict;
  friend bool operator==(const StubError&, const StubError&) = default;
};

struct ReceiveError {
  enum class Kind {
    kTimedOut,   // the receive's timeout came first
    kCancelled,  // the workflow is asked to cancel (see Cancellation above)
  };
  Kind kind = Kind::kTimedOut;
  friend bool operator==(const ReceiveError&, const ReceiveError&) = default;
};

struct SendError {
  enum class Kind {
    kNotFound,         // no such execution
    kAlreadyFinished,  // the target has finished
  };
  Kind kind = Kind::kNotFound;
  friend bool operator==(const SendError&, const SendError&) = default;
};

// The delay behind a sleep was cancelled (CancelDelay).
struct SleepCancelled {
  friend bool operator==(const SleepCancelled&, const SleepCancelled&) = default;
};

namespace internal {
class RunState;
}  // namespace internal

class WorkflowRun {
 public:
  // Builds the run from the executor's context (history, responses, the
  // version to write at, the lock). O(1): indices grow as replay proceeds.
  WorkflowRun(executor::WorkerContext ctx, WorkflowRunDeps deps, WorkflowRunOptions options);
  ~WorkflowRun();
  WorkflowRun(const WorkflowRun&) = delete;
  WorkflowRun& operator=(const WorkflowRun&) = delete;

  // --- Facts of the run -------------------------------------------------------
  const core::ExecutionId& execution_id() const;
  const core::FunctionFqn& ffqn() const;
  const core::Params& params() const;
  const core::ExecutionMetadata& metadata() const;
  // True while the cursor is inside the recorded history (guest logs are
  // suppressed then).
  bool IsReplaying() const;
  // The version the next write names (cached events not counted).
  core::Version version() const;
  // Set once a call returned an Interruption.
  const std::optional<Interruption>& interruption() const;
  // When the run's lock expires (extended by the calls as they go): a
  // guest computing without calls must stop before then, or a second run
  // of the execution could start while it still runs.
  DateTime lock_expires_at() const;

  // --- The lease ---------------------------------------------------------------
  // The guest is about to compute for up to `needed` without a call (a wasm
  // guest's slice, wasm_workflow_worker.h): unless at least that much of
  // the lease is left, the lock is extended now, as at a call whose lease
  // is due (only with lock_extension > 0). Returns the lease's end. Errors:
  // kLeaseExpired (the lease ended already), the extension's (kDbError,
  // kConstraintViolation at the event limit), or the run's interruption.
  Result<DateTime, Interruption> EnsureLease(std::chrono::milliseconds needed);

  // --- Join sets ----------------------------------------------------------------
  // `g:<k>`, k = generated join sets processed so far + 1. Cached.
  Result<core::JoinSetId, Interruption> CreateJoinSet();
  // `n:<name>`. No event is written on a business error.
  CallResult<core::JoinSetId, JoinSetCreateError> CreateNamedJoinSet(std::string_view name);
  // Closes `join_set` as described above; blocks. A join set without
  // unawaited submissions closes without events. Closing a closed join set
  // is a no-op. REQUIRES: a named or generated join set of this run
  // (kConstraintViolation otherwise).
  Result<void, Interruption> CloseJoinSet(const core::JoinSetId& join_set);

  // --- Children and delays --------------------------------------------------------
  // Submits a child execution `<this>.<join_set>_<idx>` of `ffqn` (cached
  // with its Created). kImportedFunctionCallError for an unknown ffqn;
  // kConstraintViolation for a closed, one-off or unknown join set.
  // `own`: the child's own deadline and retry override (ChildPolicy).
  Result<core::ExecutionIdDerived, Interruption> SubmitChild(const core::JoinSetId& join_set,
                                                             const core::FunctionFqn& ffqn,
                                                             core::Params params,
                                                             const ChildOptions& own = {});
  // Submits a durable timer into `join_set`; its expiry is resolved from
  // the intent on the first run and recorded. Same join-set rules.
  Result<core::DelayId, Interruption> SubmitDelay(const core::JoinSetId& join_set,
                                                  const core::HistoryEventScheduleAt& schedule_at);
  // Awaits the next response of `join_set` (arrival order). With
  // `requested_ffqn` (the `-await-next` extension) a response of another
  // function, or a delay, is kFunctionMismatch (and consumed). Blocks.
  // A closed, one-off or unknown join set is kConstraintViolation.
  CallResult<JoinSetResponseValue, JoinNextError> JoinNext(
      const core::JoinSetId& join_set,
      const std::optional<core::FunctionFqn>& requested_ffqn = std::nullopt);
  // JoinNext without waiting: the next response of `join_set` when it has
  // arrived (consumed, recorded as a JoinNext), nullopt when none has
  // (recorded as JoinNextTry, so a replay answers nullopt too). The same
  // business errors as JoinNext; it never sees a cancellation (it does not
  // wait).
  CallResult<std::optional<JoinSetResponseValue>, JoinNextError> JoinNextTry(
      const core::JoinSetId& join_set,
      const std::optional<core::FunctionFqn>& requested_ffqn = std::nullopt);
  // Result of a child whose response a processed JoinNext consumed; writes
  // no event. Like every call it first checks the lease, cancellation and
  // the event limits (a loop of Gets cannot outlive its lock).
  CallResult<core::SupportedFunctionReturnValue, GetError> Get(
      const core::ExecutionIdDerived& child, const core::FunctionFqn& ffqn);

  // --- Blocking shorthands ----------------------------------------------------------
  // Direct call: JoinSetCreate(o:<k>-<fn>) + ChildExecutionRequest + JoinNext
  // and the child's Created in one transaction, then await. The child's
  // result may be an ExecutionError (timed out, cancelled, ...).
  Result<core::SupportedFunctionReturnValue, Interruption> Call(const core::FunctionFqn& ffqn,
                                                                core::Params params,
                                                                const ChildOptions& own = {});
  // The policy a child is created with (docs/model.md §9.7): its own retry
  // override, and the earlier of its own deadline (now + timeout) and this
  // execution's — a child never outlives its parent's deadline. A timeout
  // that is not positive or a jitter over 100 is kConstraintViolation.
  Result<core::ExecutionPolicy, Interruption> ChildPolicy(const ChildOptions& own);
  // JoinSetCreate(o:<k>-sleep) + DelayRequest + JoinNext in one
  // transaction, then await. Returns the delay's recorded expiry.
  CallResult<DateTime, SleepCancelled> Sleep(const core::HistoryEventScheduleAt& schedule_at);

  // --- Fire-and-forget and stubs ------------------------------------------------------
  // Schedules a new top-level execution (id from the PRNG and this
  // execution's root timestamp, `scheduled_by` = this). Cached.
  Result<core::ExecutionId, Interruption> Schedule(const core::HistoryEventScheduleAt& schedule_at,
                                                   const core::FunctionFqn& ffqn,
                                                   core::Params params);
  // Writes the result of stub activity `target` (a child of this workflow,
  // idempotently) and records it. kImportedFunctionCallError when the
  // target does not exist or does not run `ffqn`.
  CallResult<void, StubError> Stub(const core::FunctionFqn& ffqn,
                                   const core::ExecutionIdDerived& target,
                                   core::SupportedFunctionReturnValue value);

  // --- Messages and published values (docs/model.md §8.6) ------------------------
  // The next message of `channel` (arrival order), consumed: recorded as a
  // JoinNext of the channel's join set `m:<channel>`, so a replay gets the
  // same messages in the same order. Messages sent before the workflow
  // asks are kept. Blocks (per the blocking strategy) until one arrives;
  // with `timeout`, a delay submitted into the same join set first, at
  // most until it expires (kTimedOut) — a message that wins cancels it.
  // A channel is a join set name of at most core::kMaxChannelLength
  // characters; an invalid one is kTrap.
  CallResult<Message, ReceiveError> Receive(
      std::string_view channel,
      const std::optional<core::HistoryEventScheduleAt>& timeout = std::nullopt);
  // Receive without waiting: nullopt when no message has arrived (recorded
  // as JoinNextTry, so a replay answers nullopt too).
  CallResult<std::optional<Message>, ReceiveError> TryReceive(std::string_view channel);
  // Publishes `value` under `key` (a channel's rules), readable from
  // outside (last write wins): a Publish event, written before the call
  // returns with the events batched before it. Over max_params_bytes is
  // kConstraintViolation.
  Result<void, Interruption> PublishValue(std::string_view key, core::Json value);
  // Sends `body` to `channel` of execution `target`. In new territory the
  // message is delivered first (DbConnection::AppendMessage, message id
  // `<this id>@<k>`, k = sends processed so far + 1, so a retry after a
  // crash delivers it once), then SendMessage records what delivery
  // answered; a replay returns the recorded answer and sends nothing.
  // kNotFound / kAlreadyFinished are the workflow's to handle.
  CallResult<void, SendError> SendMessage(const core::ExecutionId& target, std::string_view channel,
                                          core::Json body);

  // --- Durable steps -----------------------------------------------------------------
  // A step's function: its ok or err value, or why it failed (an error
  // that is not a result: the run is retried).
  using StepFn = std::function<Result<core::SupportedFunctionReturnValue, std::string>()>;
  // Runs `fn` in this process and records its value as one Step event of
  // this execution; on replay returns the recorded value without running
  // `fn` (matched by `name`: another name at that point is nondeterminism).
  // The record is written before RunStep returns, with the non-blocking
  // events batched before it, in one commit: a run that dies after it never
  // runs `fn` again, one that dies before it runs `fn` again when the
  // workflow is retried (at least once, like an activity). A failed `fn`
  // ends the run with kStepFailed, a temporary failure the component's
  // retry policy retries. The lease is checked (and extended) before `fn`
  // runs, not while it runs: a step must end well within the lease.
  Result<core::SupportedFunctionReturnValue, Interruption> RunStep(std::string_view name,
                                                                   const StepFn& fn);

  // --- Randomness --------------------------------------------------------------------
  // Uniform in [min, max_exclusive); kTrap when the range is empty.
  Result<uint64_t, Interruption> RandomU64(uint64_t min, uint64_t max_exclusive);
  // Uniform in [min, max_inclusive]; kTrap when min > max_inclusive.
  Result<uint64_t, Interruption> RandomU64Inclusive(uint64_t min, uint64_t max_inclusive);
  // Alphanumeric, length uniform in [min_length, max_length_exclusive);
  // kTrap when the range is empty or above 1 MiB.
  Result<std::string, Interruption> RandomString(uint64_t min_length,
                                                 uint64_t max_length_exclusive);

  // --- Time --------------------------------------------------------------------------
  // The time of the current step, whole milliseconds (what a JS workflow's
  // Date.now() returns). A step begins with the run and after every call
  // that may wait (Call, Sleep, JoinNext, CloseJoinSet); its first Now()
  // records the clock's time — never earlier than an earlier step's — as a
  // Persist(time) event, and every later Now() of the step returns it
  // without an event. On replay the recorded time is returned (not
  // compared), so a replayed step sees the time its first run saw.
  Result<DateTime, Interruption> Now();

  // --- Logging -------------------------------------------------------------------------
  // Guest log line, tagged with the execution id; dropped while replaying.
  // Writes no event, but like every call first checks the lease (extending
  // it when due), cancellation and the event limits, so a workflow looping
  // on logs ends (kLeaseExpired, kCancelled, kConstraintViolation) instead
  // of running past its lock.
  Result<void, Interruption> Log(LogLevel level, std::string_view message);

  // --- Ending the run --------------------------------------------------------------------
  // The workflow function returned `value` (ok or err): closes open join
  // sets (may block) and checks that no history event is left unprocessed
  // (else nondeterminism). Then the end is one commit: when events are
  // still to be written (cached events, children's results taken in
  // memory) they are written with Finished — and a child's response to its
  // parent — in one transaction, and the result is DbUpdatedByWorkerOrWatcher
  // (nothing left for the executor); otherwise it is WorkerOk at the
  // version Finished goes to, for the executor to write (and perhaps hand
  // to a warm parent). On an interruption, its WorkerResult.
  executor::WorkerResult Finish(core::SupportedFunctionReturnValue value);
  // The WorkerResult for an Interruption a call returned:
  // kBlocked/kLeaseExpired/kYielded → DbUpdatedByWorkerOrWatcher;
  // kDbError → WorkerDbError; kTerminated → the end described under
  // Cancellation (may block like Finish); others → FatalError of the
  // matching kind.
  // A fatal interruption ends the workflow for good, so first (best
  // effort, database only) its cached events are written and its unawaited
  // activities and delays cancelled, as closing its join sets would
  // (docs/model.md §8.5; Obelisk 0.35 closes join sets on fatal errors too);
  // child workflows keep running. kCancelled (the executor stopping the
  // run) is not a failure of the workflow and cancels nothing; neither do
  // the non-fatal kinds (a kDbError writes nothing at all).
  executor::WorkerResult ToWorkerResult(const Interruption& interruption);
  // The guest trapped (panicked, threw out of the workflow): a permanent
  // FatalError kWorkflowTrap, after the same cleanup as a fatal
  // interruption.
  executor::WorkerResult Trap(std::string reason, std::optional<std::string> detail = std::nullopt);
  // Any other permanent failure of the guest (kOutOfFuel: it kept computing
  // past its slice), with the same cleanup as Trap.
  executor::WorkerResult Fail(executor::FatalErrorKind kind, std::string reason,
                              std::optional<std::string> detail = std::nullopt);

 private:
  std::unique_ptr<internal::RunState> state_;
};

}  // namespace stele::runtime::workflow
