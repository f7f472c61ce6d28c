#include "runtime/wasm_host/wasm_workflow_worker.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "base/log.h"
#include "runtime/wasm_host/guest_abi.h"
#include "runtime/wasm_host/workflow_host.h"

namespace stele::runtime::wasm_host {

namespace {

namespace wf = runtime::workflow;
using wasm::WasmError;

// Keeps the watchdog's view of an instance for exactly its lifetime.
class WatchScope {
 public:
  WatchScope(GuestWatchdog& watchdog, wasm::WasmInstance* instance)
      : watchdog_(watchdog), handle_(watchdog.Watch(instance)) {}
  ~WatchScope() { watchdog_.Unwatch(handle_); }
  WatchScope(const WatchScope&) = delete;
  WatchScope& operator=(const WatchScope&) = delete;
  uint64_t handle() const { return handle_; }

 private:
  GuestWatchdog& watchdog_;
  uint64_t handle_;
};

}  // namespace

WasmWorkflowWorker::WasmWorkflowWorker(std::shared_ptr<const WasmComponent> component,
                                       WasmWorkflowWorkerDeps deps)
    : component_(std::move(component)),
      deps_(std::move(deps)),
      engine_id_(component_->engine->EngineId()),
      ffqns_(component_->Ffqns()),
      watchdog_(std::make_unique<GuestWatchdog>()),
      pool_(std::make_unique<InstancePool>(component_->engine, component_->module,
                                           deps_.instance_pool, nullptr)) {
  // A run that writes its Finished itself names the engine there too.
  deps_.run_options.engine = engine_id_;
  slice_.slice = deps_.guest_slice;
  if (deps_.run_options.lock_extension.count() > 0) {
    slice_.slice = std::min(slice_.slice, deps_.run_options.lock_extension / 4);
  }
  slice_.margin = deps_.run_options.lock_extension_leeway;
}

std::string WasmWorkflowWorker::SliceError(uint32_t attempt, bool final) const {
  std::string text = "the workflow exceeded its CPU time slice: it computed for " +
                     std::to_string(slice_.slice.count()) + " ms without calling the host";
  text += final ? ", in " + std::to_string(attempt) + " attempts (an endless loop?)"
                : " (attempt " + std::to_string(attempt) + " of " +
                      std::to_string(deps_.guest_slice_attempts) + ")";
  if (deps_.run_options.lock_extension.count() > 0) {
    text += "; the slice is a quarter of the workflow's lease, " + deps_.lock_expiry_setting;
  }
  return text;
}

executor::WorkerResult WasmWorkflowWorker::Run(executor::WorkerContext ctx) {
  executor::WorkerResult result = RunGuest(std::move(ctx));
  result.engine = engine_id_;
  return result;
}

executor::WorkerResult WasmWorkflowWorker::RunGuest(executor::WorkerContext ctx) {
  const DeclaredFunction* fn = component_->Find(ctx.ffqn);
  if (fn == nullptr) {
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCannotInstantiate,
                                         "component " + component_->component_id.ToString() +
                                             " does not export " + ctx.ffqn.ToString());
  }
  const std::string params = ctx.params.dump();
  const CancellationToken cancel = ctx.cancel;
  const uint32_t run_attempt = ctx.intermittent_event_count + 1;
  wf::WorkflowRun run(std::move(ctx),
                      wf::WorkflowRunDeps{deps_.db.get(), deps_.clock.get(), deps_.functions,
                                          deps_.dispatch, deps_.handoff, deps_.cancel_registry},
                      deps_.run_options);
  // Declared before the instance: the instance's import table points at it.
  WorkflowHost host(&run, component_->component_id);

  auto lease = pool_->Acquire(host.Imports());
  if (!lease) {
    if (lease.error().IsRetryable()) {
      return executor::WorkerResult::Err(run.version(),
                                         executor::LimitReached{lease.error().ToString()});
    }
    return executor::WorkerResult::Fatal(
        run.version(), executor::FatalErrorKind::kCannotInstantiate, lease.error().ToString());
  }
  wasm::WasmInstance& guest = lease->instance();

  auto finish_backtraces = [&] {
    if (!deps_.store_backtraces) return;
    auto traces = host.TakeBacktraces();
    if (traces.empty()) return;
    for (auto& trace : traces) trace.wasm_backtrace.engine = engine_id_;
    deps_.db->StoreBacktraces(std::move(traces));
  };

  Result<std::vector<wasm::Value>, WasmError> called = Unexpected(WasmError{});
  bool entered = false;
  {
    WatchScope watch(*watchdog_, &guest);
    host.SetWatchdog(watchdog_.get(), watch.handle(), deps_.clock.get(), slice_);
    if (host.StartSlice()) {
      entered = true;
      auto ptr = PlaceInGuest(guest, params);
      if (!ptr) {
        called = Unexpected(std::move(ptr.error()));
      } else {
        const wasm::Value args[] = {wasm::Value::I32(static_cast<int32_t>(*ptr)),
                                    wasm::Value::I32(static_cast<int32_t>(params.size()))};
        called = guest.Call(fn->export_name, args, wasm::CallBudget{std::nullopt, cancel});
      }
    }
    host.SetWatchdog(nullptr, 0, nullptr, {});
  }
  if (!entered) return run.ToWorkerResult(*host.interruption());
  finish_backtraces();

  if (!called) {
    const WasmError& error = called.error();
    if (auto interruption = host.interruption()) return run.ToWorkerResult(*interruption);
    switch (error.kind) {
      case WasmError::Kind::kInterrupted:
        if (cancel.IsCancelled()) {
          return run.ToWorkerResult(wf::Interruption{wf::Interruption::Kind::kCancelled,
                                                     "the run was cancelled", std::nullopt});
        }
        // The slice ran out (the guest stopped before its lease did).
        if (run_attempt >= deps_.guest_slice_attempts) {
          std::string reason = SliceError(run_attempt, /*final=*/true);
          STELE_LOG(kWarn, run.execution_id().ToString() << ": " << reason);
          return run.Fail(executor::FatalErrorKind::kOutOfFuel, std::move(reason));
        } else {
          std::string reason = SliceError(run_attempt, /*final=*/false);
          STELE_LOG(kInfo, run.execution_id().ToString() << ": " << reason << "; will be retried");
          return executor::WorkerResult::Err(run.version(),
                                             executor::TemporaryTimeout{{}, std::move(reason)});
        }
      case WasmError::Kind::kStackOverflow:
      case WasmError::Kind::kOutOfResources:
        return executor::WorkerResult::Err(run.version(), executor::LimitReached{error.ToString()});
      default:
        return run.Trap(error.message, error.ToString());
    }
  }

  if (called->size() != 1 || (*called)[0].type != wasm::ValType::kI64) {
    return executor::WorkerResult::Fatal(run.version(),
                                         executor::FatalErrorKind::kResultParsingError,
                                         "export `" + fn->export_name + "` must return one i64");
  }
  uint64_t packed = static_cast<uint64_t>((*called)[0].AsI64());
  auto bytes = guest.ReadBytes(PackedPtr(packed), PackedLen(packed));
  if (!bytes) {
    return executor::WorkerResult::Fatal(run.version(),
                                         executor::FatalErrorKind::kResultParsingError,
                                         "result out of guest memory: " + bytes.error().ToString());
  }
  auto value = ParseExportResult(
      std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  if (!value) {
    return executor::WorkerResult::Fatal(
        run.version(), executor::FatalErrorKind::kResultParsingError, value.error());
  }
  return run.Finish(std::move(*value));
}

}  // namespace stele::runtime::wasm_host
