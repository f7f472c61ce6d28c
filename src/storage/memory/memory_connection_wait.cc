// Waits of the memory backend. Every waiter re-checks its condition under
// the state's mutex whenever a write commits (MemoryState::changed), so a
// wake-up cannot be lost between the check and the wait. Unlike the SQL
// backends' hints, these waits are exact; callers must not rely on that.
#include <algorithm>
#include <variant>

#include "storage/memory/memory_connection.h"

namespace stele::storage::memory::internal {

namespace {

// WaitForPublish's condition (kPublish) or WaitForFinishedResult's.
bool MemoryWatchReady(const ExecutionJournal& journal, WatchKind kind, uint64_t since) {
  if (journal.pending_state().IsFinished()) return true;
  if (kind == WatchKind::kFinished) return false;
  const auto& events = journal.events();
  for (size_t v = since; v < events.size(); ++v) {
    const auto* history = std::get_if<core::HistoryEventRequest>(&events[v].event);
    if (history != nullptr && std::holds_alternative<core::HistoryPublish>(history->event)) {
      return true;
    }
  }
  return false;
}

}  // namespace

template <class Ready>
MemoryConnection::WaitEnd MemoryConnection::BlockUntil(const std::optional<WaitOptions>& wait,
                                                       const Ready& ready) {
  std::optional<CancellationToken> token;
  if (wait) token = wait->cancel;
  // Registered before taking the mutex: OnCancel runs the callback inline on
  // an already cancelled token, and the callback takes the mutex. The
  // callback holds the state, not `this`: it may still run on the
  // cancelling thread after this call has returned.
  uint64_t registration = 0;
  if (token) {
    registration = token->OnCancel([state = state_] {
      std::lock_guard lock(state->mu);
      state->changed.notify_all();
    });
  }
  WaitEnd end;
  {
    std::unique_lock lock(state_->mu);
    auto done = [&] { return state_->closed || ready() || (token && token->IsCancelled()); };
    if (wait) {
      state_->changed.wait_until(lock, wait->deadline, done);
    } else {
      state_->changed.wait(lock, done);
    }
    if (ready()) {
      end = WaitEnd::kReady;
    } else if (state_->closed) {
      end = WaitEnd::kClosed;
    } else if (token && token->IsCancelled()) {
      end = WaitEnd::kCancelled;
    } else {
      end = WaitEnd::kTimeout;
    }
  }
  if (registration != 0) token->Unregister(registration);
  return end;
}

void MemoryConnection::WaitForPendingByFfqn(DateTime pending_at_or_sooner,
                                            const std::vector<core::FunctionFqn>& ffqns,
                                            const WaitOptions& wait) {
  BlockUntil(wait, [&] {
    return std::any_of(state_->journals.begin(), state_->journals.end(), [&](const auto& entry) {
      const ExecutionJournal& journal = entry.second;
      const auto* pending = journal.pending_state().RunnablePendingAt();
      return pending != nullptr && pending->scheduled_at <= pending_at_or_sooner &&
             std::find(ffqns.begin(), ffqns.end(), journal.created().ffqn) != ffqns.end();
    });
  });
}

void MemoryConnection::WaitForPendingByComponentId(DateTime pending_at_or_sooner,
                                                   const core::ComponentId& component_id,
                                                   const WaitOptions& wait) {
  BlockUntil(wait, [&] {
    return std::any_of(state_->journals.begin(), state_->journals.end(), [&](const auto& entry) {
      const ExecutionJournal& journal = entry.second;
      const auto* pending = journal.pending_state().RunnablePendingAt();
      return pending != nullptr && pending->scheduled_at <= pending_at_or_sooner &&
             journal.component_digest() == component_id.input_digest;
    });
  });
}

Result<std::vector<core::JoinSetResponseEventOuter>, DbErrorReadWithTimeout>
MemoryConnection::SubscribeToNextResponses(const ExecutionId& execution_id, uint32_t start_idx,
                                           const WaitOptions& wait) {
  {
    std::lock_guard lock(state_->mu);
    if (state_->closed) return Unexpected(DbErrorGeneric::Close());
    // Journals are never removed, so existence checked once holds below.
    if (FindJournal(execution_id) == nullptr) return Unexpected(DbErrorRead::NotFound());
  }
  std::vector<core::JoinSetResponseEventOuter> responses;
  WaitEnd end = BlockUntil(wait, [&] {
    const auto& all = FindJournal(execution_id)->responses();
    if (all.size() <= start_idx) return false;
    responses.assign(all.begin() + start_idx, all.end());
    return true;
  });
  switch (end) {
    case WaitEnd::kReady:
      return responses;
    case WaitEnd::kClosed:
      return Unexpected(DbErrorGeneric::Close());
    case WaitEnd::kCancelled:
      return Unexpected(DbErrorReadWithTimeout::Timeout(TimeoutOutcome::kCancel));
    case WaitEnd::kTimeout:
      break;
  }
  return Unexpected(DbErrorReadWithTimeout::Timeout(TimeoutOutcome::kTimeout));
}

Result<core::SupportedFunctionReturnValue, DbErrorReadWithTimeout>
MemoryConnection::WaitForFinishedResult(const ExecutionId& execution_id,
                                        const std::optional<WaitOptions>& wait) {
  {
    std::lock_guard lock(state_->mu);
    if (state_->closed) return Unexpected(DbErrorGeneric::Close());
    if (FindJournal(execution_id) == nullptr) return Unexpected(DbErrorRead::NotFound());
  }
  std::optional<core::SupportedFunctionReturnValue> result;
  WaitEnd end = BlockUntil(wait, [&] {
    const ExecutionJournal& journal = *FindJournal(execution_id);
    if (!journal.pending_state().IsFinished()) return false;
    result = std::get<core::Finished>(journal.events().back().event).result;
    return true;
  });
  switch (end) {
    case WaitEnd::kReady:
      return *std::move(result);
    case WaitEnd::kClosed:
      return Unexpected(DbErrorGeneric::Close());
    case WaitEnd::kCancelled:
      return Unexpected(DbErrorReadWithTimeout::Timeout(TimeoutOutcome::kCancel));
    case WaitEnd::kTimeout:
      break;
  }
  return Unexpected(DbErrorReadWithTimeout::Timeout(TimeoutOutcome::kTimeout));
}

Result<void, DbErrorReadWithTimeout> MemoryConnection::WaitForPublish(
    const ExecutionId& execution_id, Version since, const WaitOptions& wait) {
  {
    std::lock_guard lock(state_->mu);
    if (state_->closed) return Unexpected(DbErrorGeneric::Close());
    if (FindJournal(execution_id) == nullptr) return Unexpected(DbErrorRead::NotFound());
  }
  WaitEnd end = BlockUntil(wait, [&] {
    const ExecutionJournal& journal = *FindJournal(execution_id);
    if (journal.pending_state().IsFinished()) return true;
    const auto& events = journal.events();
    for (size_t v = since.value(); v < events.size(); ++v) {
      const auto* history = std::get_if<core::HistoryEventRequest>(&events[v].event);
      if (history != nullptr && std::holds_alternative<core::HistoryPublish>(history->event)) {
        return true;
      }
    }
    return false;
  });
  switch (end) {
    case WaitEnd::kReady:
      return {};
    case WaitEnd::kClosed:
      return Unexpected(DbErrorGeneric::Close());
    case WaitEnd::kCancelled:
      return Unexpected(DbErrorReadWithTimeout::Timeout(TimeoutOutcome::kCancel));
    case WaitEnd::kTimeout:
      break;
  }
  return Unexpected(DbErrorReadWithTimeout::Timeout(TimeoutOutcome::kTimeout));
}

void MemoryConnection::FireReadyWatches() {
  if (state_->watches.size() == 0) return;
  state_->watches.FireWhere([&](const std::string& id, WatchKind kind, uint64_t since) {
    auto parsed = ExecutionId::Parse(id);
    if (!parsed) return true;
    const ExecutionJournal* journal = FindJournal(*parsed);
    // A journal gone (retention) fires as a hint: the owner re-reads.
    return journal == nullptr || MemoryWatchReady(*journal, kind, since);
  });
}

Result<WatchToken, DbErrorRead> MemoryConnection::Watch(const ExecutionId& execution_id,
                                                        WatchKind kind, Version since,
                                                        WatchCallback on_change) {
  std::unique_lock lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  const ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorRead::NotFound());
  if (MemoryWatchReady(*journal, kind, since.value())) {
    lock.unlock();
    on_change();
    return WatchToken{0};
  }
  // Checked and registered under mu: no commit can slip in between.
  return state_->watches.Add(execution_id.ToString(), kind, std::move(on_change), since.value());
}

Result<WatchToken, DbErrorRead> MemoryConnection::WatchFinished(const ExecutionId& execution_id,
                                                                WatchCallback on_change) {
  return Watch(execution_id, WatchKind::kFinished, Version(0), std::move(on_change));
}

Result<WatchToken, DbErrorRead> MemoryConnection::WatchPublish(const ExecutionId& execution_id,
                                                               Version since,
                                                               WatchCallback on_change) {
  return Watch(execution_id, WatchKind::kPublish, since, std::move(on_change));
}

void MemoryConnection::Unwatch(WatchToken token) { state_->watches.Remove(token); }

}  // namespace stele::storage::memory::internal
