// InterruptState: who may stop a running wasm call, and how (v8_engine.cc's
// file comment, "Interrupts"). Internal to src/runtime/wasm.
//
// Threading: thread-safe (one mutex); the methods that say so run on the
// call's own thread with its isolate locked. Ownership: borrows the
// isolate, which outlives it (isolates live as long as the process).
#pragma once

#include <v8.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace stele::wasm::internal {

// Who may stop a running call, and how. Isolate::TerminateExecution hits
// whichever thread runs on the isolate, and isolates are shared, so it is
// called only on the call's own thread with the isolate locked. Another
// thread asks with Isolate::RequestInterrupt: V8 runs OnInterruptRequest on
// the thread that runs guest code on the isolate next, which raises the
// termination only for calls of its own. A call parked in a host function
// (HostCall::Park) may miss that; it raises the termination itself when it
// locks the isolate again (DeliverRequested).
class InterruptState {
 public:
  // `on_request` runs on the thread that runs guest code on the isolate next
  // (v8_engine.cc's OnInterruptRequest): it calls DeliverRequested for the
  // calls of its own thread.
  InterruptState(v8::Isolate* isolate, v8::InterruptCallback on_request)
      : isolate_(isolate), on_request_(on_request) {}

  // Sticky: stops the running call and every later one. Any thread.
  void InterruptAll() {
    std::lock_guard lock(mu_);
    sticky_ = true;
    if (running_) Request("interrupted");
  }
  // Stops call `generation` if it still runs. Any thread.
  void InterruptCall(uint64_t generation, const char* reason) {
    std::lock_guard lock(mu_);
    if (running_ && generation_ == generation) Request(reason);
  }
  // Terminates the running call on behalf of a host error (no reason: the
  // host error is reported instead). The call's thread, isolate locked.
  void TerminateForHostError() {
    std::lock_guard lock(mu_);
    if (running_ && !delivered_) {
      delivered_ = true;
      isolate_->TerminateExecution();
    }
  }
  // Raises the termination asked for while the call ran. The call's
  // thread, isolate locked.
  void DeliverRequested() {
    std::lock_guard lock(mu_);
    if (running_ && requested_ && !delivered_) {
      delivered_ = true;
      isolate_->TerminateExecution();
    }
  }
  // True once the running call's termination is raised.
  bool terminating() {
    std::lock_guard lock(mu_);
    return delivered_;
  }
  // True once InterruptAll was called.
  bool sticky() {
    std::lock_guard lock(mu_);
    return sticky_;
  }
  // Begins an outermost call; returns its generation, or nullopt when the
  // instance was interrupted for good.
  std::optional<uint64_t> Begin() {
    std::lock_guard lock(mu_);
    if (sticky_) return std::nullopt;
    running_ = true;
    requested_ = false;
    reason_.clear();
    return ++generation_;
  }
  // Ends the outermost call (isolate locked): no termination may outlive it.
  // Returns the interrupt reason, empty when not interrupted.
  std::string End() {
    std::lock_guard lock(mu_);
    running_ = false;
    requested_ = false;
    if (delivered_) {
      isolate_->CancelTerminateExecution();
      delivered_ = false;
    }
    return std::move(reason_);
  }

 private:
  void Request(const char* reason) {
    if (reason_.empty()) reason_ = reason;
    if (requested_ || delivered_) return;
    requested_ = true;
    // A callback that outlives this call (or this instance) finds nothing
    // to do: it looks only at the calls running on its thread.
    isolate_->RequestInterrupt(on_request_, nullptr);
  }

  std::mutex mu_;
  v8::Isolate* const isolate_;
  const v8::InterruptCallback on_request_;
  bool running_ = false;
  bool sticky_ = false;
  bool requested_ = false;  // a termination was asked for, not yet raised
  bool delivered_ = false;  // TerminateExecution was called for this call
  uint64_t generation_ = 0;
  std::string reason_;
};

}  // namespace stele::wasm::internal
