// The public calls of WorkflowRun, each composed of the replay steps of
// run_state.h: Begin (lease, cancellation, limits), Step per history event
// the call produces, then a flush (blocking calls) or MaybeFlush
// (non-blocking ones).
#include "runtime/workflow/workflow_run.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "runtime/workflow/run_state.h"
#include "storage/operations.h"

namespace stele::runtime::workflow {

using internal::RunState;
using Kind = Interruption::Kind;

namespace {

// The function a submit / call / schedule targets. An unknown function, or
// params that are not a JSON array (they could not be stored as a Created
// event), end the run with kImportedFunctionCallError: retrying cannot help.
Result<FunctionInfo, Interruption> FindTarget(internal::RunState& state, std::string_view verb,
                                              const core::FunctionFqn& ffqn,
                                              const core::Params& params) {
  std::optional<FunctionInfo> info = state.deps.functions->Find(ffqn);
  if (!info) {
    return state.Interrupt(Interruption::Kind::kImportedFunctionCallError,
                           std::string(verb) + ": unknown function " + ffqn.ToString());
  }
  if (!params.is_array()) {
    return state.Interrupt(Interruption::Kind::kImportedFunctionCallError,
                           std::string(verb) + " " + ffqn.ToString() +
                               ": params must be a JSON array, got " + params.type_name());
  }
  return *std::move(info);
}

// Random strings are capped so a guest cannot make the log explode.
constexpr uint64_t kMaxRandomStringLength = 1 << 20;

std::vector<uint8_t> U64Bytes(uint64_t value) {
  std::vector<uint8_t> bytes(8);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(value >> (8 * i));  // little endian
  return bytes;
}

// Function names may hold '_', which join set names may not.
std::string OneOffName(uint64_t index, std::string_view suffix) {
  std::string name = std::to_string(index) + "-";
  for (char c : suffix) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '/';
    name.push_back(ok ? c : '-');
  }
  return name;
}

core::JoinSetId OneOffJoinSet(RunState& state, std::string_view suffix) {
  auto id = core::JoinSetId::Create(
      core::JoinSetKind::kOneOff,
      OneOffName(state.JoinSetCount(core::JoinSetKind::kOneOff) + 1, suffix));
  STELE_CHECK(id.has_value(), "one-off join set names are always valid");
  return *std::move(id);
}

}  // namespace

// --- Interruption ------------------------------------------------------------------

std::string_view InterruptionKindName(Interruption::Kind kind) {
  switch (kind) {
    case Kind::kBlocked:
      return "blocked";
    case Kind::kLeaseExpired:
      return "lease expired";
    case Kind::kYielded:
      return "yielded";
    case Kind::kNondeterminism:
      return "nondeterminism detected";
    case Kind::kConstraintViolation:
      return "constraint violation";
    case Kind::kImportedFunctionCallError:
      return "imported function call error";
    case Kind::kTrap:
      return "workflow trap";
    case Kind::kDbError:
      return "database error";
    case Kind::kCancelled:
      return "cancelled";
    case Kind::kStepFailed:
      return "step failed";
    case Kind::kTerminated:
      return "terminated";
  }
  return "unknown";
}

bool Interruption::IsFatal() const {
  switch (kind) {
    case Kind::kBlocked:
    case Kind::kLeaseExpired:
    case Kind::kYielded:
    case Kind::kDbError:
    case Kind::kStepFailed:
      return false;
    default:
      return true;
  }
}

std::string Interruption::ToString() const {
  std::string out(InterruptionKindName(kind));
  if (!reason.empty()) out += ": " + reason;
  return out;
}

// --- Facts ---------------------------------------------------------------------------

WorkflowRun::WorkflowRun(executor::WorkerContext ctx, WorkflowRunDeps deps,
                         WorkflowRunOptions options)
    : state_(std::make_unique<RunState>(std::move(ctx), deps, options)) {}
WorkflowRun::~WorkflowRun() = default;

const core::ExecutionId& WorkflowRun::execution_id() const { return state_->ctx.execution_id; }
const core::FunctionFqn& WorkflowRun::ffqn() const { return state_->ctx.ffqn; }
const core::Params& WorkflowRun::params() const { return state_->ctx.params; }
const core::ExecutionMetadata& WorkflowRun::metadata() const { return state_->ctx.metadata; }
bool WorkflowRun::IsReplaying() const { return state_->replaying(); }
core::Version WorkflowRun::version() const { return state_->version(); }
const std::optional<Interruption>& WorkflowRun::interruption() const {
  return state_->interruption;
}
DateTime WorkflowRun::lock_expires_at() const { return state_->lock_expires_at(); }

