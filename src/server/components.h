// Components: turns the [[workflow_wasm]], [[activity_wasm]],
// [[activity_exec]] and [[activity_stub]] sections of the config into
// loaded components — a core::ComponentId with its sha256 digest, the
// declared functions, the registry kind and (for everything but stubs) a
// factory of the executor::Worker that runs them. One small function per
// kind (components.cc); a kind whose runtime module is not built reports a
// clear "not supported yet" error naming the section and line.
//
// Threading: LoadComponents is a pure function of the config and the files
// it names. Ownership: LoadedComponent is a value; its worker factory is
// called once by the server when it starts the component's executor.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "core/component_id.h"
#include "core/function_type.h"
#include "executor/cancel_registry.h"
#include "executor/latency_histogram.h"
#include "executor/local_dispatch.h"
#include "executor/response_handoff.h"
#include "executor/worker.h"
#include "runtime/workflow/function_registry.h"
#include "server/config.h"
#include "storage/db_pool.h"

namespace stele::server {

// Where a component's lock expiry is set, as the reasons of timeout events
// and of a wasm workflow's slice errors name it (executor/outcome.h).
inline constexpr char kLockExpirySetting[] =
    "lock_expiry of the component, else of [executor]; docs/config.md";

// What a worker may need from the running server.
struct WorkerEnv {
  storage::DbPool* pool = nullptr;
  SharedClock clock = nullptr;
  const runtime::workflow::FunctionRegistry* registry = nullptr;
  // A workflow's lease when its component sets none (ExecutorDefaults::LockExpiry).
  std::chrono::milliseconds default_lock_expiry = kDefaultWorkflowLockExpiry;
  // The server's executors by function (filled before they start): a
  // workflow locks the children they serve in the step that creates them.
  const executor::LocalDispatch* dispatch = nullptr;
  // Children's results for their warm parents (executor/response_handoff.h).
  executor::ResponseHandoff* handoff = nullptr;
  // Where a workflow worker measures the writes of its runs
  // (timed_db_connection.h); null: not measured.
  std::shared_ptr<executor::LatencyHistogram> workflow_writes;
  // Running activities of this process, for the cancels a workflow makes
  // (executor/cancel_registry.h).
  executor::CancelRegistry* cancels = nullptr;
};

using WorkerFactory =
    std::function<Result<std::shared_ptr<executor::Worker>, std::string>(const WorkerEnv& env)>;

struct LoadedComponent {
  ComponentConfig config;
  core::ComponentId component_id;
  runtime::workflow::FunctionKind kind = runtime::workflow::FunctionKind::kActivity;
  std::vector<core::FunctionSignature> functions;
  WorkerFactory make_worker;  // empty for stubs (no executor)
};

// Loads every component of `config`; collects all errors.
Result<std::vector<LoadedComponent>, ConfigErrors> LoadComponents(const ServerConfig& config,
                                                                  const std::string& file);

// sha256 of `bytes` as a digest.
core::InputContentDigest Sha256Digest(std::string_view bytes);
// Lowercase hex of the SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

}  // namespace stele::server
