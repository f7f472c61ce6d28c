#include "storage/pending_state_rules.h"

#include <type_traits>
#include <variant>

namespace stele::storage {

Result<LockKind, DbErrorWriteNonRetriable> CanAppendLock(const core::PendingState& state,
                                                         DateTime created_at,
                                                         const core::ExecutorId& executor_id,
                                                         const core::RunId& run_id,
                                                         DateTime lock_expires_at) {
  if (lock_expires_at <= created_at) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed("invalid expiry date"));
  }
  if (state.paused && !state.IsFinished()) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("cannot lock, paused"));
  }
  return std::visit(
      [&](const auto& s) -> Result<LockKind, DbErrorWriteNonRetriable> {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, core::PendingStatePendingAt>) {
          if (s.scheduled_at <= created_at) return LockKind::kCreatingNewLock;
          if (s.last_lock && s.last_lock->executor_id == executor_id &&
              s.last_lock->run_id == run_id) {
            return LockKind::kExtending;  // the original run extends its lease
          }
          return Unexpected(
              DbErrorWriteNonRetriable::ValidationFailed("cannot lock, not yet pending"));
        } else if constexpr (std::is_same_v<S, core::PendingStateLocked>) {
          if (s.locked_by.executor_id == executor_id && s.locked_by.run_id == run_id) {
            return LockKind::kExtending;
          }
          return Unexpected(DbErrorWriteNonRetriable::IllegalState("cannot lock, already locked"));
        } else if constexpr (std::is_same_v<S, core::PendingStateBlockedByJoinSet>) {
          return Unexpected(DbErrorWriteNonRetriable::IllegalState(
              "cannot append Locked event when in BlockedByJoinSet state"));
        } else {
          return Unexpected(DbErrorWriteNonRetriable::IllegalState("already finished"));
        }
      },
      state.value);
}

}  // namespace stele::storage
