// stele/defaults.h — the executor settings both faces start from: libstele's
// EngineOptions (stele/engine.h) and the stele server's [executor] section
// (through the execution service's ServiceOptions, src/service/component.h)
// take their defaults from these constants, so that an embedding program
// and a server with an empty [executor] section run their executors alike
// (docs/config.md, "[executor]"; docs/sdk.md).
//
// Measured to perform (issue 21): a server with an empty [executor]
// section was at or above the "tuned" settings of bench/http (BENCHMARKS.md,
// "Defaults vs tuned"); more slots than cores only made CPU-bound runs
// share the cores. Constants only; no state.
#pragma once

#include <chrono>
#include <cstdint>

namespace stele::defaults {

// Executions one executor locks per tick (one transaction); an executor
// with work left locks the next batch at once, so a burst is taken in a
// few back-to-back ticks. 256 was no faster on W1 or W5 (BENCHMARKS.md).
inline constexpr uint32_t kBatchSize = 32;
// Activity attempts running at once in a process, all activities together.
// On 2 cores W1 through the server ran at ~400 wf/s with 64 (and with 16),
// ~260 wf/s with 256 and slower still with 4096: CPU-bound attempts (wasm)
// only share the cores, and each in flight holds memory. Raise it for
// activities that mostly wait on remote services (docs/config.md, "When to
// change the defaults").
inline constexpr uint32_t kMaxConcurrency = 64;
// Workflow runs loaded at once in a process (a workflow waiting warm for a
// child holds one).
inline constexpr uint32_t kMaxWorkflowConcurrency = 256;
// The same limit in the `stele` server, whose workflows are wasm or JS
// guests. While each worker thread created an engine isolate for its
// guests (~3 ms of CPU and over 1 MiB), 64 ran W1 a third faster than 256;
// with the isolates shared (docs/wasm_engine.md) the two are within the
// noise on W1, W3 and W4, and 64 keeps W1's peak RSS ~100 against ~125 MiB
// (BENCHMARKS.md, "Shared isolates"); a JS realm is still an isolate per
// run in flight (docs/js.md). libstele's native workflows lose a
// fifth of W1 at 32 slots, so they keep 256.
inline constexpr uint32_t kGuestMaxWorkflowConcurrency = 64;
// Lease of a workflow run, extended while it makes progress; bounds how
// long a crashed process's workflows wait before they are taken over.
inline constexpr std::chrono::milliseconds kWorkflowLockExpiry{2000};
// Longest wait of an idle executor before it looks for work again (commits
// of the same process wake it at once).
inline constexpr std::chrono::milliseconds kTickSleep{200};
// Retries of a workflow: backoff of the first, the number of failed runs
// before it ends with its last failure, the longest single wait, and the
// share (percent) each wait is shortened by at random (docs/config.md,
// "Retries").
inline constexpr std::chrono::milliseconds kWorkflowRetryBackoff{100};
inline constexpr uint32_t kWorkflowMaxRetries = 10;
inline constexpr std::chrono::milliseconds kMaxRetryBackoff{300'000};
inline constexpr uint32_t kRetryJitterPercent = 10;
// How long a cancelled workflow may clean up before it is terminated:
// long enough for compensating activities, short enough that a stuck
// cleanup ends within a minute.
inline constexpr std::chrono::milliseconds kCancelGrace{60'000};

}  // namespace stele::defaults
