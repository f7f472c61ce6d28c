#include "core/execution_event.h"

#include <iterator>
#include <string>

#include "core/display_internal.h"

namespace stele::core {
namespace {

// 9999-12-31T23:59:59.999999Z: the last instant RFC 3339 can write. A
// resolved schedule beyond it could be stored but never read back.
constexpr int64_t kMaxRfc3339Micros = int64_t{253'402'300'800} * 1'000'000 - 1;

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

using display_internal::BacktickQuoted;

std::string JoinSetRequestToString(const JoinSetRequest& request) {
  return std::visit(Overloaded{
                        [](const DelayRequest& r) {
                          return "DelayRequest(" + r.delay_id.ToString() +
                                 ", expires_at: " + BacktickQuoted(r.expires_at) +
                                 ", schedule_at: `" + r.schedule_at.ToString() + "`)";
                        },
                        [](const ChildExecutionRequest& r) {
                          return "ChildExecutionRequest(" + r.child_execution_id.ToString() + ", " +
                                 r.target_ffqn.ToString() + ", params: " +
                                 r.params.dump(-1, ' ', false, Json::error_handler_t::replace) +
                                 ")";
                        },
                    },
                    request);
}

std::string HistoryEventToString(const HistoryEvent& event) {
  return std::visit(
      Overloaded{
          [](const HistoryPersist&) { return std::string("Persist"); },
          [](const HistoryJoinSetCreate& e) {
            return "JoinSetCreate(" + e.join_set_id.ToString() + ")";
          },
          [](const HistoryJoinSetRequest& e) {
            return "JoinSetRequest(" + JoinSetRequestToString(e.request) + ")";
          },
          [](const HistoryJoinNext& e) { return "JoinNext(" + e.join_set_id.ToString() + ")"; },
          [](const HistoryJoinNextTooMany& e) {
            return "JoinNextTooMany(" + e.join_set_id.ToString() + ")";
          },
          [](const HistorySchedule& e) {
            return "Schedule(" + e.execution_id.ToString() + ", " + e.schedule_at.ToString() + ")";
          },
          [](const HistoryStub& e) { return "Stub(" + e.target_execution_id.ToString() + ")"; },
          [](const HistoryStep& e) { return "Step(" + e.name + ")"; },
          [](const HistoryCancelRequest& e) {
            return std::string(e.terminate ? "CancelRequest(terminate)" : "CancelRequest");
          },
          [](const HistoryJoinNextTry& e) {
            return "JoinNextTry(" + e.join_set_id.ToString() + ")";
          },
          [](const HistoryPublish& e) { return "Publish(" + e.key + ")"; },
          [](const HistorySendMessage& e) {
            return "SendMessage(" + e.target_execution_id.ToString() + ", " + e.channel + ", " +
                   e.message_id + ")";
          },
      },
      event);
}

}  // namespace

Result<DateTime, HistoryEventScheduleAt::OutOfRangeError> HistoryEventScheduleAt::AsDateTime(
    DateTime now) const {
  if (const auto* at = std::get_if<ScheduleAtTime>(&value)) return at->at;
  const auto* in = std::get_if<ScheduleIn>(&value);
  if (in == nullptr) return now;
  const std::optional<int64_t> delta = in->in.ToMicros();
  int64_t resolved = 0;
  if (!delta || __builtin_add_overflow(ToMicros(now), *delta, &resolved) ||
      resolved > kMaxRfc3339Micros) {
    return Unexpected(OutOfRangeError{});
  }
  return DateTimeFromMicros(resolved);
}

std::string HistoryEventScheduleAt::ToString() const {
  return std::visit(Overloaded{
                        [](const ScheduleNow&) { return std::string("Now"); },
                        [](const ScheduleAtTime& a) { return "At(" + BacktickQuoted(a.at) + ")"; },
                        [](const ScheduleIn& i) { return "In(" + i.in.ToString() + ")"; },
                    },
                    value);
}

std::string_view ExecutionRequestVariantName(const ExecutionRequest& request) {
  static constexpr std::string_view kNames[] = {
      "Created",      "Locked", "Unlocked", "TemporarilyFailed", "TemporarilyTimedOut", "Finished",
      "HistoryEvent", "Paused", "Resumed"};
  static_assert(std::size(kNames) == std::variant_size_v<ExecutionRequest>);
  return kNames[request.index()];
}

std::string_view ExecutionRequestVariantTag(const ExecutionRequest& request) {
  static constexpr std::string_view kTags[] = {"created",
                                               "locked",
                                               "unlocked",
                                               "temporarily_failed",
                                               "temporarily_timed_out",
                                               "finished",
                                               "history_event",
                                               "paused",
                                               "resumed"};
  static_assert(std::size(kTags) == std::variant_size_v<ExecutionRequest>);
  return kTags[request.index()];
}

std::string_view HistoryEventTypeTag(const HistoryEvent& event) {
  static constexpr std::string_view kTags[] = {"persist",
                                               "join_set_create",
                                               "join_set_request",
                                               "join_next",
                                               "join_next_too_many",
                                               "schedule",
                                               "stub",
                                               "step",
                                               "cancel_request",
                                               "join_next_try",
                                               "publish",
                                               "send_message"};
  static_assert(std::size(kTags) == std::variant_size_v<HistoryEvent>);
  return kTags[event.index()];
}

bool IsTemporaryEvent(const ExecutionRequest& request) {
  return std::holds_alternative<TemporarilyFailed>(request) ||
         std::holds_alternative<TemporarilyTimedOut>(request);
}

std::optional<JoinSetId> ExecutionRequestJoinSetId(const ExecutionRequest& request) {
  if (const auto* created = std::get_if<Created>(&request)) {
    if (created->parent) return created->parent->second;
    return std::nullopt;
  }
  const auto* history = std::get_if<HistoryEventRequest>(&request);
  if (history == nullptr) return std::nullopt;
  if (const auto* e = std::get_if<HistoryJoinSetCreate>(&history->event)) return e->join_set_id;
  if (const auto* e = std::get_if<HistoryJoinSetRequest>(&history->event)) return e->join_set_id;
  if (const auto* e = std::get_if<HistoryJoinNext>(&history->event)) return e->join_set_id;
  return std::nullopt;
}

std::string RetryAttemptToString(const RetryAttempt& attempt) {
  std::string out = "attempt " + std::to_string(attempt.attempt);
  if (attempt.max_attempts) out += " of " + std::to_string(*attempt.max_attempts);
  return out;
}

namespace {
std::string AttemptSuffix(const std::optional<RetryAttempt>& attempt) {
  return attempt ? ", " + RetryAttemptToString(*attempt) : std::string();
}
}  // namespace

std::string ExecutionRequestToString(const ExecutionRequest& request) {
  return std::visit(Overloaded{
                        [](const Created& e) {
                          return "Created(" + e.ffqn.ToString() + ", " +
                                 BacktickQuoted(e.scheduled_at) + ")";
                        },
                        [](const Locked& e) {
                          return "Locked(" + BacktickQuoted(e.lock_expires_at) + ", " +
                                 e.component_id.ToString() + ")";
                        },
                        [](const Unlocked& e) {
                          return "Unlocked(" + BacktickQuoted(e.backoff_expires_at) + ")";
                        },
                        [](const TemporarilyFailed& e) {
                          return "TemporarilyFailed(" + BacktickQuoted(e.backoff_expires_at) +
                                 AttemptSuffix(e.attempt) + ")";
                        },
                        [](const TemporarilyTimedOut& e) {
                          return "TemporarilyTimedOut(" + BacktickQuoted(e.backoff_expires_at) +
                                 AttemptSuffix(e.attempt) + ")";
                        },
                        [](const Finished&) { return std::string("Finished"); },
                        [](const HistoryEventRequest& e) {
                          return "HistoryEvent(" + HistoryEventToString(e.event) + ")";
                        },
                        [](const Paused&) { return std::string("Paused"); },
                        [](const Resumed&) { return std::string("Resumed"); },
                    },
                    request);
}

std::string_view SendOutcomeName(SendOutcome outcome) {
  switch (outcome) {
    case SendOutcome::kDelivered:
      return "delivered";
    case SendOutcome::kNotFound:
      return "not_found";
    case SendOutcome::kAlreadyFinished:
      return "already_finished";
  }
  return "delivered";
}

bool IsValidMessageId(std::string_view id) {
  if (id.empty() || id.size() > kMaxMessageIdLength) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':' || c == '@' || c == '/' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsValidChannel(std::string_view channel) {
  return channel.size() <= kMaxChannelLength && JoinSetId::IsValidName(channel);
}

Result<JoinSetId, IdParseError> ChannelJoinSet(std::string_view channel) {
  if (channel.size() > kMaxChannelLength) {
    return Unexpected(IdParseError{"channel `" + std::string(channel.substr(0, 32)) +
                                   "...` is longer than " + std::to_string(kMaxChannelLength) +
                                   " characters"});
  }
  return JoinSetId::Create(JoinSetKind::kMessages, std::string(channel));
}

}  // namespace stele::core
