// stele/cancellation.h — CancellationToken: a shared flag that a waiter can observe and be woken
// by.
//
// Copies share one state. Cancel() is idempotent and thread-safe; callbacks
// registered with OnCancel run once, on the cancelling thread (or at once
// when registering on an already cancelled token). Callbacks must be cheap
// and must not call back into the token.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace stele {

class CancellationToken {
 public:
  CancellationToken() : state_(std::make_shared<State>()) {}

  void Cancel() const {
    std::map<uint64_t, std::function<void()>> callbacks;
    {
      std::lock_guard lock(state_->mu);
      if (state_->cancelled) return;
      state_->cancelled = true;
      callbacks.swap(state_->callbacks);
    }
    for (auto& [id, cb] : callbacks) cb();
  }
  bool IsCancelled() const {
    std::lock_guard lock(state_->mu);
    return state_->cancelled;
  }
  // Returns a registration id for Unregister; 0 when the callback already ran.
  uint64_t OnCancel(std::function<void()> callback) const {
    {
      std::lock_guard lock(state_->mu);
      if (!state_->cancelled) {
        uint64_t id = ++state_->next_id;
        state_->callbacks.emplace(id, std::move(callback));
        return id;
      }
    }
    callback();
    return 0;
  }
  void Unregister(uint64_t id) const {
    std::lock_guard lock(state_->mu);
    state_->callbacks.erase(id);
  }

 private:
  struct State {
    std::mutex mu;
    bool cancelled = false;
    uint64_t next_id = 0;
    std::map<uint64_t, std::function<void()>> callbacks;
  };
  std::shared_ptr<State> state_;
};

}  // namespace stele
