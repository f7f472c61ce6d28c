// CancelRegistry: the in-process half of activity cancellation
// (docs/model.md §9.1). Cancelling writes Finished(Cancelled) to the
// database first (DbExecutor::CancelActivity — the database is the truth);
// the registry then tells the runs of that execution that this process is
// executing to stop, so the worker aborts promptly instead of running on
// until its lock deadline.
//
// Who uses it:
//   - the composition root (server main, the SDK's Engine) creates one per
//     process and hands it to every ExecTask (ExecutorOptions::cancel_registry)
//     and to the API-side cancel path;
//   - ExecTask registers each run for as long as its worker runs;
//   - API-side cancel calls CancelActivity (below), or, when it writes the
//     cancellation itself, NotifyCancelled after the write committed.
// A notification for an execution that no run of this process executes is
// a no-op. What a cancelled run returns afterwards is not recorded over the
// cancellation: the outcome append is version-fenced and loses (see
// exec_task.h, "Cancellation").
//
// A cancel committed by another process (a second node on a shared
// PostgreSQL database) does not reach this registry; the executor's cancel
// watcher finds it instead (ExecutorOptions::cancel_watch_interval,
// exec_task.h "Cancellation"), and the run's outcome loses to the fence the
// same way.
//
// Threading: thread-safe. Callbacks run on the notifying thread, outside the
// registry's lock, once per registration; they must be cheap and must not
// block (ExecTask's only sets a flag and fires a CancellationToken).
// Ownership: shared (`std::shared_ptr`) by the composition root and the
// executors; a Registration keeps its registry alive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "base/result.h"
#include "base/time.h"
#include "core/ids.h"
#include "storage/db_executor.h"

namespace stele::executor {

class CancelRegistry : public std::enable_shared_from_this<CancelRegistry> {
 public:
  // One run's entry; removed on destruction (or by Reset). Move-only.
  class Registration {
   public:
    Registration() = default;
    ~Registration() { Reset(); }
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    // Unregisters; a callback already taken by NotifyCancelled may still run.
    void Reset();

   private:
    friend class CancelRegistry;
    Registration(std::shared_ptr<CancelRegistry> registry, core::ExecutionId id, uint64_t key)
        : registry_(std::move(registry)), id_(std::move(id)), key_(key) {}
    std::shared_ptr<CancelRegistry> registry_;
    std::optional<core::ExecutionId> id_;  // set while registered
    uint64_t key_ = 0;
  };

  static std::shared_ptr<CancelRegistry> Create();

  CancelRegistry(const CancelRegistry&) = delete;
  CancelRegistry& operator=(const CancelRegistry&) = delete;

  // Calls `on_cancel` (once) when `id` is cancelled while the registration
  // lives. Several registrations per id are allowed (a timed-out run still
  // winding down next to its retry).
  [[nodiscard]] Registration Register(const core::ExecutionId& id, std::function<void()> on_cancel);

  // `id` was cancelled (its Finished(Cancelled) is committed): runs and
  // removes the callbacks of its registrations. Returns how many ran.
  size_t NotifyCancelled(const core::ExecutionId& id);

  // Registrations alive (for tests and metrics).
  size_t size() const;

 private:
  CancelRegistry() = default;
  void Unregister(const core::ExecutionId& id, uint64_t key);

  mutable std::mutex mu_;
  uint64_t next_key_ = 1;  // guarded by mu_
  std::map<core::ExecutionId, std::map<uint64_t, std::function<void()>>>
      entries_;  // guarded by mu_
};

// The API-side activity cancel: DbExecutor::CancelActivityWithRetries, then,
// when the execution is (now or already) Finished(Cancelled), notifies
// `registry` (may be null) so a local run stops. Errors: those of
// CancelActivityWithRetries (NotFound, Generic, a VersionConflict that
// outlasted the retries).
Result<storage::CancelOutcome, storage::DbErrorWrite> CancelActivity(
    storage::DbExecutor& db, CancelRegistry* registry, const core::ExecutionId& execution_id,
    DateTime cancelled_at);

}  // namespace stele::executor
