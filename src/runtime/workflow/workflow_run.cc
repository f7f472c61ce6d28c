// Placeholder bodies of the public API; the engine lands in the next
// commits (the header is published first so the SDK can build against it).
#include "runtime/workflow/workflow_run.h"

namespace stele::runtime::workflow {

namespace internal {
class RunState {
 public:
  RunState(executor::WorkerContext c, WorkflowRunDeps d, WorkflowRunOptions o)
      : ctx(std::move(c)), deps(d), options(o) {}
  executor::WorkerContext ctx;
  WorkflowRunDeps deps;
  WorkflowRunOptions options;
  std::optional<Interruption> interruption;
};
}  // namespace internal

namespace {
Interruption NotYet() { return Interruption{Interruption::Kind::kTrap, "not implemented yet", {}}; }
}  // namespace

std::string_view InterruptionKindName(Interruption::Kind kind) {
  switch (kind) {
    case Interruption::Kind::kBlocked: return "blocked";
    case Interruption::Kind::kLeaseExpired: return "lease expired";
    case Interruption::Kind::kYielded: return "yielded";
    case Interruption::Kind::kNondeterminism: return "nondeterminism detected";
    case Interruption::Kind::kConstraintViolation: return "constraint violation";
    case Interruption::Kind::kImportedFunctionCallError: return "imported function call error";
    case Interruption::Kind::kTrap: return "workflow trap";
    case Interruption::Kind::kDbError: return "database error";
    case Interruption::Kind::kCancelled: return "cancelled";
  }
  return "unknown";
}

bool Interruption::IsFatal() const {
  switch (kind) {
    case Kind::kBlocked:
    case Kind::kLeaseExpired:
    case Kind::kYielded:
    case Kind::kDbError:
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

WorkflowRun::WorkflowRun(executor::WorkerContext ctx, WorkflowRunDeps deps,
                         WorkflowRunOptions options)
    : state_(std::make_unique<internal::RunState>(std::move(ctx), deps, options)) {}
WorkflowRun::~WorkflowRun() = default;

const core::ExecutionId& WorkflowRun::execution_id() const { return state_->ctx.execution_id; }
const core::FunctionFqn& WorkflowRun::ffqn() const { return state_->ctx.ffqn; }
const core::Params& WorkflowRun::params() const { return state_->ctx.params; }
const core::ExecutionMetadata& WorkflowRun::metadata() const { return state_->ctx.metadata; }
bool WorkflowRun::IsReplaying() const { return false; }
core::Version WorkflowRun::version() const { return state_->ctx.version; }
const std::optional<Interruption>& WorkflowRun::interruption() const {
  return state_->interruption;
}
Result<core::JoinSetId, Interruption> WorkflowRun::CreateJoinSet() { return Unexpected(NotYet()); }
CallResult<core::JoinSetId, JoinSetCreateError> WorkflowRun::CreateNamedJoinSet(std::string_view) {
  return Unexpected(NotYet());
}
Result<void, Interruption> WorkflowRun::CloseJoinSet(const core::JoinSetId&) {
  return Unexpected(NotYet());
}
Result<core::ExecutionIdDerived, Interruption> WorkflowRun::SubmitChild(const core::JoinSetId&,
                                                                        const core::FunctionFqn&,
                                                                        core::Params) {
  return Unexpected(NotYet());
}
Result<core::DelayId, Interruption> WorkflowRun::SubmitDelay(const core::JoinSetId&,
                                                             const core::HistoryEventScheduleAt&) {
  return Unexpected(NotYet());
}
CallResult<JoinSetResponseValue, JoinNextError> WorkflowRun::JoinNext(
    const core::JoinSetId&, const std::optional<core::FunctionFqn>&) {
  return Unexpected(NotYet());
}
Result<core::SupportedFunctionReturnValue, GetError> WorkflowRun::Get(
    const core::ExecutionIdDerived&, const core::FunctionFqn&) const {
  return Unexpected(GetError{});
}
Result<core::SupportedFunctionReturnValue, Interruption> WorkflowRun::Call(
    const core::FunctionFqn&, core::Params) {
  return Unexpected(NotYet());
}
CallResult<DateTime, SleepCancelled> WorkflowRun::Sleep(const core::HistoryEventScheduleAt&) {
  return Unexpected(NotYet());
}
Result<core::ExecutionId, Interruption> WorkflowRun::Schedule(const core::HistoryEventScheduleAt&,
                                                              const core::FunctionFqn&,
                                                              core::Params) {
  return Unexpected(NotYet());
}
CallResult<void, StubError> WorkflowRun::Stub(const core::FunctionFqn&,
                                              const core::ExecutionIdDerived&,
                                              core::SupportedFunctionReturnValue) {
  return Unexpected(NotYet());
}
Result<uint64_t, Interruption> WorkflowRun::RandomU64(uint64_t, uint64_t) {
  return Unexpected(NotYet());
}
Result<uint64_t, Interruption> WorkflowRun::RandomU64Inclusive(uint64_t, uint64_t) {
  return Unexpected(NotYet());
}
Result<std::string, Interruption> WorkflowRun::RandomString(uint64_t, uint64_t) {
  return Unexpected(NotYet());
}
void WorkflowRun::Log(LogLevel, std::string_view) const {}
executor::WorkerResult WorkflowRun::Finish(core::SupportedFunctionReturnValue) {
  return ToWorkerResult(NotYet());
}
executor::WorkerResult WorkflowRun::ToWorkerResult(const Interruption& interruption) const {
  return executor::WorkerResult::Fatal(version(), executor::FatalErrorKind::kWorkflowTrap,
                                       interruption.ToString());
}
executor::WorkerResult WorkflowRun::Trap(std::string reason, std::optional<std::string> detail) {
  return executor::WorkerResult::Fatal(version(), executor::FatalErrorKind::kWorkflowTrap,
                                       std::move(reason), std::move(detail));
}

}  // namespace stele::runtime::workflow