// --- Join sets -------------------------------------------------------------------------

Result<core::JoinSetId, Interruption> WorkflowRun::CreateJoinSet() {
  STELE_TRY(state_->Begin());
  auto id = core::JoinSetId::Create(
      core::JoinSetKind::kGenerated,
      std::to_string(state_->JoinSetCount(core::JoinSetKind::kGenerated) + 1));
  STELE_CHECK(id.has_value(), "generated join set names are always valid");
  STELE_TRY(state_->Step(core::HistoryJoinSetCreate{*id}));
  STELE_TRY(state_->MaybeFlush());
  return *std::move(id);
}

CallResult<core::JoinSetId, JoinSetCreateError> WorkflowRun::CreateNamedJoinSet(
    std::string_view name) {
  using Inner = Result<core::JoinSetId, JoinSetCreateError>;
  STELE_TRY(state_->Begin());
  if (!core::JoinSetId::IsValidName(name)) {
    return Inner(Unexpected(JoinSetCreateError{JoinSetCreateError::Kind::kInvalidName}));
  }
  if (state_->NamedJoinSetExists(std::string(name))) {
    return Inner(Unexpected(JoinSetCreateError{JoinSetCreateError::Kind::kConflict}));
  }
  auto id = core::JoinSetId::Create(core::JoinSetKind::kNamed, std::string(name));
  STELE_CHECK(id.has_value(), "name was validated");
  STELE_TRY(state_->Step(core::HistoryJoinSetCreate{*id}));
  STELE_TRY(state_->MaybeFlush());
  return Inner(*std::move(id));
}

namespace {

// Closing per docs/model.md §8.4: cancel what may be cancelled, then one
// closing JoinNext per unawaited submission.
Result<void, Interruption> CloseJoinSetState(RunState& state, internal::JoinSetState& join_set) {
  if (join_set.closed) return {};
  const uint64_t unawaited =
      join_set.submissions > join_set.join_nexts ? join_set.submissions - join_set.join_nexts : 0;
  // Cancellation is a side effect outside the log: done only in new
  // territory (a replayed closing JoinNext means the first run did it).
  // Repeating it after a crash is harmless: both cancels are idempotent.
  if (unawaited > 0 && !state.replaying()) {
    STELE_TRY(state.Flush());  // children must exist before they are cancelled
    const DateTime now = state.Now();
    for (const std::string& key : join_set.order) {
      auto it = join_set.unconsumed.find(key);
      if (it == join_set.unconsumed.end()) continue;
      auto cancelled = state.CancelSubmission(it->second, now);
      if (!cancelled) return state.DbFailure("cancelling " + key, std::move(cancelled).error());
    }
  }
  for (uint64_t i = 0; i < unawaited; ++i) {
    STELE_TRY(state.Step(state.JoinNextKey(join_set.id, std::nullopt, /*closing=*/true)));
    STELE_TRY(state.AwaitJoinNextResponse(join_set.id, /*closing=*/true));
  }
  join_set.closed = true;
  return {};
}

// The end of a cancelled workflow (workflow_run.h, "Cancellation"): its
// open subtree is cancelled — only in new territory, as a close does —
// then every join set is drained with closing JoinNexts, so that the
// execution finishes after its children.
Result<void, Interruption> EndCancelled(RunState& state) {
  state.BeginEndCancelled();
  if (!state.replaying()) STELE_TRY(state.CancelOpenSubtree());
  const std::vector<core::JoinSetId> join_sets = state.all_join_sets();
  for (const core::JoinSetId& id : join_sets) {
    internal::JoinSetState* join_set = state.FindJoinSet(id);
    // A channel's timeouts were cancelled above; its JoinNexts consume
    // messages, which answer no submission: nothing to drain.
    if (id.kind() == core::JoinSetKind::kMessages) {
      join_set->closed = true;
      continue;
    }
    const uint64_t unawaited = join_set->submissions > join_set->join_nexts
                                   ? join_set->submissions - join_set->join_nexts
                                   : 0;
    for (uint64_t i = 0; i < unawaited; ++i) {
      STELE_TRY(state.Step(state.JoinNextKey(id, std::nullopt, /*closing=*/true)));
      STELE_TRY(state.AwaitJoinNextResponse(id, /*closing=*/true));
    }
    join_set->closed = true;
  }
  return {};
}

core::SupportedFunctionReturnValue CancelledResult(std::string reason) {
  return core::FinishedExecutionError{core::ExecutionFailureKind::kCancelled, std::move(reason),
                                      std::nullopt};
}

}  // namespace

