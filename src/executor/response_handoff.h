// ResponseHandoff: a child's result handed to its parent's warm run in
// memory, so that it becomes durable in the parent's next transaction
// instead of a transaction of its own — one fsynced commit per sequential
// step (the parent's batch carries the previous child's Finished and
// response) instead of two.
//
// Protocol.
//   1. A warm workflow run about to wait on exactly one outstanding child
//      opens a Slot for that child (Open), with a callback that wakes it.
//   2. When the child's run ends with a result to record together with the
//      parent's response, its executor offers the write (Offer). With an
//      open slot the offer is parked there, the parent is woken, and the
//      executor gets a Ticket; without one, Offer returns nullptr and the
//      executor records the write itself, as always.
//   3. The parent Takes the parked write: its response is part of the run
//      from then on. It must then resolve the ticket — Resolve(true) once a
//      commit of its own recorded the write, Resolve(false) when it cannot
//      (a failed write, the run ending first) — and no write of the parent
//      that depends on the response may commit before the outcome does.
//   4. The executor waits on the ticket (Ticket::AwaitResolution): true —
//      recorded by the parent; false — it records the write itself. An
//      offer not taken within the wait's `take_timeout`, or still parked
//      when the slot closes, is reclaimed by the executor the same way.
// A write is therefore recorded exactly once, by one of the two, and the
// child's run is not counted as done (its permit stays held) until then.
//
// Threading: thread-safe. Ownership: shared by the executors and the
// workflow runtime of a process; a Slot and a Ticket keep what they need.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/ids.h"
#include "executor/outcome.h"

namespace stele::executor {

class ResponseHandoff {
 public:
  class Ticket {
   public:
    // The parent's side: the write it now owns, once (nullopt when the
    // executor reclaimed it first).
    std::optional<PlannedWrite> Take();
    // The parent's side, after Take: whether its commit recorded the write.
    void Resolve(bool recorded);
    // The executor's side: waits until the parent resolved a taken write
    // and returns whether it recorded it; reclaims (and returns false) an
    // offer still untaken after `take_timeout`.
    bool AwaitResolution(std::chrono::milliseconds take_timeout);
    // Reclaims an untaken offer (the slot closed); no effect once taken.
    void Reclaim();

    explicit Ticket(PlannedWrite write) : write_(std::move(write)) {}

   private:
    enum class State { kOffered, kTaken, kRecorded, kFailed, kReclaimed };
    std::mutex mu_;
    std::condition_variable changed_;
    State state_ = State::kOffered;  // guarded by mu_
    PlannedWrite write_;             // guarded by mu_ until taken
  };

  // An open slot of a waiting parent run; closes on destruction (an offer
  // still parked there is reclaimed by its executor).
  class Slot {
   public:
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    // The ticket of an offer parked here, once; nullptr when none came.
    std::shared_ptr<Ticket> TakeTicket();

   private:
    friend class ResponseHandoff;
    Slot(std::shared_ptr<ResponseHandoff> owner, std::string child)
        : owner_(std::move(owner)), child_(std::move(child)) {}
    std::shared_ptr<ResponseHandoff> owner_;
    std::string child_;
  };

  static std::shared_ptr<ResponseHandoff> Create();

  // Opens a slot for the result of `child`; `wake` runs (on the offering
  // thread) when an offer is parked. One slot per child at a time.
  std::unique_ptr<Slot> Open(const core::ExecutionIdDerived& child, std::function<void()> wake);
  // Parks `write` (whose execution is the child) in its parent's open slot.
  // nullptr when no slot is open for it.
  std::shared_ptr<Ticket> Offer(const PlannedWrite& write);

 private:
  ResponseHandoff() = default;
  struct Entry {
    std::function<void()> wake;
    std::shared_ptr<Ticket> ticket;  // parked offer, if any
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> slots_;  // by child id; guarded by mu_
  std::weak_ptr<ResponseHandoff> self_;
};

}  // namespace stele::executor
