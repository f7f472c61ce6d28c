// Shared pieces of the executor tests: a fixture that runs each test on the
// real storage backends (memory and SQLite), request builders, and small
// Worker test doubles with scripted results. The doubles stand in for the
// runtime behind the Worker seam only; storage is always real.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/cancellation.h"
#include "base/clock.h"
#include "base/result.h"
#include "core/execution_event.h"
#include "executor/worker.h"
#include "storage/db_pool.h"
#include "storage/requests.h"

namespace stele::executor::testing {

using namespace std::chrono_literals;  // NOLINT: 1s, 100ms in instants

// 2026-01-01T00:00:00Z; every instant in the tests is relative to it.
inline const DateTime kT0{std::chrono::microseconds(1'767'225'600'000'000)};

const core::FunctionFqn& ActivityFfqn();  // testing:executor/ifc.activity
const core::FunctionFqn& ChildFfqn();     // testing:executor/ifc.child
const core::FunctionFqn& WorkflowFfqn();  // testing:executor/ifc.workflow

core::ComponentRetryConfig Retries(std::optional<uint32_t> max_retries,
                                   std::chrono::milliseconds backoff);
core::SupportedFunctionReturnValue OkValue(core::Json value = core::Json());

// Top-level execution of `ffqn` on the dummy activity (or `component`),
// params [], scheduled at `at`.
storage::CreateRequest CreateReq(
    const ExecutionId& id, DateTime at, const core::FunctionFqn& ffqn = ActivityFfqn(),
    const core::ComponentId& component = core::ComponentId::DummyActivity());

// The value of a Result the test expects to hold one; throws otherwise,
// which gtest reports as a failure of the current test.
template <class T, class E>
T Must(Result<T, E> result) {
  if (!result.has_value()) {
    throw std::runtime_error("unexpected error: " + result.error().ToString());
  }
  if constexpr (!std::is_void_v<T>) return *std::move(result);
}

// --- Backends -------------------------------------------------------------------

enum class Backend { kMemory, kSqlite };
std::string BackendName(const ::testing::TestParamInfo<Backend>& info);
// Every backend compiled in.
std::vector<Backend> AllBackends();

// A fresh database of `backend` in `dir` (an existing, empty directory).
std::unique_ptr<storage::DbPool> OpenBackendPool(Backend backend, const std::filesystem::path& dir);

// A fresh database per test on the parameter's backend, plus a ManualClock
// at kT0.
class BackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override;
  void TearDown() override;

  storage::DbPool& pool() { return *pool_; }
  storage::DbConnectionTest& db() { return *db_; }
  std::unique_ptr<storage::DbExecutor> ExecConn();
  std::unique_ptr<storage::DbConnection> Conn();
  storage::ExecutionLog Log(const ExecutionId& id);
  // The events of `id` as variant names: {"Created", "Locked", ...}.
  std::vector<std::string> EventNames(const ExecutionId& id);

  // Creates `parent` (a workflow), locks it at kT0 and blocks it on a
  // one-off join set awaiting one child of ChildFfqn created in the same
  // transaction. Returns the child's id.
  core::ExecutionIdDerived CreateParentAwaitingChild(const ExecutionId& parent);

  // A second pool on the same database, as another process would open it
  // (SQLite: the same file); nullptr where a backend cannot be shared
  // (memory). The caller closes it before the test ends.
  std::unique_ptr<storage::DbPool> OpenSecondPool();

  // The test's scratch directory (removed at TearDown).
  const std::filesystem::path& dir() const { return dir_; }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(kT0);

 private:
  std::filesystem::path dir_;
  std::unique_ptr<storage::DbPool> pool_;
  std::unique_ptr<storage::DbConnectionTest> db_;
};

// --- Synchronisation helpers ---------------------------------------------------

// A one-shot event with a bounded wait (the bound only keeps a broken test
// from hanging; no test asserts on elapsed time).
class Gate {
 public:
  void Open();
  bool WaitFor(std::chrono::milliseconds timeout = 10s);
  bool is_open();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Blocks until `token` is cancelled.
void WaitForCancel(const CancellationToken& token);

// --- Worker doubles -----------------------------------------------------------

// Returns one scripted step per run, in order, and records every context.
class ScriptedWorker : public Worker {
 public:
  using Step = std::function<WorkerResult(const WorkerContext&)>;

  explicit ScriptedWorker(std::vector<core::FunctionFqn> ffqns = {ActivityFfqn()});
  ScriptedWorker& Then(Step step);

  WorkerResult Run(WorkerContext ctx) override;
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

  size_t runs() const;
  WorkerContext context(size_t run) const;
  size_t steps_left() const;

 private:
  const std::vector<core::FunctionFqn> ffqns_;
  mutable std::mutex mu_;
  std::deque<Step> steps_;
  std::vector<WorkerContext> contexts_;
};

// Steps.
ScriptedWorker::Step ReturnOk(core::SupportedFunctionReturnValue value = OkValue());
ScriptedWorker::Step ReturnDbUpdated();
template <class E>
ScriptedWorker::Step ReturnErr(E error) {
  return [error](const WorkerContext& ctx) { return WorkerResult::Err(ctx.version, error); };
}
ScriptedWorker::Step ReturnFatal(FatalErrorKind kind, std::string reason);
// Opens `started`, blocks until the run's token fires, then runs `then`.
ScriptedWorker::Step BlockUntilCancelled(std::shared_ptr<Gate> started, ScriptedWorker::Step then);

}  // namespace stele::executor::testing

namespace stele::core {
// Readable gtest failures for events.
inline void PrintTo(const ExecutionRequest& request, std::ostream* os) {
  *os << ExecutionRequestToString(request);
}
}  // namespace stele::core
