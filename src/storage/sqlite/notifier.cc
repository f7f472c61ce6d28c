#include "storage/sqlite/notifier.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace stele::storage::sqlite::internal {

std::string DigestKey(const core::InputContentDigest& digest) {
  return std::string(digest.bytes().begin(), digest.bytes().end());
}

void Notifications::Append(Notifications&& other) {
  std::move(other.pending.begin(), other.pending.end(), std::back_inserter(pending));
  std::move(other.responses.begin(), other.responses.end(), std::back_inserter(responses));
  std::move(other.finished.begin(), other.finished.end(), std::back_inserter(finished));
  std::move(other.published.begin(), other.published.end(), std::back_inserter(published));
  other.pending.clear();
  other.responses.clear();
  other.finished.clear();
  other.published.clear();
}

// --- Waiter ------------------------------------------------------------------

WaitEnd Waiter::Wait(const std::optional<WaitOptions>& wait) {
  uint64_t registration = 0;
  if (wait && wait->cancel) {
    // The callback owns the waiter: it may run on another thread after this
    // call returned (CancellationToken runs callbacks outside its lock).
    std::weak_ptr<Waiter> weak = weak_from_this();
    registration = wait->cancel->OnCancel([weak] {
      if (auto self = weak.lock()) {
        std::lock_guard lock(self->mu_);
        self->cancelled_ = true;
        self->cv_.notify_all();
      }
    });
  }
  WaitEnd end;
  {
    std::unique_lock lock(mu_);
    auto done = [this] { return notified_ || cancelled_ || closed_; };
    if (wait) {
      cv_.wait_until(lock, wait->deadline, done);
    } else {
      cv_.wait(lock, done);
    }
    if (notified_) {
      end = WaitEnd::kNotified;
    } else if (closed_) {
      end = WaitEnd::kClosed;
    } else if (cancelled_) {
      end = WaitEnd::kCancelled;
    } else {
      end = WaitEnd::kTimeout;
    }
  }
  if (registration != 0) wait->cancel->Unregister(registration);
  return end;
}

std::vector<core::JoinSetResponseEventOuter> Waiter::TakeResponses() {
  std::lock_guard lock(mu_);
  return std::exchange(responses_, {});
}

std::optional<core::SupportedFunctionReturnValue> Waiter::TakeResult() {
  std::lock_guard lock(mu_);
  return std::exchange(result_, std::nullopt);
}

// --- Notifier ----------------------------------------------------------------

Notifier::Registry& Notifier::RegistryFor(Waiter::Kind kind) {
  switch (kind) {
    case Waiter::Kind::kPendingByFfqn:
      return by_ffqn_;
    case Waiter::Kind::kPendingByDigest:
      return by_digest_;
    case Waiter::Kind::kResponses:
      return responses_;
    case Waiter::Kind::kPublished:
      return published_;
    case Waiter::Kind::kFinished:
      break;
  }
  return finished_;
}

Notifier::WaiterPtr Notifier::Make(Waiter::Kind kind, std::vector<std::string> keys, DateTime at,
                                   uint32_t from_cursor) {
  // Not make_shared: the constructor is private to Notifier.
  return WaiterPtr(new Waiter(kind, std::move(keys), at, from_cursor));
}

void Notifier::Register(const WaiterPtr& waiter) {
  std::lock_guard lock(mu_);
  if (closed_) {
    std::lock_guard waiter_lock(waiter->mu_);
    waiter->closed_ = true;
    return;
  }
  Registry& registry = RegistryFor(waiter->kind_);
  for (const std::string& key : waiter->keys_) {
    std::vector<WaiterPtr>& waiters = registry[key];
    if (std::find(waiters.begin(), waiters.end(), waiter) == waiters.end()) {
      waiters.push_back(waiter);
    }
  }
}

Notifier::WaiterPtr Notifier::ForPendingByFfqns(const std::vector<core::FunctionFqn>& ffqns,
                                                DateTime pending_at_or_sooner) {
  std::vector<std::string> keys;
  keys.reserve(ffqns.size());
  for (const core::FunctionFqn& ffqn : ffqns) keys.push_back(ffqn.ToString());
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return Make(Waiter::Kind::kPendingByFfqn, std::move(keys), pending_at_or_sooner);
}

Notifier::WaiterPtr Notifier::ForPendingByDigest(const core::InputContentDigest& digest,
                                                 DateTime pending_at_or_sooner) {
  return Make(Waiter::Kind::kPendingByDigest, {DigestKey(digest)}, pending_at_or_sooner);
}

