// ExecutionService writes on existing executions: Cancel, CancelDelay,
// Stub, Upgrade.
#include "base/log.h"
#include "executor/cancel_registry.h"
#include "service/execution_service.h"
#include "service/parse.h"
#include "storage/operations.h"

namespace stele::service {

namespace {

CancelOutcome FromStorage(storage::CancelOutcome outcome) {
  return outcome == storage::CancelOutcome::kCancelled ? CancelOutcome::kCancelled
                                                       : CancelOutcome::kAlreadyFinished;
}

bool IsWorkflow(core::ComponentType type) {
  return core::IsWorkflowComponentType(type);
}

}  // namespace

Result<CancelOutcome, ServiceError> ExecutionService::Cancel(std::string_view text) {
  if (text.starts_with("Delay_")) return CancelDelay(text);
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  const std::string what = "cancel " + id.ToString();
  auto created = api_->GetCreateRequest(id);
  if (!created) return Unexpected(FromRead(created.error(), what));
  if (IsWorkflow(created->component_id.component_type)) {
    return Unexpected(ServiceError::InvalidArgument(
        "execution " + id.ToString() + " is a workflow; only activities and delays can be "
        "cancelled"));
  }
  auto outcome = executor::CancelActivity(*api_, cancels_.get(), id, options_.clock->Now());
  if (!outcome) return Unexpected(FromWrite(outcome.error(), what));
  return FromStorage(*outcome);
}

Result<CancelOutcome, ServiceError> ExecutionService::CancelDelay(std::string_view text) {
  STELE_ASSIGN_OR_RETURN(core::DelayId delay, internal::ParseDelayId(text));
  auto outcome = storage::CancelDelay(*api_, delay, options_.clock->Now());
  if (!outcome) return Unexpected(FromWrite(outcome.error(), "cancel " + delay.ToString()));
  return FromStorage(*outcome);
}

Result<void, ServiceError> ExecutionService::Stub(
    std::string_view text, const core::SupportedFunctionReturnValue& result) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  const std::string what = "stub " + id.ToString();
  auto derived = id.AsDerived();
  if (!derived) {
    return Unexpected(ServiceError::InvalidArgument(
        "execution " + id.ToString() +
        " is top-level; only child executions of stub activities can be stubbed"));
  }
  auto created = api_->GetCreateRequest(id);
  if (!created) return Unexpected(FromRead(created.error(), what));
  if (created->component_id.component_type != core::ComponentType::kActivityStub) {
    return Unexpected(ServiceError::InvalidArgument("execution " + id.ToString() + " runs " +
                                                    created->ffqn.ToString() +
                                                    ", which is not a stub activity"));
  }
  if (const core::FunctionSignature* signature = Signature(created->ffqn)) {
    Result<void, std::string> checked;
    if (const auto* ok = std::get_if<core::ReturnValueOk>(&result)) {
      checked = core::CheckReturnValue(*signature, *ok);
    } else if (const auto* err = std::get_if<core::ReturnValueErr>(&result)) {
      checked = core::CheckReturnValue(*signature, *err);
    }
    if (!checked) {
      return Unexpected(ServiceError::InvalidArgument("result of `" + created->ffqn.ToString() +
                                                      "`: " + checked.error()));
    }
  }
  auto [parent, join_set] = derived->SplitToParts();
  auto stubbed =
      storage::StubExecution(*api_, *derived, parent, join_set, options_.clock->Now(), result);
  if (stubbed) return {};
  if (stubbed.error().IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kConflict)) {
    return Unexpected(ServiceError::Conflict("execution " + id.ToString() +
                                             " holds a different result already"));
  }
  return Unexpected(FromWrite(stubbed.error(), what));
}

Result<void, ServiceError> ExecutionService::Upgrade(std::string_view text,
                                                     std::string_view old_digest_text,
                                                     std::string_view new_digest_text,
                                                     bool force) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  STELE_ASSIGN_OR_RETURN(auto old_digest, internal::ParseDigest(old_digest_text, "old digest"));
  STELE_ASSIGN_OR_RETURN(auto new_digest, internal::ParseDigest(new_digest_text, "new digest"));
  const bool served = Serves(new_digest);
  if (!served && !force) {
    return Unexpected(ServiceError::Conflict(
        "no component of this server serves digest " + new_digest.ToString() + ": execution " +
        id.ToString() + " would wait for it forever (upgrade with force to move it anyway)"));
  }
  auto upgraded = api_->UpgradeExecutionComponent(id, old_digest, new_digest);
  if (upgraded) {
    if (!served) {
      STELE_LOG(kWarn, "execution " << id.ToString() << " was moved to component digest "
                                    << new_digest.ToString()
                                    << ", which no component of this process serves: it waits "
                                       "until one does (gauge stele_executions_unserved)");
    }
    return {};
  }
  if (upgraded.error().IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kConflict)) {
    return Unexpected(ServiceError::Conflict("execution " + id.ToString() +
                                             " does not run component digest " +
                                             old_digest.ToString()));
  }
  return Unexpected(FromWrite(upgraded.error(), "upgrade " + id.ToString()));
}

}  // namespace stele::service
