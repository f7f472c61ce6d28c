#include "storage/request_rules.h"

#include <string>
#include <utility>
#include <variant>

namespace stele::storage {

namespace {

// (owner, join set) a requested child or delay id names, and its text.
struct Named {
  std::pair<ExecutionId, core::JoinSetId> parts;
  std::string text;
};

Named NamedBy(const core::JoinSetRequest& request) {
  if (const auto* delay = std::get_if<core::DelayRequest>(&request)) {
    return Named{delay->delay_id.SplitToParts(), delay->delay_id.ToString()};
  }
  const auto& child = std::get<core::ChildExecutionRequest>(request).child_execution_id;
  return Named{child.SplitToParts(), child.ToString()};
}

// REQUIRES: a delay's or a child's response (messages name no request).
Named NamedBy(const core::JoinSetResponse& response) {
  if (const auto* delay = std::get_if<core::DelayFinished>(&response)) {
    return Named{delay->delay_id.SplitToParts(), delay->delay_id.ToString()};
  }
  const auto& child = std::get<core::ChildExecutionFinished>(response).child_execution_id;
  return Named{child.SplitToParts(), child.ToString()};
}

const core::HistoryJoinSetRequest* AsJoinSetRequest(const AppendRequest& req) {
  const auto* history = std::get_if<core::HistoryEventRequest>(&req.event);
  return history != nullptr ? std::get_if<core::HistoryJoinSetRequest>(&history->event) : nullptr;
}

}  // namespace

Result<void, DbErrorWriteNonRetriable> ValidateCreateRequest(const CreateRequest& req) {
  if (!req.params.is_array()) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
        std::string("params must be a JSON array, got ") + req.params.type_name()));
  }
  const std::optional<core::ExecutionIdDerived> derived = req.execution_id.AsDerived();
  if (!derived) {
    if (req.parent) {
      return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
          "top-level execution " + req.execution_id.ToString() + " cannot have a parent"));
    }
    return {};
  }
  if (!req.parent || *req.parent != derived->SplitToParts()) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
        "child execution " + req.execution_id.ToString() +
        " must name the execution and join set of its id as its parent"));
  }
  return {};
}

Result<void, DbErrorWriteNonRetriable> ValidateStandaloneCreate(const CreateRequest& req) {
  STELE_TRY(ValidateCreateRequest(req));
  if (req.parent) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
        "child execution " + req.execution_id.ToString() +
        " can only be created by its parent's request"));
  }
  return {};
}

Result<void, DbErrorWriteNonRetriable> ValidateAppendRequest(const ExecutionId& execution_id,
                                                             const AppendRequest& req) {
  if (std::holds_alternative<core::Created>(req.event)) {
    return Unexpected(
        DbErrorWriteNonRetriable::ValidationFailed("cannot append a Created event; use Create"));
  }
  if (const auto* request = AsJoinSetRequest(req)) {
    Named named = NamedBy(request->request);
    if (named.parts != std::make_pair(execution_id, request->join_set_id)) {
      return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
          named.text + " does not belong to join set " + request->join_set_id.ToString() + " of " +
          execution_id.ToString()));
    }
  }
  return {};
}

Result<void, DbErrorWriteNonRetriable> ValidateChildCreation(
    const ExecutionId& parent, const std::vector<AppendRequest>& events,
    const std::vector<CreateRequest>& children) {
  for (const CreateRequest& child : children) {
    STELE_TRY(ValidateCreateRequest(child));
    if (!child.parent) continue;
    bool requested = false;
    for (const AppendRequest& event : events) {
      const auto* request = AsJoinSetRequest(event);
      if (request == nullptr) continue;
      const auto* child_request = std::get_if<core::ChildExecutionRequest>(&request->request);
      requested = child_request != nullptr &&
                  ExecutionId(child_request->child_execution_id) == child.execution_id;
      if (requested) break;
    }
    // With ValidateCreateRequest, the request's join set is the child's own.
    if (!requested || child.parent->first != parent) {
      return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
          "child execution " + child.execution_id.ToString() + " is not requested by " +
          parent.ToString() + " in the same write"));
    }
  }
  return {};
}

Result<void, DbErrorWrite> CheckResponseAddressee(const ExecutionId& execution_id,
                                                  const core::JoinSetResponseEvent& response) {
  if (const auto* message = std::get_if<core::MessageReceived>(&response.event)) {
    STELE_TRY(ValidateMessage(response.join_set_id, *message));
    return {};
  }
  if (NamedBy(response.event).parts != std::make_pair(execution_id, response.join_set_id)) {
    return Unexpected(DbErrorWrite::NotFound());
  }
  return {};
}

Result<void, DbErrorWrite> CheckChildResponse(const AppendEventsToExecution& events,
                                              const AppendResponseToExecution& response) {
  if (ExecutionId(response.child_execution_id) != events.execution_id) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
        "the response of " + response.child_execution_id.ToString() +
        " cannot be written with the events of " + events.execution_id.ToString()));
  }
  if (response.child_execution_id.SplitToParts() !=
      std::make_pair(response.parent_execution_id, response.join_set_id)) {
    return Unexpected(DbErrorWrite::NotFound());
  }
  return {};
}

Result<void, DbErrorWrite> ValidateStepWrite(const StepWrite& write) {
  const auto empty = [] {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed("empty batch"));
  };
  if (write.batch.empty() &&
      (write.outcomes.empty() || !write.children.empty() || !write.locks.empty())) {
    return empty();
  }
  for (const ChildOutcome& outcome : write.outcomes) {
    if (outcome.child.batch.empty()) return empty();
    STELE_TRY(CheckChildResponse(outcome.child, outcome.response));
  }
  STELE_TRY(ValidateChildCreation(write.execution_id, write.batch, write.children));
  return {};
}

Result<void, DbErrorWriteNonRetriable> ValidateMessage(const core::JoinSetId& join_set_id,
                                                       const core::MessageReceived& message) {
  if (join_set_id.kind() != core::JoinSetKind::kMessages ||
      !core::IsValidChannel(join_set_id.name())) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
        "a message goes to a channel's join set `m:<channel>`, not " + join_set_id.ToString()));
  }
  if (!core::IsValidMessageId(message.message_id)) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed("invalid message id"));
  }
  return {};
}

Result<AppendMessageOutcome, DbErrorWrite> RedeliveryOutcome(
    const core::JoinSetResponseEvent& existing, const core::JoinSetId& join_set_id,
    const core::MessageReceived& message) {
  const auto* before = std::get_if<core::MessageReceived>(&existing.event);
  if (before == nullptr || existing.join_set_id != join_set_id || *before != message) {
    return Unexpected(DbErrorWriteNonRetriable::Conflict());
  }
  return AppendMessageOutcome::kAlreadyDelivered;
}

DbErrorWrite FinishedRefusesMessage() {
  return DbErrorWriteNonRetriable::IllegalState("already finished");
}

core::JoinSetResponseEventOuter ChildFinishedResponse(const AppendResponseToExecution& response) {
  return core::JoinSetResponseEventOuter{
      response.created_at,
      core::JoinSetResponseEvent{
          response.join_set_id,
          core::ChildExecutionFinished{response.child_execution_id, response.finished_version,
                                       response.result}}};
}

}  // namespace stele::storage
