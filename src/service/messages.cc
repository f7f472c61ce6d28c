// ExecutionService: messages in (SendMessage) and published values out
// (ListValues, GetValue); docs/model.md §8.6, docs/api.md "Messages".
#include <algorithm>
#include <map>

#include "base/ulid.h"
#include "core/json_codec.h"
#include "service/execution_service.h"
#include "service/parse.h"

namespace stele::service {

namespace {

// What a read of a log found so far: the last value of each key, and the
// version the next read starts at.
struct ValuesSoFar {
  std::map<std::string, PublishedValue> by_key;
  core::Version next{0};
};

// Reads the Publish events of `id` from `values.next` on.
Result<void, ServiceError> ReadValues(storage::DbExternalApi& api, const core::ExecutionId& id,
                                      ValuesSoFar& values) {
  constexpr core::Version::Type kPage = 1000;
  for (;;) {
    auto page = api.ListExecutionEvents(id, values.next, kPage, false);
    if (!page) return Unexpected(FromRead(page.error(), "execution " + id.ToString()));
    for (core::ExecutionEvent& event : *page) {
      values.next = event.version.Increment();
      auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
      auto* publish =
          history != nullptr ? std::get_if<core::HistoryPublish>(&history->event) : nullptr;
      if (publish == nullptr) continue;
      values.by_key.insert_or_assign(
          publish->key,
          PublishedValue{publish->key, std::move(publish->value), event.version, event.created_at});
    }
    if (page->size() < kPage) return {};
  }
}

Result<core::JoinSetId, ServiceError> ParseChannel(std::string_view channel) {
  auto id = core::ChannelJoinSet(channel);
  if (!id || !core::IsValidChannel(channel)) {
    return Unexpected(ServiceError::InvalidArgument("invalid channel: 1 to " +
                                                    std::to_string(core::kMaxChannelLength) +
                                                    " ASCII letters, digits, `-` or `/`"));
  }
  return *std::move(id);
}

Result<void, ServiceError> CheckValueKey(std::string_view key) {
  if (!core::IsValidValueKey(key)) {
    return Unexpected(ServiceError::InvalidArgument("invalid value key: 1 to " +
                                                    std::to_string(core::kMaxChannelLength) +
                                                    " ASCII letters, digits, `-` or `/`"));
  }
  return {};
}

}  // namespace

Result<MessageSent, ServiceError> ExecutionService::SendMessage(const SendMessageRequest& request) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(request.execution_id));
  STELE_ASSIGN_OR_RETURN(core::JoinSetId join_set, ParseChannel(request.channel));
  std::string message_id = request.message_id.value_or("msg_" + GenerateUlid().ToString());
  if (!core::IsValidMessageId(message_id)) {
    return Unexpected(ServiceError::InvalidArgument(
        "invalid message id: 1 to " + std::to_string(core::kMaxMessageIdLength) +
        " ASCII letters, digits, `_`, `.`, `:`, `@`, `/` or `-`"));
  }
  const size_t size = core::SerializeJson(request.body).size();
  if (size > options_.max_params_bytes) {
    return Unexpected(ServiceError::InvalidArgument(
        "the message body is " + std::to_string(size) + " bytes, over the limit of " +
        std::to_string(options_.max_params_bytes) + " bytes"));
  }
  const std::string what = "execution " + id.ToString();
  auto delivered = api_->AppendMessage(options_.clock->Now(), id, join_set,
                                       core::MessageReceived{message_id, request.body});
  if (!delivered) {
    const storage::DbErrorWrite& error = delivered.error();
    if (error.IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kIllegalState)) {
      return Unexpected(ServiceError::AlreadyFinished(
          what + " is already finished; the message was not delivered"));
    }
    if (error.IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kConflict)) {
      return Unexpected(ServiceError::Conflict("message id `" + message_id + "` of " + what +
                                               " was used with another channel or body"));
    }
    return Unexpected(FromWrite(error, what));
  }
  const bool now = *delivered == storage::AppendMessageOutcome::kDelivered;
  if (now) messages_sent_->fetch_add(1, std::memory_order_relaxed);
  return MessageSent{std::move(message_id), now};
}

Result<std::vector<PublishedValue>, ServiceError> ExecutionService::ListValues(
    std::string_view execution_id) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(execution_id));
  ValuesSoFar values;
  STELE_TRY(ReadValues(*api_, id, values));
  std::vector<PublishedValue> out;
  out.reserve(values.by_key.size());
  for (auto& [key, value] : values.by_key) out.push_back(std::move(value));
  return out;
}

Result<PublishedValue, ServiceError> ExecutionService::GetValue(std::string_view execution_id,
                                                                std::string_view key,
                                                                const ValueWait& wait,
                                                                const CancellationToken& cancel) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(execution_id));
  STELE_TRY(CheckValueKey(key));
  if (wait.timeout.count() < 0) {
    return Unexpected(ServiceError::InvalidArgument("the wait must not be negative"));
  }
  const std::string what = "execution " + id.ToString();
  const std::string name(key);
  auto fits = [&](const PublishedValue& value) {
    return !wait.after_version || value.version > *wait.after_version;
  };
  const auto deadline = std::chrono::steady_clock::now() + wait.timeout;
  ValuesSoFar values;
  // Only a value published after `after_version` can answer: the log is
  // read from there (a reader following a long-running workflow does not
  // read its whole log again at every value).
  if (wait.after_version) values.next = wait.after_version->Increment();
  for (;;) {
    // Finished first, then the log: a value published before the end is
    // in the read that follows.
    auto state = api_->GetPendingState(id);
    if (!state) return Unexpected(FromRead(state.error(), what));
    STELE_TRY(ReadValues(*api_, id, values));
    auto found = values.by_key.find(name);
    if (found != values.by_key.end() && fits(found->second)) return found->second;
    if (state->IsFinished()) {
      return Unexpected(ServiceError::NotFound(
          what + " finished without publishing `" + name + "`" +
          (wait.after_version ? " after version " + wait.after_version->ToString() : "")));
    }
    const auto now = std::chrono::steady_clock::now();
    if (wait.timeout.count() == 0) {
      return Unexpected(ServiceError::NotFound(
          what + " has published no value `" + name + "`" +
          (wait.after_version ? " after version " + wait.after_version->ToString() : "")));
    }
    if (now >= deadline) {
      return Unexpected(ServiceError::Timeout("no value `" + name + "` of " + what + " within " +
                                              std::to_string(wait.timeout.count()) + " ms"));
    }
    // Sleeps until a Publish after what was read (of any key: the loop
    // reads on from there) or the end commits; a timeout is answered by
    // the deadline check above. Each read starts where the last one ended.
    auto woken = api_->WaitForPublish(id, values.next, storage::WaitOptions{deadline, cancel});
    if (!woken && woken.error().IsTimeout() &&
        woken.error().timeout() == storage::TimeoutOutcome::kCancel) {
      return Unexpected(
          ServiceError::Cancelled("the wait for `" + name + "` of " + what + " was cancelled"));
    }
    if (!woken && !woken.error().IsTimeout()) {
      return Unexpected(FromRead(woken.error().read(), what));
    }
  }
}

}  // namespace stele::service
