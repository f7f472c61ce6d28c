// The template part of async_wait.h (included by it only).
#pragma once

#include <utility>

namespace stele::service::internal {

template <class T>
class AsyncWaitOp final : public AsyncWaitBase,
                          public std::enable_shared_from_this<AsyncWaitOp<T>> {
 public:
  using Outcome = typename AsyncWaitSpec<T>::Outcome;
  AsyncWaitOp(AsyncWaits& owner, AsyncWaitSpec<T> spec) : owner_(owner), spec_(std::move(spec)) {}

  void Begin() {
    std::weak_ptr<AsyncWaitOp> weak = this->weak_from_this();
    if (spec_.deadline) {
      const uint64_t timer = owner_.timer().Schedule(*spec_.deadline, [weak] {
        if (auto self = weak.lock()) self->Finish(Unexpected(self->spec_.timeout_error()));
      });
      std::lock_guard lock(mu_);
      timer_ = timer;
    }
    // Runs at once when cancelled already.
    const uint64_t reg = spec_.cancel.OnCancel([weak] {
      if (auto self = weak.lock()) self->Finish(Unexpected(self->spec_.cancelled_error()));
    });
    {
      std::lock_guard lock(mu_);
      cancel_reg_ = reg;
    }
    Wake();
  }

  void Abandon() override { End(std::nullopt); }
  void AbandonForShutdown() override { End(std::nullopt); }

 private:
  // Schedules an attempt; one runs at a time (a wake-up during one makes
  // it run again).
  void Wake() {
    {
      std::lock_guard lock(mu_);
      if (done_) return;
      if (running_) {
        again_ = true;
        return;
      }
      running_ = true;
    }
    auto self = this->shared_from_this();
    if (!spec_.post([self] { self->Step(); })) {
      Finish(Unexpected(spec_.cancelled_error()));
    }
  }

  void Step() {
    std::weak_ptr<AsyncWaitOp> weak = this->weak_from_this();
    for (;;) {
      {
        std::lock_guard lock(mu_);
        again_ = false;
        if (done_) return;
      }
      std::optional<Outcome> out = spec_.attempt();
      if (out) {
        Finish(std::move(*out));
        return;
      }
      auto token = spec_.watch([weak] {
        if (auto self = weak.lock()) self->Wake();
      });
      if (!token) {
        Finish(Unexpected(spec_.watch_error(token.error())));
        return;
      }
      bool stale = false;
      {
        std::lock_guard lock(mu_);
        if (done_) {
          stale = true;
        } else {
          watch_ = *token;
          if (!again_) {
            running_ = false;
            return;
          }
        }
      }
      if (stale) {
        owner_.db().Unwatch(*token);
        return;
      }
      // Fired while being registered: try again.
    }
  }

  void Finish(Outcome outcome) { End(std::move(outcome)); }

  // Completes (with `outcome`) or abandons (nullopt) the wait, once.
  void End(std::optional<Outcome> outcome) {
    auto keep = this->shared_from_this();  // Untrack may drop the last other owner
    std::function<void(Outcome)> done;
    storage::WatchToken watch = 0;
    uint64_t timer = 0;
    uint64_t reg = 0;
    {
      std::lock_guard lock(mu_);
      if (done_) return;
      done_ = true;
      std::swap(done, spec_.done);
      watch = watch_;
      timer = timer_;
      reg = cancel_reg_;
    }
    if (watch != 0) owner_.db().Unwatch(watch);
    if (timer != 0) owner_.timer().Cancel(timer);
    if (reg != 0) spec_.cancel.Unregister(reg);
    owner_.Untrack(this);
    if (!outcome || !done) return;
    // Inline: on a PostFn thread after an attempt, else on the timer or the
    // cancelling thread (a stopping server answers before it closes).
    done(std::move(*outcome));
  }

  AsyncWaits& owner_;
  AsyncWaitSpec<T> spec_;
  std::mutex mu_;
  bool done_ = false;              // guarded by mu_
  bool running_ = false;           // guarded by mu_: an attempt is posted or running
  bool again_ = false;             // guarded by mu_
  storage::WatchToken watch_ = 0;  // guarded by mu_
  uint64_t timer_ = 0;             // guarded by mu_
  uint64_t cancel_reg_ = 0;        // guarded by mu_
};

}  // namespace stele::service::internal

namespace stele::service {

template <class T>
std::shared_ptr<AsyncWait> AsyncWaits::Start(internal::AsyncWaitSpec<T> spec) {
  auto op = std::make_shared<internal::AsyncWaitOp<T>>(*this, std::move(spec));
  Track(op);
  op->Begin();
  return op;
}

}  // namespace stele::service
