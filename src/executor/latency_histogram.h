// LatencyHistogram: a fixed-bucket histogram of durations for monitoring
// (the server exports them on /metrics in Prometheus form). Buckets are
// upper bounds from 100 µs to 10 s, plus +Inf.
//
// Threading: Record and Snapshot may be called from any thread (relaxed
// atomics; a snapshot taken during Record may see the count before the
// sum — fine for monitoring). Ownership: plain value, not copyable.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace stele::executor {

class LatencyHistogram {
 public:
  static constexpr std::array<int64_t, 14> kBoundsMicros = {
      100,    250,    500,     1'000,   2'500,   5'000,     10'000,
      25'000, 50'000, 100'000, 250'000, 500'000, 1'000'000, 10'000'000};

  struct Snapshot {
    // counts[i]: observations <= kBoundsMicros[i] and > the previous bound;
    // counts.back(): above the last bound.
    std::array<uint64_t, kBoundsMicros.size() + 1> counts{};
    uint64_t sum_micros = 0;
    uint64_t count = 0;
    Snapshot& operator+=(const Snapshot& other) {
      for (size_t i = 0; i < counts.size(); ++i) counts[i] += other.counts[i];
      sum_micros += other.sum_micros;
      count += other.count;
      return *this;
    }
  };

  void Record(std::chrono::steady_clock::duration d) {
    const int64_t micros = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    size_t bucket = 0;
    while (bucket < kBoundsMicros.size() && micros > kBoundsMicros[bucket]) ++bucket;
    counts_[bucket].fetch_add(1, std::memory_order_relaxed);
    sum_micros_.fetch_add(static_cast<uint64_t>(micros < 0 ? 0 : micros),
                          std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
  }

  Snapshot Take() const {
    Snapshot s;
    for (size_t i = 0; i < counts_.size(); ++i)
      s.counts[i] = counts_[i].load(std::memory_order_relaxed);
    s.sum_micros = sum_micros_.load(std::memory_order_relaxed);
    s.count = count_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::array<std::atomic<uint64_t>, kBoundsMicros.size() + 1> counts_{};
  std::atomic<uint64_t> sum_micros_{0};
  std::atomic<uint64_t> count_{0};
};

// What an ExecTask measures about its storage calls.
struct ExecTaskStats {
  LatencyHistogram lock;    // one LockPending* call (a tick's locking round)
  LatencyHistogram record;  // recording one run's outcome (ApplyOutcome, retries included)
};

}  // namespace stele::executor