Result<void, Interruption> WorkflowRun::CloseJoinSet(const core::JoinSetId& join_set) {
  STELE_TRY(state_->Begin());
  internal::JoinSetState* found = state_->FindJoinSet(join_set);
  if (found == nullptr || join_set.kind() == core::JoinSetKind::kOneOff) {
    return state_->Interrupt(Kind::kConstraintViolation,
                             "close: join set " + join_set.ToString() + " was not created");
  }
  return CloseJoinSetState(*state_, *found);
}

// --- Children and delays ------------------------------------------------------------------

Result<core::ExecutionPolicy, Interruption> WorkflowRun::ChildPolicy(const ChildOptions& own) {
  core::ExecutionPolicy policy;
  policy.retry = own.retry;
  if (own.retry.jitter_percent && *own.retry.jitter_percent > 100) {
    return state_->Interrupt(Kind::kConstraintViolation,
                             "a child's retry jitter must be 0 to 100 %, got " +
                                 std::to_string(*own.retry.jitter_percent));
  }
  if (own.timeout) {
    if (own.timeout->count() <= 0) {
      return state_->Interrupt(Kind::kConstraintViolation,
                               "a child's timeout must be positive, got " +
                                   std::to_string(own.timeout->count()) + " ms");
    }
    policy.deadline =
        state_->Now() + std::chrono::duration_cast<std::chrono::microseconds>(*own.timeout);
  }
  const std::optional<DateTime>& inherited = state_->ctx.deadline;
  if (inherited && (!policy.deadline || *inherited < *policy.deadline)) policy.deadline = inherited;
  return policy;
}

Result<core::ExecutionIdDerived, Interruption> WorkflowRun::SubmitChild(
    const core::JoinSetId& join_set, const core::FunctionFqn& ffqn, core::Params params,
    const ChildOptions& own) {
  STELE_TRY(state_->Begin());
  STELE_ASSIGN_OR_RETURN(internal::JoinSetState * found, state_->OpenJoinSet(join_set, "submit"));
  STELE_ASSIGN_OR_RETURN(FunctionInfo info, FindTarget(*state_, "submit", ffqn, params));
  core::ExecutionIdDerived child =
      state_->ctx.execution_id.NextLevel(join_set, found->submissions + 1);
  const DateTime now = state_->Now();
  storage::CreateRequest create{now,
                                child,
                                ffqn,
                                params,
                                std::make_pair(execution_id(), join_set),
                                now,
                                info.component_id,
                                {},
                                std::nullopt};
  // A child inherits what remains of its parent's deadline.
  STELE_ASSIGN_OR_RETURN(create.policy, ChildPolicy(own));
  STELE_TRY(state_->Step(
      core::HistoryJoinSetRequest{join_set,
                                  core::ChildExecutionRequest{child, ffqn, std::move(params)}},
      std::move(create)));
  STELE_TRY(state_->MaybeFlush());
  return child;
}

Result<core::DelayId, Interruption> WorkflowRun::SubmitDelay(
    const core::JoinSetId& join_set, const core::HistoryEventScheduleAt& schedule_at) {
  STELE_TRY(state_->Begin());
  STELE_ASSIGN_OR_RETURN(internal::JoinSetState * found,
                         state_->OpenJoinSet(join_set, "submit delay"));
  auto expires_at = schedule_at.AsDateTime(state_->Now());
  if (!expires_at) {
    return state_->Interrupt(Kind::kTrap, "delay " + schedule_at.ToString() + " is out of range");
  }
  core::DelayId delay_id(execution_id(), join_set, found->submissions + 1);
  STELE_TRY(state_->Step(core::HistoryJoinSetRequest{
      join_set, core::DelayRequest{delay_id, *expires_at, schedule_at}}));
  STELE_TRY(state_->MaybeFlush());
  return delay_id;
}

