#include "storage/watch_registry.h"

#include <utility>

namespace stele::storage {

WatchToken WatchRegistry::Add(const std::string& execution_id, WatchKind kind,
                              WatchCallback callback, uint64_t since) {
  {
    std::lock_guard lock(mu_);
    if (!closed_) {
      const WatchToken token = next_++;
      entries_.emplace(token, Entry{execution_id, kind, since, std::move(callback)});
      by_execution_[execution_id].insert(token);
      return token;
    }
  }
  callback();
  return 0;
}

void WatchRegistry::TakeLocked(WatchToken token, std::vector<WatchCallback>& out) {
  auto it = entries_.find(token);
  if (it == entries_.end()) return;
  auto ids = by_execution_.find(it->second.execution_id);
  if (ids != by_execution_.end()) {
    ids->second.erase(token);
    if (ids->second.empty()) by_execution_.erase(ids);
  }
  out.push_back(std::move(it->second.callback));
  entries_.erase(it);
}

void WatchRegistry::Run(std::vector<WatchCallback>& callbacks) {
  for (WatchCallback& callback : callbacks) callback();
}

bool WatchRegistry::Remove(WatchToken token) {
  std::vector<WatchCallback> dropped;
  {
    std::lock_guard lock(mu_);
    TakeLocked(token, dropped);
  }
  // Destroyed outside the mutex: a callback's captures may be heavy.
  return !dropped.empty();
}

void WatchRegistry::Fire(WatchToken token) {
  std::vector<WatchCallback> fired;
  {
    std::lock_guard lock(mu_);
    TakeLocked(token, fired);
  }
  Run(fired);
}

void WatchRegistry::FireFinished(const std::string& execution_id) {
  std::vector<WatchCallback> fired;
  {
    std::lock_guard lock(mu_);
    auto ids = by_execution_.find(execution_id);
    if (ids == by_execution_.end()) return;
    const std::unordered_set<WatchToken> tokens = std::move(ids->second);
    by_execution_.erase(ids);
    for (WatchToken token : tokens) {
      auto it = entries_.find(token);
      if (it == entries_.end()) continue;
      fired.push_back(std::move(it->second.callback));
      entries_.erase(it);
    }
  }
  Run(fired);
}

void WatchRegistry::FirePublished(const std::string& execution_id) {
  std::vector<WatchCallback> fired;
  {
    std::lock_guard lock(mu_);
    auto ids = by_execution_.find(execution_id);
    if (ids == by_execution_.end()) return;
    std::vector<WatchToken> tokens;
    for (WatchToken token : ids->second) {
      if (entries_.at(token).kind == WatchKind::kPublish) tokens.push_back(token);
    }
    for (WatchToken token : tokens) TakeLocked(token, fired);
  }
  Run(fired);
}

void WatchRegistry::FireWhere(
    const std::function<bool(const std::string&, WatchKind, uint64_t)>& ready) {
  std::vector<WatchCallback> fired;
  {
    std::lock_guard lock(mu_);
    std::vector<WatchToken> tokens;
    for (const auto& [token, entry] : entries_) {
      if (ready(entry.execution_id, entry.kind, entry.since)) tokens.push_back(token);
    }
    for (WatchToken token : tokens) TakeLocked(token, fired);
  }
  Run(fired);
}

void WatchRegistry::FireAll() {
  std::vector<WatchCallback> fired;
  {
    std::lock_guard lock(mu_);
    for (auto& [token, entry] : entries_) fired.push_back(std::move(entry.callback));
    entries_.clear();
    by_execution_.clear();
  }
  Run(fired);
}

void WatchRegistry::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  FireAll();
}

size_t WatchRegistry::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace stele::storage
