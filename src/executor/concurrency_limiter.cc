#include "executor/concurrency_limiter.h"

#include <utility>

namespace stele::executor {

ConcurrencyLimiter::Permit& ConcurrencyLimiter::Permit::operator=(Permit&& other) noexcept {
  if (this != &other) {
    Release();
    limiter_ = std::move(other.limiter_);
  }
  return *this;
}

void ConcurrencyLimiter::Permit::Release() {
  if (limiter_) {
    limiter_->ReleaseOne();
    limiter_.reset();
  }
}

std::shared_ptr<ConcurrencyLimiter> ConcurrencyLimiter::Create(uint32_t permits) {
  return std::shared_ptr<ConcurrencyLimiter>(new ConcurrencyLimiter(permits));
}

std::vector<ConcurrencyLimiter::Permit> ConcurrencyLimiter::TryAcquireUpTo(uint32_t max) {
  uint32_t taken = 0;
  {
    std::lock_guard lock(mu_);
    taken = available_ < max ? available_ : max;
    available_ -= taken;
  }
  std::vector<Permit> permits;
  permits.reserve(taken);
  for (uint32_t i = 0; i < taken; ++i) permits.push_back(Permit(shared_from_this()));
  return permits;
}

bool ConcurrencyLimiter::WaitForAvailable(std::chrono::steady_clock::duration timeout) {
  std::unique_lock lock(mu_);
  return released_.wait_for(lock, timeout, [this] { return available_ > 0; });
}

uint32_t ConcurrencyLimiter::available() const {
  std::lock_guard lock(mu_);
  return available_;
}

void ConcurrencyLimiter::ReleaseOne() {
  {
    std::lock_guard lock(mu_);
    ++available_;
  }
  released_.notify_all();
}

}  // namespace stele::executor