namespace {

// A JoinNext on a join set whose submissions were all awaited records
// JoinNextTooMany (the answer is kAllProcessed): true then.
Result<bool, Interruption> RecordIfAllProcessed(RunState& state,
                                                const internal::JoinSetState& join_set,
                                                const std::optional<core::FunctionFqn>& requested) {
  if (join_set.join_nexts < state.GuestSubmissions(join_set)) return false;
  STELE_TRY(state.Step(core::HistoryJoinNextTooMany{join_set.id, requested}));
  STELE_TRY(state.MaybeFlush());
  return true;
}

// Whether `response` answers a JoinNext that asked for `requested`.
bool Matches(const JoinSetResponseValue& response,
             const std::optional<core::FunctionFqn>& requested) {
  if (!requested) return true;
  const auto* child = std::get_if<ChildResponse>(&response);
  return child != nullptr && child->ffqn == *requested;
}

// Records the JoinNext of a non-closing join_next on `join_set` and awaits
// its response: kCancelled when a cancel request interrupted it,
// kFunctionMismatch when it is not of `requested`.
CallResult<JoinSetResponseValue, JoinNextError> StepAndAwait(
    RunState& state, const core::JoinSetId& join_set,
    const std::optional<core::FunctionFqn>& requested) {
  using Inner = Result<JoinSetResponseValue, JoinNextError>;
  STELE_TRY(state.Step(state.JoinNextKey(join_set, requested, /*closing=*/false)));
  STELE_ASSIGN_OR_RETURN(std::optional<JoinSetResponseValue> awaited,
                         state.AwaitJoinNextResponse(join_set));
  if (!awaited) {
    return Inner(Unexpected(JoinNextError{JoinNextError::Kind::kCancelled, std::nullopt}));
  }
  if (!Matches(*awaited, requested)) {
    return Inner(
        Unexpected(JoinNextError{JoinNextError::Kind::kFunctionMismatch, *std::move(awaited)}));
  }
  return Inner(*std::move(awaited));
}

}  // namespace

CallResult<JoinSetResponseValue, JoinNextError> WorkflowRun::JoinNext(
    const core::JoinSetId& join_set, const std::optional<core::FunctionFqn>& requested_ffqn) {
  using Inner = Result<JoinSetResponseValue, JoinNextError>;
  STELE_TRY(state_->Begin());
  STELE_ASSIGN_OR_RETURN(internal::JoinSetState * found,
                         state_->OpenJoinSet(join_set, "join next"));
  STELE_ASSIGN_OR_RETURN(bool all_processed, RecordIfAllProcessed(*state_, *found, requested_ffqn));
  if (all_processed) {
    return Inner(Unexpected(JoinNextError{JoinNextError::Kind::kAllProcessed, std::nullopt}));
  }
  if (state_->TakeCancellation()) {
    return Inner(Unexpected(JoinNextError{JoinNextError::Kind::kCancelled, std::nullopt}));
  }
  STELE_TRY(state_->AddGraceDelay(*found));
  return StepAndAwait(*state_, join_set, requested_ffqn);
}

CallResult<std::optional<JoinSetResponseValue>, JoinNextError> WorkflowRun::JoinNextTry(
    const core::JoinSetId& join_set, const std::optional<core::FunctionFqn>& requested_ffqn) {
  using Inner = Result<std::optional<JoinSetResponseValue>, JoinNextError>;
  STELE_TRY(state_->Begin());
  STELE_ASSIGN_OR_RETURN(internal::JoinSetState * found,
                         state_->OpenJoinSet(join_set, "join next try"));
  STELE_ASSIGN_OR_RETURN(bool all_processed, RecordIfAllProcessed(*state_, *found, requested_ffqn));
  if (all_processed) {
    return Inner(Unexpected(JoinNextError{JoinNextError::Kind::kAllProcessed, std::nullopt}));
  }
  STELE_ASSIGN_OR_RETURN(bool nothing, state_->StepJoinNextTryIfNothing(*found));
  if (nothing) return Inner(std::nullopt);
  STELE_ASSIGN_OR_RETURN(auto next, StepAndAwait(*state_, join_set, requested_ffqn));
  if (!next) return Inner(Unexpected(std::move(next).error()));
  return Inner(*std::move(next));
}

