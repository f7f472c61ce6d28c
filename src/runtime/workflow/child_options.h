// ChildOptions from the JSON object the wasm and JavaScript guests pass
// (docs/guest_abi.md §3, docs/js.md "Deadlines"): {"timeout_ms": n,
// "max_retries": n, "backoff_ms": n, "max_backoff_ms": n, "jitter_percent":
// n}, every key optional (null = absent), integers only. Decoded here once
// for both guests. Only the shape is checked (an unknown key, a
// non-integer, a negative backoff or count, a timeout past 100 years): the
// value rules — a positive timeout, a jitter of at most 100, the clamp to
// the parent's deadline — are WorkflowRun::ChildPolicy's, the same for
// every face. Pure; thread-safe.
#pragma once

#include <string>

#include "base/result.h"
#include "core/json.h"
#include "runtime/workflow/workflow_run.h"

namespace stele::runtime::workflow {

// Error: a message naming the offending key.
Result<ChildOptions, std::string> ChildOptionsFromJson(const core::Json& options);

}  // namespace stele::runtime::workflow
