// ExecutionService::Submit: the one place a top-level execution is created.
#include "core/json_codec.h"
#include "service/execution_service.h"
#include "service/parse.h"

namespace stele::service {

namespace wf = runtime::workflow;

Result<std::pair<core::FunctionFqn, wf::FunctionInfo>, ServiceError> ExecutionService::CheckCall(
    std::string_view ffqn_text, const core::Json& params) const {
  STELE_ASSIGN_OR_RETURN(core::FunctionFqn ffqn, internal::ParseFfqn(ffqn_text));
  auto info = registry_.Find(ffqn);
  if (!info) {
    return Unexpected(ServiceError::NotFound("unknown ffqn `" + std::string(ffqn_text) +
                                             "`: no component exports it"));
  }
  if (info->kind == wf::FunctionKind::kActivityStub) {
    return Unexpected(ServiceError::InvalidArgument(
        "`" + std::string(ffqn_text) +
        "` is a stub activity: it is not submittable (a workflow creates its executions; "
        "write their results with stub)"));
  }
  if (!params.is_array()) {
    return Unexpected(ServiceError::InvalidArgument(
        std::string("params must be a JSON array (one element per argument), got ") +
        params.type_name()));
  }
  const size_t size = core::SerializeJson(params).size();
  if (size > options_.max_params_bytes) {
    return Unexpected(ServiceError::InvalidArgument(
        "params are " + std::to_string(size) + " bytes, over the limit of " +
        std::to_string(options_.max_params_bytes) + " bytes"));
  }
  if (info->signature) {
    auto checked = core::CheckParams(*info->signature, params);
    if (!checked) {
      return Unexpected(ServiceError::InvalidArgument("params of `" + std::string(ffqn_text) +
                                                      "`: " + checked.error()));
    }
  }
  return std::make_pair(std::move(ffqn), std::move(*info));
}

namespace {

core::Duration ToDuration(std::chrono::milliseconds ms) {
  return core::Duration::FromMillis(static_cast<uint64_t>(ms.count()));
}

Result<std::chrono::milliseconds, ServiceError> NonNegative(std::chrono::milliseconds value,
                                                            std::string_view name) {
  if (value.count() < 0) {
    return Unexpected(ServiceError::InvalidArgument(
        std::string(name) + " must not be negative, got " + std::to_string(value.count()) + " ms"));
  }
  return value;
}

Result<core::ExecutionPolicy, ServiceError> CheckPolicy(const SubmitRequest& request,
                                                        DateTime now) {
  core::ExecutionPolicy policy;
  core::RetryOverride& retry = policy.retry;
  if (request.max_retries) {
    if (*request.max_retries < 0 || *request.max_retries > 1'000'000) {
      return Unexpected(ServiceError::InvalidArgument("max_retries must be 0 to 1000000, got " +
                                                      std::to_string(*request.max_retries)));
    }
    retry.max_retries = static_cast<uint32_t>(*request.max_retries);
  }
  if (request.retry_backoff) {
    STELE_ASSIGN_OR_RETURN(auto backoff, NonNegative(*request.retry_backoff, "retry_backoff"));
    retry.retry_exp_backoff = ToDuration(backoff);
  }
  if (request.max_retry_backoff) {
    STELE_ASSIGN_OR_RETURN(auto max, NonNegative(*request.max_retry_backoff, "max_retry_backoff"));
    retry.max_backoff = ToDuration(max);
  }
  if (request.retry_jitter_percent) {
    if (*request.retry_jitter_percent < 0 || *request.retry_jitter_percent > 100) {
      return Unexpected(
          ServiceError::InvalidArgument("retry_jitter_percent must be 0 to 100, got " +
                                        std::to_string(*request.retry_jitter_percent)));
    }
    retry.jitter_percent = static_cast<uint32_t>(*request.retry_jitter_percent);
  }
  if (request.deadline && request.timeout) {
    return Unexpected(ServiceError::InvalidArgument("give a deadline or a timeout, not both"));
  }
  if (request.timeout) {
    if (request.timeout->count() <= 0) {
      return Unexpected(ServiceError::InvalidArgument(
          "timeout must be positive, got " + std::to_string(request.timeout->count()) + " ms"));
    }
    policy.deadline = now + std::chrono::duration_cast<std::chrono::microseconds>(*request.timeout);
  }
  if (request.deadline) {
    if (*request.deadline <= now) {
      return Unexpected(ServiceError::InvalidArgument(
          "deadline " + FormatRfc3339(*request.deadline) + " is not in the future"));
    }
    policy.deadline = *request.deadline;
  }
  return policy;
}

}  // namespace

Result<Submitted, ServiceError> ExecutionService::Submit(const SubmitRequest& request) {
  STELE_ASSIGN_OR_RETURN(auto call, CheckCall(request.ffqn, request.params));
  const core::FunctionFqn& ffqn = call.first;
  const wf::FunctionInfo* info = &call.second;
  const core::Json& params = request.params;
  core::ExecutionId id = core::ExecutionId::Generate();
  if (request.execution_id) {
    STELE_ASSIGN_OR_RETURN(id, internal::ParseExecutionId(*request.execution_id));
    if (!id.IsTopLevel()) {
      return Unexpected(ServiceError::InvalidArgument(
          "execution id `" + *request.execution_id +
          "` is a child id; a submission needs a top-level E_<ULID>"));
    }
  }
  const DateTime now = options_.clock->Now();
  STELE_ASSIGN_OR_RETURN(core::ExecutionPolicy policy, CheckPolicy(request, now));
  storage::CreateRequest create{now,
                                id,
                                ffqn,
                                params,
                                std::nullopt,
                                request.scheduled_at.value_or(now),
                                info->component_id,
                                {},
                                std::nullopt,
                                std::move(policy)};
  auto created = api_->Create(create);
  if (created) return Submitted{id, true};
  if (!created.error().IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kIllegalState)) {
    return Unexpected(FromWrite(created.error(), "submit"));
  }
  // The id exists: the same submission again is idempotent.
  auto existing = api_->GetCreateRequest(id);
  if (!existing) return Unexpected(FromRead(existing.error(), "submit"));
  if (existing->ffqn == ffqn && existing->params == params) return Submitted{id, false};
  return Unexpected(ServiceError::Conflict("execution " + id.ToString() +
                                           " exists with another ffqn or other params"));
}

}  // namespace stele::service
