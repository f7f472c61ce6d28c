// ConcurrencyLimiter: a counting semaphore shared by executors to bound how
// many executions run at once in the process (Obelisk's global task
// limiter, docs/model.md §5.1). An executor takes permits before it
// locks a batch, so it never locks more work than it may run; each permit is
// released when its run's outcome has been written.
//
// Threading: thread-safe. Ownership: shared (`std::shared_ptr`) by the
// executors using it; a Permit keeps its limiter alive.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace stele::executor {

class ConcurrencyLimiter : public std::enable_shared_from_this<ConcurrencyLimiter> {
 public:
  // One unit of the limit; released on destruction. Move-only.
  class Permit {
   public:
    Permit() = default;
    ~Permit() { Release(); }
    Permit(Permit&& other) noexcept : limiter_(std::move(other.limiter_)) {}
    Permit& operator=(Permit&& other) noexcept;
    Permit(const Permit&) = delete;
    Permit& operator=(const Permit&) = delete;
    bool valid() const { return limiter_ != nullptr; }
    void Release();

   private:
    friend class ConcurrencyLimiter;
    explicit Permit(std::shared_ptr<ConcurrencyLimiter> limiter) : limiter_(std::move(limiter)) {}
    std::shared_ptr<ConcurrencyLimiter> limiter_;
  };

  static std::shared_ptr<ConcurrencyLimiter> Create(uint32_t permits);

  ConcurrencyLimiter(const ConcurrencyLimiter&) = delete;
  ConcurrencyLimiter& operator=(const ConcurrencyLimiter&) = delete;

  // Takes as many permits as are free, at most `max`, without blocking.
  std::vector<Permit> TryAcquireUpTo(uint32_t max);
  // Blocks until a permit is free (without taking it) or `timeout` passes.
  // Returns whether one is free.
  bool WaitForAvailable(std::chrono::steady_clock::duration timeout);
  uint32_t available() const;
  uint32_t capacity() const { return capacity_; }

 private:
  explicit ConcurrencyLimiter(uint32_t permits) : capacity_(permits), available_(permits) {}
  void ReleaseOne();

  const uint32_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable released_;
  uint32_t available_;  // guarded by mu_
};

}  // namespace stele::executor