CallResult<core::SupportedFunctionReturnValue, GetError> WorkflowRun::Get(
    const core::ExecutionIdDerived& child, const core::FunctionFqn& ffqn) {
  using Inner = Result<core::SupportedFunctionReturnValue, GetError>;
  STELE_TRY(state_->Begin());
  auto found = state_->ProcessedChildResult(child);
  if (!found) {
    return Inner(Unexpected(GetError{GetError::Kind::kNotFoundInProcessedResponses, {}}));
  }
  if (found->first != ffqn) {
    return Inner(Unexpected(GetError{GetError::Kind::kFunctionMismatch, found->first}));
  }
  return Inner(*found->second);
}

// --- Blocking shorthands -------------------------------------------------------------------

Result<core::SupportedFunctionReturnValue, Interruption> WorkflowRun::Call(
    const core::FunctionFqn& ffqn, core::Params params, const ChildOptions& own) {
  STELE_TRY(state_->Begin());
  STELE_ASSIGN_OR_RETURN(FunctionInfo info, FindTarget(*state_, "call", ffqn, params));
  if (state_->TakeCancellation()) return CancelledResult("the workflow is being cancelled");
  core::JoinSetId join_set = OneOffJoinSet(*state_, ffqn.function_name());
  core::ExecutionIdDerived child = execution_id().NextLevel(join_set, 1);
  const DateTime now = state_->Now();
  storage::CreateRequest create{now,
                                child,
                                ffqn,
                                params,
                                std::make_pair(execution_id(), join_set),
                                now,
                                info.component_id,
                                {},
                                std::nullopt};
  // A child inherits what remains of its parent's deadline.
  STELE_ASSIGN_OR_RETURN(create.policy, ChildPolicy(own));
  STELE_TRY(state_->Step(core::HistoryJoinSetCreate{join_set}));
  STELE_TRY(state_->Step(
      core::HistoryJoinSetRequest{join_set,
                                  core::ChildExecutionRequest{child, ffqn, std::move(params)}},
      std::move(create)));
  STELE_TRY(state_->AddGraceDelay(*state_->FindJoinSet(join_set)));
  STELE_TRY(state_->Step(state_->JoinNextKey(join_set, ffqn, /*closing=*/false)));
  STELE_ASSIGN_OR_RETURN(std::optional<JoinSetResponseValue> awaited,
                         state_->AwaitJoinNextResponse(join_set));
  if (!awaited) return CancelledResult("the workflow is being cancelled");
  JoinSetResponseValue response = *std::move(awaited);
  auto* child_response = std::get_if<ChildResponse>(&response);
  if (child_response == nullptr) {
    return state_->Interrupt(
        Kind::kNondeterminism,
        "a direct call's join set " + join_set.ToString() + " answered with a delay");
  }
  return std::move(child_response->result);
}

CallResult<DateTime, SleepCancelled> WorkflowRun::Sleep(
    const core::HistoryEventScheduleAt& schedule_at) {
  using Inner = Result<DateTime, SleepCancelled>;
  STELE_TRY(state_->Begin());
  auto expires_at = schedule_at.AsDateTime(state_->Now());
  if (!expires_at) {
    return state_->Interrupt(Kind::kTrap, "sleep " + schedule_at.ToString() + " is out of range");
  }
  if (state_->TakeCancellation()) return Inner(Unexpected(SleepCancelled{}));
  core::JoinSetId join_set = OneOffJoinSet(*state_, "sleep");
  core::DelayId delay_id(execution_id(), join_set, 1);
  STELE_TRY(state_->Step(core::HistoryJoinSetCreate{join_set}));
  STELE_ASSIGN_OR_RETURN(const core::HistoryEvent* recorded,
                         state_->Step(core::HistoryJoinSetRequest{
                             join_set, core::DelayRequest{delay_id, *expires_at, schedule_at}}));
  DateTime resolved = *expires_at;
  if (recorded != nullptr) {
    // The first run resolved the intent; replays keep its instant.
    resolved =
        std::get<core::DelayRequest>(std::get<core::HistoryJoinSetRequest>(*recorded).request)
            .expires_at;
  }
  STELE_TRY(state_->AddGraceDelay(*state_->FindJoinSet(join_set)));
  STELE_TRY(state_->Step(state_->JoinNextKey(join_set, std::nullopt, /*closing=*/false)));
  STELE_ASSIGN_OR_RETURN(std::optional<JoinSetResponseValue> awaited,
                         state_->AwaitJoinNextResponse(join_set));
  if (!awaited) return Inner(Unexpected(SleepCancelled{}));
  const auto* delay = std::get_if<DelayResponse>(&awaited.value());
  if (delay == nullptr) {
    return state_->Interrupt(Kind::kNondeterminism, "a sleep's join set " + join_set.ToString() +
                                                        " answered with a child");
  }
  if (!delay->ok) return Inner(Unexpected(SleepCancelled{}));
  return Inner(resolved);
}

