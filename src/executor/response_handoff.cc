#include "executor/response_handoff.h"

#include <utility>

namespace stele::executor {

std::optional<PlannedWrite> ResponseHandoff::Ticket::Take() {
  std::lock_guard lock(mu_);
  if (state_ != State::kOffered) return std::nullopt;
  state_ = State::kTaken;
  changed_.notify_all();
  return write_;
}

void ResponseHandoff::Ticket::Resolve(bool recorded) {
  std::lock_guard lock(mu_);
  if (state_ != State::kTaken) return;
  state_ = recorded ? State::kRecorded : State::kFailed;
  changed_.notify_all();
}

void ResponseHandoff::Ticket::Reclaim() {
  std::lock_guard lock(mu_);
  if (state_ != State::kOffered) return;
  state_ = State::kReclaimed;
  changed_.notify_all();
}

bool ResponseHandoff::Ticket::AwaitResolution(std::chrono::milliseconds take_timeout) {
  std::unique_lock lock(mu_);
  if (!changed_.wait_for(lock, take_timeout, [this] { return state_ != State::kOffered; })) {
    state_ = State::kReclaimed;
    return false;
  }
  // Taken: the parent resolves on every path out of its run.
  changed_.wait(lock, [this] { return state_ != State::kTaken; });
  return state_ == State::kRecorded;
}

ResponseHandoff::Slot::~Slot() {
  std::shared_ptr<Ticket> parked;
  {
    std::lock_guard lock(owner_->mu_);
    auto it = owner_->slots_.find(child_);
    if (it != owner_->slots_.end()) {
      parked = std::move(it->second.ticket);
      owner_->slots_.erase(it);
    }
  }
  if (parked) parked->Reclaim();
}

std::shared_ptr<ResponseHandoff::Ticket> ResponseHandoff::Slot::TakeTicket() {
  std::lock_guard lock(owner_->mu_);
  auto it = owner_->slots_.find(child_);
  if (it == owner_->slots_.end()) return nullptr;
  return std::move(it->second.ticket);
}

std::shared_ptr<ResponseHandoff> ResponseHandoff::Create() {
  std::shared_ptr<ResponseHandoff> handoff(new ResponseHandoff());
  handoff->self_ = handoff;
  return handoff;
}

std::unique_ptr<ResponseHandoff::Slot> ResponseHandoff::Open(const core::ExecutionIdDerived& child,
                                                             std::function<void()> wake) {
  std::string key = child.ToString();
  {
    std::lock_guard lock(mu_);
    slots_[key] = Entry{std::move(wake), nullptr};
  }
  return std::unique_ptr<Slot>(new Slot(self_.lock(), std::move(key)));
}

std::shared_ptr<ResponseHandoff::Ticket> ResponseHandoff::Offer(const PlannedWrite& write) {
  if (!write.parent_response) return nullptr;
  std::function<void()> wake;
  std::shared_ptr<Ticket> ticket;
  {
    std::lock_guard lock(mu_);
    auto it = slots_.find(write.execution_id.ToString());
    if (it == slots_.end() || it->second.ticket) return nullptr;
    ticket = std::make_shared<Ticket>(write);
    it->second.ticket = ticket;
    wake = it->second.wake;
  }
  if (wake) wake();
  return ticket;
}

}  // namespace stele::executor