Notifier::WaiterPtr Notifier::ForResponses(const core::ExecutionId& execution_id,
                                           uint32_t from_cursor) {
  return Make(Waiter::Kind::kResponses, {execution_id.ToString()}, DateTime{}, from_cursor);
}

Notifier::WaiterPtr Notifier::ForFinished(const core::ExecutionId& execution_id) {
  return Make(Waiter::Kind::kFinished, {execution_id.ToString()}, DateTime{});
}

Notifier::WaiterPtr Notifier::ForPublished(const core::ExecutionId& execution_id) {
  return Make(Waiter::Kind::kPublished, {execution_id.ToString()}, DateTime{});
}

void Notifier::Unregister(const WaiterPtr& waiter) {
  std::lock_guard lock(mu_);
  Registry& registry = RegistryFor(waiter->kind_);
  for (const std::string& key : waiter->keys_) {
    auto it = registry.find(key);
    if (it == registry.end()) continue;
    std::erase(it->second, waiter);
    if (it->second.empty()) registry.erase(it);
  }
}

void Notifier::Notify(const Notifications& notes) {
  if (notes.empty()) return;
  std::unique_lock lock(mu_);
  for (const PendingNotice& notice : notes.pending) {
    auto wake = [&](const Registry& registry, const std::string& key) {
      auto it = registry.find(key);
      if (it == registry.end()) return;
      for (const WaiterPtr& waiter : it->second) {
        // Pending "now" for the writer, or by the time the waiter asked
        // about: anything later is found by the executor's periodic tick.
        if (notice.scheduled_at > std::max(notice.current_time, waiter->pending_at_or_sooner_)) {
          continue;
        }
        std::lock_guard waiter_lock(waiter->mu_);
        waiter->notified_ = true;
        waiter->cv_.notify_all();
      }
    };
    wake(by_ffqn_, notice.ffqn);
    wake(by_digest_, DigestKey(notice.digest));
  }
  // All responses of the transaction are delivered under one hold of mu_,
  // so a subscriber gets them together and in cursor order.
  for (const ResponseNotice& notice : notes.responses) {
    auto it = responses_.find(notice.execution_id);
    if (it == responses_.end()) continue;
    for (const WaiterPtr& waiter : it->second) {
      if (notice.cursor < waiter->from_cursor_) continue;
      std::lock_guard waiter_lock(waiter->mu_);
      waiter->responses_.push_back(notice.response);
      waiter->notified_ = true;
      waiter->cv_.notify_all();
    }
  }
  // A value waiter wakes on a Publish and on the end (no value follows it);
  // it re-reads the log either way.
  auto wake_published = [&](const std::string& execution_id) {
    auto it = published_.find(execution_id);
    if (it == published_.end()) return;
    for (const WaiterPtr& waiter : it->second) {
      std::lock_guard waiter_lock(waiter->mu_);
      waiter->notified_ = true;
      waiter->cv_.notify_all();
    }
  };
  for (const std::string& execution_id : notes.published) wake_published(execution_id);
  for (const FinishedNotice& notice : notes.finished) {
    wake_published(notice.execution_id);
    auto it = finished_.find(notice.execution_id);
    if (it == finished_.end()) continue;
    for (const WaiterPtr& waiter : it->second) {
      std::lock_guard waiter_lock(waiter->mu_);
      waiter->result_ = notice.result;
      waiter->notified_ = true;
      waiter->cv_.notify_all();
    }
    // An execution finishes once; its waiters are done.
    finished_.erase(it);
  }
  lock.unlock();
  for (const std::string& execution_id : notes.published) watches_.FirePublished(execution_id);
  for (const FinishedNotice& notice : notes.finished) watches_.FireFinished(notice.execution_id);
}

void Notifier::Close() {
  watches_.Close();
  std::lock_guard lock(mu_);
  if (closed_) return;
  closed_ = true;
  for (Registry* registry : {&by_ffqn_, &by_digest_, &responses_, &finished_, &published_}) {
    for (auto& [key, waiters] : *registry) {
      for (const WaiterPtr& waiter : waiters) {
        std::lock_guard waiter_lock(waiter->mu_);
        waiter->closed_ = true;
        waiter->cv_.notify_all();
      }
    }
    registry->clear();
  }
}

}  // namespace stele::storage::sqlite::internal