// --- Fire-and-forget and stubs ----------------------------------------------------------------

Result<core::ExecutionId, Interruption> WorkflowRun::Schedule(
    const core::HistoryEventScheduleAt& schedule_at, const core::FunctionFqn& ffqn,
    core::Params params) {
  STELE_TRY(state_->Begin());
  STELE_ASSIGN_OR_RETURN(FunctionInfo info, FindTarget(*state_, "schedule", ffqn, params));
  const DateTime now = state_->Now();
  auto scheduled_at = schedule_at.AsDateTime(now);
  if (!scheduled_at) {
    return state_->Interrupt(Kind::kTrap,
                             "schedule " + schedule_at.ToString() + " is out of range");
  }
  // ULID layout: 48 bits of the root's timestamp, 80 bits from the PRNG.
  const uint64_t a = state_->prng.NextU64();
  const uint64_t b = state_->prng.NextU64();
  const uint64_t timestamp_ms = execution_id().root().TimestampMs();
  core::ExecutionId id(Ulid((timestamp_ms << 16) | (a >> 48), b));
  storage::CreateRequest create{
      now, id, ffqn, params, std::nullopt, *scheduled_at, info.component_id, {}, execution_id()};
  STELE_TRY(state_->Step(core::HistorySchedule{id, schedule_at}, std::move(create)));
  STELE_TRY(state_->MaybeFlush());
  return id;
}

CallResult<void, StubError> WorkflowRun::Stub(const core::FunctionFqn& ffqn,
                                              const core::ExecutionIdDerived& target,
                                              core::SupportedFunctionReturnValue value) {
  using Inner = Result<void, StubError>;
  STELE_TRY(state_->Begin());
  core::HistoryStub key{target, std::move(value), true};
  if (!state_->replaying()) {
    STELE_TRY(state_->Flush());  // the target may be a cached submission
    auto create = state_->deps.db->GetCreateRequest(core::ExecutionId(target));
    if (!create) {
      if (create.error().IsNotFound()) {
        return state_->Interrupt(Kind::kImportedFunctionCallError,
                                 "stub: execution " + target.ToString() + " not found");
      }
      return state_->DbFailure("reading the stub target", storage::DbErrorWrite(create.error()));
    }
    if (create->ffqn != ffqn) {
      return state_->Interrupt(Kind::kImportedFunctionCallError,
                               "stub: execution " + target.ToString() + " runs " +
                                   create->ffqn.ToString() + ", not " + ffqn.ToString());
    }
    auto [parent, join_set] = target.SplitToParts();
    auto written = storage::StubExecution(*state_->deps.db, target, parent, join_set, state_->Now(),
                                          key.result);
    if (!written) {
      const storage::DbErrorWrite& error = written.error();
      if (!error.IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kConflict) &&
          !error.IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kIllegalState)) {
        return state_->DbFailure("writing a stub", error);
      }
      key.persist_result_ok = false;
    }
  }
  STELE_ASSIGN_OR_RETURN(const core::HistoryEvent* recorded, state_->Step(key));
  const bool ok = recorded != nullptr ? std::get<core::HistoryStub>(*recorded).persist_result_ok
                                      : key.persist_result_ok;
  STELE_TRY(state_->MaybeFlush());
  if (!ok) return Inner(Unexpected(StubError{StubError::Kind::kConflict}));
  return Inner();
}

// --- Durable steps -----------------------------------------------------------------------------

Result<core::SupportedFunctionReturnValue, Interruption> WorkflowRun::RunStep(std::string_view name,
                                                                              const StepFn& fn) {
  STELE_TRY(state_->Begin());
  if (state_->replaying()) {
    STELE_ASSIGN_OR_RETURN(const core::HistoryEvent* recorded,
                           state_->Step(core::HistoryStep{std::string(name), {}}));
    return std::get<core::HistoryStep>(*recorded).result;
  }
  auto result = fn();
  if (!result) {
    return state_->Interrupt(Kind::kStepFailed,
                             "step `" + std::string(name) + "` failed: " + result.error());
  }
  STELE_TRY(state_->Step(core::HistoryStep{std::string(name), *result}));
  STELE_TRY(state_->Flush());
  return std::move(*result);
}

