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

namespace {

// A value wait between its looks (GetValue, GetValueAsync).
struct ValueLook {
  core::ExecutionId id;
  std::string name;
  ValueWait wait;
  std::string what;
  std::chrono::steady_clock::time_point deadline;
  ValuesSoFar values;

  ServiceError TimeoutError() const {
    return ServiceError::Timeout("no value `" + name + "` of " + what + " within " +
                                 std::to_string(wait.timeout.count()) + " ms");
  }
  ServiceError CancelledError() const {
    return ServiceError::Cancelled("the wait for `" + name + "` of " + what + " was cancelled");
  }
};

// Reads on from `look.values.next`: the answer, or nullopt to wait for a
// Publish (of any key: the next look reads on from there) or the end.
std::optional<Result<PublishedValue, ServiceError>> LookForValue(storage::DbExternalApi& api,
                                                                 ValueLook& look) {
  // Finished first, then the log: a value published before the end is in
  // the read that follows.
  auto state = api.GetPendingState(look.id);
  if (!state) return Unexpected(FromRead(state.error(), look.what));
  if (auto read = ReadValues(api, look.id, look.values); !read) {
    return Unexpected(std::move(read).error());
  }
  auto found = look.values.by_key.find(look.name);
  const auto& after = look.wait.after_version;
  if (found != look.values.by_key.end() && (!after || found->second.version > *after)) {
    return found->second;
  }
  if (state->IsFinished()) {
    return Unexpected(ServiceError::NotFound(look.what + " finished without publishing `" +
                                             look.name + "`" +
                                             (after ? " after version " + after->ToString() : "")));
  }
  if (look.wait.timeout.count() == 0) {
    return Unexpected(ServiceError::NotFound(look.what + " has published no value `" + look.name +
                                             "`" +
                                             (after ? " after version " + after->ToString() : "")));
  }
  if (std::chrono::steady_clock::now() >= look.deadline) return Unexpected(look.TimeoutError());
  return std::nullopt;
}

}  // namespace

Result<PublishedValue, ServiceError> ExecutionService::GetValue(std::string_view execution_id,
                                                                std::string_view key,
                                                                const ValueWait& wait,
                                                                const CancellationToken& cancel) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(execution_id));
  STELE_TRY(CheckValueKey(key));
  if (wait.timeout.count() < 0) {
    return Unexpected(ServiceError::InvalidArgument("the wait must not be negative"));
  }
  ValueLook look{id,
                 std::string(key),
                 wait,
                 "execution " + id.ToString(),
                 std::chrono::steady_clock::now() + wait.timeout,
                 {}};
  // Only a value published after `after_version` can answer: the log is
  // read from there (a reader following a long-running workflow does not
  // read its whole log again at every value).
  if (wait.after_version) look.values.next = wait.after_version->Increment();
  for (;;) {
    if (auto out = LookForValue(*api_, look)) return std::move(*out);
    // Sleeps until a Publish after what was read or the end commits; a
    // timeout is answered by the next look. Each read starts where the
    // last one ended.
    auto woken =
        api_->WaitForPublish(id, look.values.next, storage::WaitOptions{look.deadline, cancel});
    if (!woken && woken.error().IsTimeout() &&
        woken.error().timeout() == storage::TimeoutOutcome::kCancel) {
      return Unexpected(look.CancelledError());
    }
    if (!woken && !woken.error().IsTimeout()) {
      return Unexpected(FromRead(woken.error().read(), look.what));
    }
  }
}

Result<std::shared_ptr<AsyncWait>, ServiceError> ExecutionService::GetValueAsync(
    std::string_view execution_id, std::string_view key, const ValueWait& wait,
    const CancellationToken& cancel, PostFn post,
    std::function<void(Result<PublishedValue, ServiceError>)> done) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(execution_id));
  STELE_TRY(CheckValueKey(key));
  if (wait.timeout.count() < 0) {
    return Unexpected(ServiceError::InvalidArgument("the wait must not be negative"));
  }
  // Touched by the attempts and watches only, one at a time (async_wait.h);
  // the error makers read its immutable fields.
  auto look = std::make_shared<ValueLook>(ValueLook{id,
                                                    std::string(key),
                                                    wait,
                                                    "execution " + id.ToString(),
                                                    std::chrono::steady_clock::now() + wait.timeout,
                                                    {}});
  if (wait.after_version) look->values.next = wait.after_version->Increment();
  storage::DbExternalApi* api = api_.get();
  internal::AsyncWaitSpec<PublishedValue> spec;
  spec.attempt = [api, look] { return LookForValue(*api, *look); };
  spec.watch = [api, look](storage::WatchCallback fired) {
    return api->WatchPublish(look->id, look->values.next, std::move(fired));
  };
  if (wait.timeout.count() > 0) spec.deadline = look->deadline;
  spec.timeout_error = [look] { return look->TimeoutError(); };
  spec.cancelled_error = [look] { return look->CancelledError(); };
  spec.watch_error = [look](const storage::DbErrorRead& error) {
    return FromRead(error, look->what);
  };
  spec.cancel = cancel;
  spec.post = std::move(post);
  spec.done = std::move(done);
  return async_waits_->Start(std::move(spec));
}

}  // namespace stele::service
