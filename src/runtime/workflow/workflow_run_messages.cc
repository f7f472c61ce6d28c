// WorkflowRun's messages and published values (workflow_run.h, "Messages
// and published values"; docs/model.md §8.6): receiving from a channel's
// join set, publishing a value, sending a message to another execution.
#include <string>
#include <utility>

#include "core/json_codec.h"
#include "runtime/workflow/run_state.h"
#include "runtime/workflow/workflow_run.h"
#include "storage/operations.h"

namespace stele::runtime::workflow {

namespace {

using MessageKind = Interruption::Kind;

// The join set of `channel`, known to the run from now on; an invalid
// channel is a workflow trap (the guest passed it).
Result<internal::JoinSetState*, Interruption> ChannelState(internal::RunState& state,
                                                           std::string_view what,
                                                           std::string_view channel) {
  auto id = core::ChannelJoinSet(channel);
  if (!id) {
    return state.Interrupt(MessageKind::kTrap,
                           std::string(what) + ": invalid channel: " + id.error().message);
  }
  return &state.ChannelJoinSet(*id);
}

// A body or value over the size limit of params ends the execution, as
// oversized params of a child do.
Result<void, Interruption> CheckMessageSize(internal::RunState& state, std::string_view what,
                                            const core::Json& value) {
  if (state.options.max_params_bytes == 0) return {};
  const size_t bytes = core::SerializeJson(value).size();
  if (bytes > state.options.max_params_bytes) {
    return state.Interrupt(MessageKind::kConstraintViolation,
                           std::string(what) + " is " + std::to_string(bytes) +
                               " bytes, over the limit of " +
                               std::to_string(state.options.max_params_bytes));
  }
  return {};
}

// What a JoinNext of a channel's join set consumed: a message, the
// receive's own timeout (true), or an earlier receive's timer answered
// after that receive ended (false: the caller awaits the next response).
struct ChannelConsumed {
  std::optional<MessageResponse> message;
  bool timed_out = false;
};

ChannelConsumed ClassifyChannelResponse(JoinSetResponseValue response,
                                        const std::optional<core::DelayId>& timer) {
  if (auto* message = std::get_if<MessageResponse>(&response)) {
    return ChannelConsumed{std::move(*message), false};
  }
  const auto* delay = std::get_if<DelayResponse>(&response);
  return ChannelConsumed{std::nullopt, delay != nullptr && timer && delay->delay_id == *timer};
}

// Whether a JoinNext just stepped (`recorded` null: written now) takes
// its message for the first time: it is new, or the log ends with it (an
// earlier run blocked on it and unloaded before the message came). A
// JoinNext that later events follow was consumed by an earlier run.
bool ConsumesFirst(const internal::RunState& state, const core::HistoryEvent* recorded) {
  return recorded == nullptr || !state.replaying();
}

// Counts a message consumed for the first time (ConsumesFirst). A run that
// dies after it took a message and before it wrote its next step counts
// it again in the run that takes it over: the counter is a rate, not a
// ledger.
void CountConsumed(internal::RunState& state, bool first) {
  if (first && state.options.messages_consumed != nullptr) {
    state.options.messages_consumed->fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

CallResult<Message, ReceiveError> WorkflowRun::Receive(
    std::string_view channel, const std::optional<core::HistoryEventScheduleAt>& timeout) {
  using Inner = Result<Message, ReceiveError>;
  STELE_TRY(state_->Begin());
  STELE_ASSIGN_OR_RETURN(internal::JoinSetState * found, ChannelState(*state_, "receive", channel));
  const core::JoinSetId join_set = found->id;
  std::optional<DateTime> expires_at;
  if (timeout) {
    auto resolved = timeout->AsDateTime(state_->Now());
    if (!resolved) {
      return state_->Interrupt(MessageKind::kTrap,
                               "receive timeout " + timeout->ToString() + " is out of range");
    }
    expires_at = *resolved;
  }
  if (state_->TakeCancellation()) {
    return Inner(Unexpected(ReceiveError{ReceiveError::Kind::kCancelled}));
  }
  STELE_TRY(state_->AddGraceDelay(*found));
  std::optional<core::DelayId> timer;
  if (timeout) {
    core::DelayId delay_id(execution_id(), join_set, found->submissions + 1);
    STELE_TRY(state_->Step(core::HistoryJoinSetRequest{
        join_set, core::DelayRequest{delay_id, *expires_at, *timeout}}));
    timer = delay_id;
  }
  for (;;) {
    STELE_ASSIGN_OR_RETURN(
        const core::HistoryEvent* recorded,
        state_->Step(state_->JoinNextKey(join_set, std::nullopt, /*closing=*/false)));
    const bool first = ConsumesFirst(*state_, recorded);
    STELE_ASSIGN_OR_RETURN(std::optional<JoinSetResponseValue> awaited,
                           state_->AwaitJoinNextResponse(join_set));
    if (!awaited) return Inner(Unexpected(ReceiveError{ReceiveError::Kind::kCancelled}));
    ChannelConsumed consumed = ClassifyChannelResponse(*std::move(awaited), timer);
    if (consumed.timed_out) return Inner(Unexpected(ReceiveError{ReceiveError::Kind::kTimedOut}));
    if (!consumed.message) continue;
    CountConsumed(*state_, first);
    if (timer && !state_->replaying()) {
      // The message won: its timer goes now rather than firing later into
      // the channel (a later receive would skip its response). The request
      // must be written before it is cancelled. Repeated after a crash, it
      // is idempotent.
      STELE_TRY(state_->Flush());
      if (auto cancelled = storage::CancelDelay(*state_->deps.db, *timer, state_->Now());
          !cancelled) {
        return state_->DbFailure("cancelling the receive timeout", std::move(cancelled).error());
      }
    }
    return Inner(Message{std::move(consumed.message->message_id), join_set.name(),
                         std::move(consumed.message->body)});
  }
}

CallResult<std::optional<Message>, ReceiveError> WorkflowRun::TryReceive(std::string_view channel) {
  using Inner = Result<std::optional<Message>, ReceiveError>;
  STELE_TRY(state_->Begin());
  STELE_ASSIGN_OR_RETURN(internal::JoinSetState * found,
                         ChannelState(*state_, "try receive", channel));
  const core::JoinSetId join_set = found->id;
  for (;;) {
    STELE_ASSIGN_OR_RETURN(bool nothing, state_->StepJoinNextTryIfNothing(*found));
    if (nothing) return Inner(std::nullopt);
    STELE_ASSIGN_OR_RETURN(
        const core::HistoryEvent* recorded,
        state_->Step(state_->JoinNextKey(join_set, std::nullopt, /*closing=*/false)));
    const bool first = ConsumesFirst(*state_, recorded);
    STELE_ASSIGN_OR_RETURN(std::optional<JoinSetResponseValue> awaited,
                           state_->AwaitJoinNextResponse(join_set));
    if (!awaited) return Inner(Unexpected(ReceiveError{ReceiveError::Kind::kCancelled}));
    ChannelConsumed consumed = ClassifyChannelResponse(*std::move(awaited), std::nullopt);
    if (!consumed.message) continue;  // an earlier receive's timer
    CountConsumed(*state_, first);
    return Inner(Message{std::move(consumed.message->message_id), join_set.name(),
                         std::move(consumed.message->body)});
  }
}

Result<void, Interruption> WorkflowRun::PublishValue(std::string_view key, core::Json value) {
  STELE_TRY(state_->Begin());
  if (!core::IsValidValueKey(key)) {
    return state_->Interrupt(MessageKind::kTrap, "publish: invalid key `" +
                                                     std::string(key.substr(0, 64)) + "`: 1 to " +
                                                     std::to_string(core::kMaxChannelLength) +
                                                     " ASCII letters, digits, `-` or `/`");
  }
  STELE_TRY(CheckMessageSize(*state_, "the value of `" + std::string(key) + "`", value));
  STELE_TRY(state_->Step(core::HistoryPublish{std::string(key), std::move(value)}));
  // Readers see it once the call returns (a replay writes nothing here).
  STELE_TRY(state_->Flush());
  return {};
}

CallResult<void, SendError> WorkflowRun::SendMessage(const core::ExecutionId& target,
                                                     std::string_view channel, core::Json body) {
  using Inner = Result<void, SendError>;
  STELE_TRY(state_->Begin());
  auto join_set = core::ChannelJoinSet(channel);
  if (!join_set) {
    return state_->Interrupt(MessageKind::kTrap,
                             "send message: invalid channel: " + join_set.error().message);
  }
  STELE_TRY(CheckMessageSize(*state_, "the message body", body));
  core::HistorySendMessage key{
      target, std::string(channel),
      execution_id().ToString() + "@" + std::to_string(state_->sends() + 1), std::move(body),
      core::SendOutcome::kDelivered};
  if (state_->Recorded() == nullptr) {
    // The target may be an execution this run scheduled and still caches.
    STELE_TRY(state_->Flush());
    auto delivered = state_->deps.db->AppendMessage(
        state_->Now(), target, *join_set, core::MessageReceived{key.message_id, key.body});
    if (delivered && *delivered == storage::AppendMessageOutcome::kDelivered &&
        state_->options.messages_sent != nullptr) {
      state_->options.messages_sent->fetch_add(1, std::memory_order_relaxed);
    }
    if (!delivered) {
      const storage::DbErrorWrite& error = delivered.error();
      if (error.IsNotFound()) {
        key.outcome = core::SendOutcome::kNotFound;
      } else if (error.IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kIllegalState)) {
        key.outcome = core::SendOutcome::kAlreadyFinished;
      } else if (error.IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kConflict)) {
        // Someone else delivered another message under this run's id.
        return state_->Interrupt(MessageKind::kImportedFunctionCallError,
                                 "send message: message id " + key.message_id + " of " +
                                     target.ToString() + " holds another message");
      } else {
        return state_->DbFailure("sending a message", error);
      }
    }
  }
  STELE_ASSIGN_OR_RETURN(const core::HistoryEvent* recorded, state_->Step(key));
  const core::SendOutcome outcome =
      recorded != nullptr ? std::get<core::HistorySendMessage>(*recorded).outcome : key.outcome;
  STELE_TRY(state_->MaybeFlush());
  switch (outcome) {
    case core::SendOutcome::kDelivered:
      return Inner();
    case core::SendOutcome::kNotFound:
      return Inner(Unexpected(SendError{SendError::Kind::kNotFound}));
    case core::SendOutcome::kAlreadyFinished:
      return Inner(Unexpected(SendError{SendError::Kind::kAlreadyFinished}));
  }
  return Inner();
}

}  // namespace stele::runtime::workflow
