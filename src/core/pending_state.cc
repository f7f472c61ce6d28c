#include "core/pending_state.h"

#include <iterator>
#include <string>

#include "core/display_internal.h"

namespace stele::core {
namespace {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

using display_internal::BacktickQuoted;

}  // namespace

const InputContentDigest& PendingState::ComponentIdInputDigest() const {
  return std::visit(
      [](const auto& state) -> const InputContentDigest& {
        return state.component_id_input_digest;
      },
      value);
}

std::string_view PendingState::StateName() const {
  // Obelisk's STATE_* constants, in the order of the variant.
  static constexpr std::string_view kNames[] = {"PendingAt", "Locked", "BlockedByJoinSet",
                                                "Finished"};
  static_assert(std::size(kNames) == std::variant_size_v<decltype(value)>);
  return kNames[value.index()];
}

std::string_view PendingState::DisplayStateName() const {
  if (!IsFinished() && paused) return "Paused";
  if (!IsFinished() && cancelling) return "Cancelling";
  return StateName();
}

std::string_view PendingState::StateTag() const {
  static constexpr std::string_view kTags[] = {"pending_at", "locked", "blocked_by_join_set",
                                               "finished"};
  static_assert(std::size(kTags) == std::variant_size_v<decltype(value)>);
  return kTags[value.index()];
}

std::string_view PendingState::StatusTag() const {
  if (!IsFinished() && paused) return "paused";
  if (!IsFinished() && cancelling) return "cancelling";
  return StateTag();
}

// Obelisk's Display of PendingState.
std::string PendingState::ToString() const {
  std::string flags;
  if (!IsFinished() && paused) flags += " paused";
  if (!IsFinished() && cancelling) flags += " cancelling";
  return std::visit(Overloaded{
                        [](const PendingStatePendingAt& s) {
                          return "PendingAt(" + BacktickQuoted(s.scheduled_at) + ")";
                        },
                        [](const PendingStateLocked& s) {
                          return "Locked(" + BacktickQuoted(s.lock_expires_at) + ", " +
                                 s.locked_by.executor_id.ToString() + ", " +
                                 s.locked_by.run_id.ToString() + ")";
                        },
                        [](const PendingStateBlockedByJoinSet& s) {
                          return "BlockedByJoinSet(" + s.join_set_id.ToString() + "," +
                                 BacktickQuoted(s.lock_expires_at) + ")";
                        },
                        [](const PendingStateFinished& s) {
                          return "Finished(" + s.result_kind.ToString() + ")";
                        },
                    },
                    value) +
         flags;
}

}  // namespace stele::core
