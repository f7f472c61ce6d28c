// PendingState: the materialised state of an execution, a pure function of
// its event log and responses (transition table in docs/model.md §4.3).
// The lock rules (`can_append_lock`) live in storage/pending_state_rules.h
// because they answer with storage errors.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "base/time.h"
#include "core/component_id.h"
#include "core/ids.h"
#include "core/return_value.h"
#include "core/version.h"

namespace stele::core {

struct LockedBy {
  ExecutorId executor_id;
  RunId run_id;
  friend bool operator==(const LockedBy&, const LockedBy&) = default;
};

struct PendingStateLocked {
  LockedBy locked_by;
  DateTime lock_expires_at;
  InputContentDigest component_id_input_digest;
  friend bool operator==(const PendingStateLocked&, const PendingStateLocked&) = default;
};
// Pending now when scheduled_at <= now. `last_lock` lets the previous run
// extend its lock while the row waits for its lease to end.
struct PendingStatePendingAt {
  DateTime scheduled_at;
  std::optional<LockedBy> last_lock;
  InputContentDigest component_id_input_digest;
  friend bool operator==(const PendingStatePendingAt&, const PendingStatePendingAt&) = default;
};
struct PendingStateBlockedByJoinSet {
  JoinSetId join_set_id;
  DateTime lock_expires_at;  // the JoinNext's run_expires_at
  bool closing = false;
  InputContentDigest component_id_input_digest;
  friend bool operator==(const PendingStateBlockedByJoinSet&,
                         const PendingStateBlockedByJoinSet&) = default;
};
struct PendingStateFinished {
  Version::Type version = 0;  // version of the Finished event
  DateTime finished_at;
  PendingStateFinishedResultKind result_kind;
  InputContentDigest component_id_input_digest;
  friend bool operator==(const PendingStateFinished&, const PendingStateFinished&) = default;
};

struct PendingState {
  std::variant<PendingStatePendingAt, PendingStateLocked, PendingStateBlockedByJoinSet,
               PendingStateFinished>
      value;
  // Orthogonal to `value` and meaningful only while unfinished
  // (docs/model.md §9.6). A paused execution is never locked: it keeps
  // PendingAt or BlockedByJoinSet (responses still arrive and make it
  // pending) and runs again after a resume.
  bool paused = false;
  // A cancel or terminate request is in the log (docs/model.md §9.5).
  bool cancelling = false;

  bool IsFinished() const { return std::holds_alternative<PendingStateFinished>(value); }
  // PendingAt and not paused: what an executor may lock once it is due.
  const PendingStatePendingAt* RunnablePendingAt() const {
    return paused ? nullptr : std::get_if<PendingStatePendingAt>(&value);
  }
  const InputContentDigest& ComponentIdInputDigest() const;
  // "PendingAt", "Locked", "BlockedByJoinSet", "Finished": the variant only.
  std::string_view StateName() const;
  // What users see: "Paused" or "Cancelling" while unfinished and flagged
  // (paused first), else StateName().
  std::string_view DisplayStateName() const;
  // snake_case forms for APIs and filters: "pending_at", "locked",
  // "blocked_by_join_set", "finished" (StateTag), and "paused",
  // "cancelling" (StatusTag, the user-facing status as DisplayStateName).
  std::string_view StateTag() const;
  std::string_view StatusTag() const;
  std::string ToString() const;
  friend bool operator==(const PendingState&, const PendingState&) = default;
};

}  // namespace stele::core