// --- Randomness --------------------------------------------------------------------------------

Result<uint64_t, Interruption> WorkflowRun::RandomU64(uint64_t min, uint64_t max_exclusive) {
  if (min >= max_exclusive) {
    STELE_TRY(state_->Begin());
    return state_->Interrupt(Kind::kTrap, "random u64: empty range [" + std::to_string(min) + ", " +
                                              std::to_string(max_exclusive) + ")");
  }
  return RandomU64Inclusive(min, max_exclusive - 1);
}

Result<uint64_t, Interruption> WorkflowRun::RandomU64Inclusive(uint64_t min,
                                                               uint64_t max_inclusive) {
  STELE_TRY(state_->Begin());
  if (min > max_inclusive) {
    return state_->Interrupt(Kind::kTrap, "random u64: empty range [" + std::to_string(min) + ", " +
                                              std::to_string(max_inclusive) + "]");
  }
  const uint64_t value = state_->prng.UniformInclusive(min, max_inclusive);
  STELE_TRY(state_->Step(
      core::HistoryPersist{U64Bytes(value), core::PersistKindRandomU64{min, max_inclusive}}));
  STELE_TRY(state_->MaybeFlush());
  return value;
}

Result<std::string, Interruption> WorkflowRun::RandomString(uint64_t min_length,
                                                            uint64_t max_length_exclusive) {
  STELE_TRY(state_->Begin());
  if (min_length >= max_length_exclusive || max_length_exclusive > kMaxRandomStringLength + 1) {
    return state_->Interrupt(Kind::kTrap, "random string: invalid length range [" +
                                              std::to_string(min_length) + ", " +
                                              std::to_string(max_length_exclusive) + ")");
  }
  std::string value = state_->prng.AlphanumericString(min_length, max_length_exclusive);
  STELE_TRY(state_->Step(
      core::HistoryPersist{std::vector<uint8_t>(value.begin(), value.end()),
                           core::PersistKindRandomString{min_length, max_length_exclusive}}));
  STELE_TRY(state_->MaybeFlush());
  return value;
}

// --- Time -------------------------------------------------------------------------------------

Result<DateTime, Interruption> WorkflowRun::Now() {
  STELE_TRY(state_->Begin());
  if (state_->step_time) return *state_->step_time;
  const int64_t now_ms = ToMicros(state_->Now()) / 1000;
  int64_t ms =
      state_->last_step_time ? std::max(now_ms, ToMicros(*state_->last_step_time) / 1000) : now_ms;
  STELE_ASSIGN_OR_RETURN(const core::HistoryEvent* recorded,
                         state_->Step(core::HistoryPersist{U64Bytes(static_cast<uint64_t>(ms)),
                                                           core::PersistKindTime{}}));
  if (recorded != nullptr) {
    const auto& value = std::get<core::HistoryPersist>(*recorded).value;
    if (value.size() != 8) {
      return state_->Interrupt(
          Kind::kNondeterminism,
          "a recorded step time holds " + std::to_string(value.size()) + " bytes, not 8");
    }
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(value[i]) << (8 * i);
    ms = static_cast<int64_t>(bits);
  }
  STELE_TRY(state_->MaybeFlush());
  state_->step_time = DateTimeFromMillis(ms);
  state_->last_step_time = state_->step_time;
  return *state_->step_time;
}

// --- Logging and ending
// ---------------------------------------------------------------------------

Result<void, Interruption> WorkflowRun::Log(LogLevel level, std::string_view message) {
  STELE_TRY(state_->Begin());
  if (state_->replaying() || level < GetLogLevel()) return {};
  std::string line = state_->ctx.execution_id.ToString() + ": ";
  line.append(message);
  LogMessage(level, "workflow", 0, line);
  return {};
}

