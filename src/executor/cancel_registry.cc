#include "executor/cancel_registry.h"

#include <utility>
#include <vector>

#include "base/log.h"

namespace stele::executor {

CancelRegistry::Registration::Registration(Registration&& other) noexcept
    : registry_(std::move(other.registry_)), id_(std::move(other.id_)), key_(other.key_) {
  other.registry_.reset();
}

CancelRegistry::Registration& CancelRegistry::Registration::operator=(
    Registration&& other) noexcept {
  if (this != &other) {
    Reset();
    registry_ = std::move(other.registry_);
    id_ = std::move(other.id_);
    key_ = other.key_;
    other.registry_.reset();
  }
  return *this;
}

void CancelRegistry::Registration::Reset() {
  if (!registry_) return;
  registry_->Unregister(*id_, key_);
  registry_.reset();
}

std::shared_ptr<CancelRegistry> CancelRegistry::Create() {
  return std::shared_ptr<CancelRegistry>(new CancelRegistry());
}

CancelRegistry::Registration CancelRegistry::Register(const core::ExecutionId& id,
                                                      std::function<void()> on_cancel) {
  uint64_t key = 0;
  {
    std::lock_guard lock(mu_);
    key = next_key_++;
    entries_[id].emplace(key, std::move(on_cancel));
  }
  return Registration(shared_from_this(), id, key);
}

size_t CancelRegistry::NotifyCancelled(const core::ExecutionId& id) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return 0;
    for (auto& [key, callback] : it->second) callbacks.push_back(std::move(callback));
    entries_.erase(it);
  }
  // Outside the lock: a callback may take other locks (ExecTask's), and a
  // Registration may be reset concurrently without waiting for us.
  for (auto& callback : callbacks) callback();
  STELE_LOG(kDebug,
            id.ToString() << ": cancellation delivered to " << callbacks.size() << " local run(s)");
  return callbacks.size();
}

size_t CancelRegistry::size() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, callbacks] : entries_) n += callbacks.size();
  return n;
}

void CancelRegistry::Unregister(const core::ExecutionId& id, uint64_t key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;  // already notified
  it->second.erase(key);
  if (it->second.empty()) entries_.erase(it);
}

Result<storage::CancelOutcome, storage::DbErrorWrite> CancelActivity(
    storage::DbExecutor& db, CancelRegistry* registry, const core::ExecutionId& execution_id,
    DateTime cancelled_at) {
  auto outcome = db.CancelActivityWithRetries(execution_id, cancelled_at);
  // kCancelled also when someone else cancelled first: a local run of it may
  // still be going (that canceller may have had no registry to notify).
  if (outcome && *outcome == storage::CancelOutcome::kCancelled && registry != nullptr) {
    registry->NotifyCancelled(execution_id);
  }
  return outcome;
}

}  // namespace stele::executor
