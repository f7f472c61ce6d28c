// JsWorkflowHost: the host of a JavaScript workflow (docs/js.md), bound to
// one WorkflowRun. Each operation of the workflow context (ctx.call,
// joinSet.next, ctx.sleep, ...) becomes one call of the replay engine, as
// the wasm host functions do (runtime/wasm_host/workflow_host.h); Date and
// Math.random read the run's recorded step time and a PRNG seeded from one
// recorded random value.
//
// When the engine returns an Interruption (blocked, nondeterminism, lease
// expired, ...) — or the guest passed something unusable (a malformed ffqn
// or join set) — the host records it and aborts the guest, which no guest
// code can catch; the worker then reports run.ToWorkerResult(interruption).
//
// Backtraces: for every operation made outside replay that moved the run's
// version, the guest's JavaScript stack (file, line, column per frame) is
// kept as a BacktraceInfo for [version before, version after), stored by
// the worker like a wasm workflow's (DbConnection::StoreBacktraces).
//
// Threading: used by the thread running the guest. Ownership: borrows the
// run and the clock, which outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "core/backtrace.h"
#include "core/component_id.h"
#include "runtime/js/js_engine.h"
#include "runtime/workflow/workflow_prng.h"
#include "runtime/workflow/workflow_run.h"

namespace stele::runtime::js {

class JsWorkflowHost final : public JsHost {
 public:
  // How long the guest may compute between operations, as for wasm
  // (runtime/wasm_host/wasm_workflow_worker.h, "The slice").
  struct SlicePolicy {
    std::chrono::milliseconds slice{0};
    // The guest stops at least this long before the run's lease ends.
    std::chrono::milliseconds margin{0};
  };
  // `clock` (the run's) may be null: then the lease sets no deadline
  // (tests on a frozen clock).
  JsWorkflowHost(workflow::WorkflowRun& run, core::ComponentId component_id, const Clock* clock,
                 SlicePolicy policy)
      : run_(run), component_id_(std::move(component_id)), clock_(clock), policy_(policy) {}

  HostReply Call(std::string_view op, const core::Json& args,
                 const std::function<std::vector<JsFrame>()>& stack) override;
  Result<double, std::string> Now() override;
  Result<double, std::string> Random() override;
  Result<void, std::string> RandomBytes(std::span<uint8_t> bytes) override;
  // Whenever the guest is about to compute (entered, or an operation
  // returns to it): the run's lease is made to outlast the slice and its
  // margin (WorkflowRun::EnsureLease), and the guest must stop by the
  // lease's end less the margin — so no other run of the execution can be
  // locked while it still computes. When the lease cannot be kept, the
  // interruption is recorded and the deadline is now.
  std::optional<std::chrono::steady_clock::time_point> GuestDeadline() override;

  // The interruption that stopped the guest: the host's own (bad input)
  // first, else the run's.
  std::optional<workflow::Interruption> interruption() const;
  std::vector<core::BacktraceInfo> TakeBacktraces() { return std::move(backtraces_); }
  uint64_t host_calls() const { return host_calls_; }

 private:
  HostReply Dispatch(std::string_view op, const core::Json& args);
  HostReply Interrupt(workflow::Interruption::Kind kind, std::string reason);
  HostReply Abort() const;
  Result<workflow::WorkflowPrng*, std::string> Prng();

  workflow::WorkflowRun& run_;
  const core::ComponentId component_id_;
  const Clock* clock_;
  const SlicePolicy policy_;
  std::optional<workflow::Interruption> own_interruption_;
  std::optional<workflow::WorkflowPrng> prng_;  // Math.random, seeded on first use
  std::vector<core::BacktraceInfo> backtraces_;
  uint64_t host_calls_ = 0;
};

// The JSON a JS guest gets for a child's result: {"ok": v}, {"err": v} or
// {"failure": {"kind", "reason", "detail"}}.
core::Json OutcomeJson(const core::SupportedFunctionReturnValue& value);
// The reverse for values a guest gives (a function's outcome, a stub's
// result): ok or err, JSON null as no value (as wasm's {"ok": null}).
core::SupportedFunctionReturnValue ToReturnValue(bool ok, core::Json value);

}  // namespace stele::runtime::js