executor::WorkerResult WorkflowRun::Finish(core::SupportedFunctionReturnValue value) {
  if (auto begun = state_->Begin(); !begun) return ToWorkerResult(begun.error());
  // Returning after a cancel request is the end of its cleanup.
  if (state_->cancel_requested()) {
    return ToWorkerResult(state_->Interrupt(state_->TerminatedInterruption()).error());
  }
  // Reverse creation order (docs/model.md §8.4); a copy, since closing may
  // create none but the vector must not be iterated while Step appends to
  // it.
  std::vector<core::JoinSetId> join_sets = state_->created_join_sets();
  for (auto it = join_sets.rbegin(); it != join_sets.rend(); ++it) {
    internal::JoinSetState* join_set = state_->FindJoinSet(*it);
    if (join_set == nullptr) continue;
    if (auto closed = CloseJoinSetState(*state_, *join_set); !closed) {
      return ToWorkerResult(closed.error());
    }
  }
  // A request that came while the join sets were closing.
  if (state_->cancel_requested()) {
    return ToWorkerResult(state_->Interrupt(state_->TerminatedInterruption()).error());
  }
  // Nothing is cached while replaying: new events only come past the log.
  if (state_->replaying()) {
    return ToWorkerResult(
        state_
            ->Interrupt(Kind::kNondeterminism,
                        "the workflow returned but the log holds unprocessed events, first at " +
                            state_->DescribeUnprocessed())
            .error());
  }
  auto finished = state_->WriteFinished(value);
  if (!finished) return ToWorkerResult(finished.error());
  if (*finished) return executor::WorkerResult::DbUpdated();
  return executor::WorkerResult::Ok(std::move(value), state_->version());
}

executor::WorkerResult WorkflowRun::ToWorkerResult(const Interruption& interruption) {
  if (interruption.kind == Kind::kTerminated) {
    if (auto ended = EndCancelled(*state_); !ended) return ToWorkerResult(ended.error());
    core::SupportedFunctionReturnValue value =
        state_->terminated_by_deadline()
            ? core::FinishedExecutionError{core::ExecutionFailureKind::kTimedOut,
                                           interruption.reason, std::nullopt}
            : CancelledResult(interruption.reason);
    auto finished = state_->WriteFinished(value);
    if (!finished) return ToWorkerResult(finished.error());
    if (*finished) return executor::WorkerResult::DbUpdated();
    return executor::WorkerResult::Ok(std::move(value), state_->version());
  }
  if (interruption.IsFatal() && interruption.kind != Kind::kCancelled) {
    state_->CancelUnawaitedOnFailure();  // may write the cache: read the version after it
  }
  const core::Version version = state_->version();
  auto fatal = [&](executor::FatalErrorKind kind) {
    return executor::WorkerResult::Fatal(version, kind, interruption.reason);
  };
  switch (interruption.kind) {
    case Kind::kBlocked:
    case Kind::kLeaseExpired:
    case Kind::kYielded:
      return executor::WorkerResult::DbUpdated();
    case Kind::kDbError:
      if (interruption.db_error) {
        return executor::WorkerResult::Err(version,
                                           executor::WorkerDbError{*interruption.db_error});
      }
      return executor::WorkerResult::Err(
          version,
          executor::WorkerDbError{storage::DbErrorGeneric::Uncategorized(interruption.reason)});
    case Kind::kNondeterminism:
      return fatal(executor::FatalErrorKind::kNondeterminismDetected);
    case Kind::kConstraintViolation:
      return fatal(executor::FatalErrorKind::kConstraintViolation);
    case Kind::kImportedFunctionCallError:
      return fatal(executor::FatalErrorKind::kImportedFunctionCallError);
    case Kind::kTrap:
      return fatal(executor::FatalErrorKind::kWorkflowTrap);
    case Kind::kCancelled:
      return fatal(executor::FatalErrorKind::kCancelled);
    case Kind::kStepFailed:
      return executor::WorkerResult::Err(
          version, executor::ActivityTrap{interruption.reason, std::nullopt, {}});
    case Kind::kTerminated:
      break;  // handled above
  }
  return fatal(executor::FatalErrorKind::kWorkflowTrap);
}

executor::WorkerResult WorkflowRun::Trap(std::string reason, std::optional<std::string> detail) {
  return Fail(executor::FatalErrorKind::kWorkflowTrap, std::move(reason), std::move(detail));
}

executor::WorkerResult WorkflowRun::Fail(executor::FatalErrorKind kind, std::string reason,
                                         std::optional<std::string> detail) {
  if (!state_->interruption) state_->interruption = Interruption{Kind::kTrap, reason, std::nullopt};
  state_->CancelUnawaitedOnFailure();
  return executor::WorkerResult::Fatal(state_->version(), kind, std::move(reason),
                                       std::move(detail));
}

Result<DateTime, Interruption> WorkflowRun::EnsureLease(std::chrono::milliseconds needed) {
  return state_->EnsureLease(needed);
}

}  // namespace stele::runtime::workflow
