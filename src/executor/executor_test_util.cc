#include "executor/executor_test_util.h"

#include <unistd.h>

#include <atomic>

#include "core/ids.h"
#include "storage/memory/memory_pool.h"

#ifdef STELE_EXECUTOR_TEST_HAVE_SQLITE
#include "storage/sqlite/sqlite_pool.h"
#endif

namespace stele::executor::testing {

namespace {
const core::FunctionFqn& Ffqn(const char* fn) {
  // Leaked on purpose: referenced from static test data.
  return *new core::FunctionFqn(core::FunctionFqn::Create("testing:executor/ifc", fn).value());
}
}  // namespace

const core::FunctionFqn& ActivityFfqn() {
  static const core::FunctionFqn& ffqn = Ffqn("activity");
  return ffqn;
}
const core::FunctionFqn& ChildFfqn() {
  static const core::FunctionFqn& ffqn = Ffqn("child");
  return ffqn;
}
const core::FunctionFqn& WorkflowFfqn() {
  static const core::FunctionFqn& ffqn = Ffqn("workflow");
  return ffqn;
}

core::ComponentRetryConfig Retries(std::optional<uint32_t> max_retries,
                                   std::chrono::milliseconds backoff) {
  return core::ComponentRetryConfig{
      max_retries, core::Duration::FromMillis(static_cast<uint64_t>(backoff.count()))};
}

core::SupportedFunctionReturnValue OkValue(core::Json value) {
  return core::ReturnValueOk{value.is_null() ? std::nullopt : std::optional<core::Json>(value)};
}

storage::CreateRequest CreateReq(const ExecutionId& id, DateTime at, const core::FunctionFqn& ffqn,
                                 const core::ComponentId& component) {
  return storage::CreateRequest{at, id,        ffqn, core::Json::array(), std::nullopt,
                                at, component, {},   std::nullopt};
}

// --- Backends -------------------------------------------------------------------

std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kMemory ? "Memory" : "Sqlite";
}

std::vector<Backend> AllBackends() {
#ifdef STELE_EXECUTOR_TEST_HAVE_SQLITE
  return {Backend::kMemory, Backend::kSqlite};
#else
  return {Backend::kMemory};
#endif
}

std::unique_ptr<storage::DbPool> OpenBackendPool(Backend backend,
                                                 const std::filesystem::path& dir) {
  if (backend == Backend::kMemory) return storage::memory::MemoryPool::Create();
#ifdef STELE_EXECUTOR_TEST_HAVE_SQLITE
  storage::sqlite::SqliteOptions options{.path = (dir / "stele.sqlite").string()};
  // Semantics do not depend on durability; skip the fsyncs.
  options.synchronous = storage::sqlite::SqliteOptions::Synchronous::kNormal;
  return Must(storage::sqlite::SqlitePool::Open(options));
#else
  (void)dir;
  throw std::runtime_error("SQLite backend not built");
#endif
}

void BackendTest::SetUp() {
  static std::atomic<int> counter{0};
  dir_ = std::filesystem::temp_directory_path() /
         ("stele-executor-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
#ifndef STELE_EXECUTOR_TEST_HAVE_SQLITE
  if (GetParam() == Backend::kSqlite) GTEST_SKIP() << "SQLite backend not built";
#endif
  pool_ = OpenBackendPool(GetParam(), dir_);
  db_ = Must(pool_->ConnectionTest());
}

void BackendTest::TearDown() {
  db_.reset();
  if (pool_) pool_->Close();
  pool_.reset();
  std::filesystem::remove_all(dir_);
}

std::unique_ptr<storage::DbPool> BackendTest::OpenSecondPool() {
  if (GetParam() != Backend::kSqlite) return nullptr;
  return OpenBackendPool(Backend::kSqlite, dir_);  // opens the existing file
}

std::unique_ptr<storage::DbExecutor> BackendTest::ExecConn() { return Must(pool_->DbExecConn()); }

std::unique_ptr<storage::DbConnection> BackendTest::Conn() { return Must(pool_->Connection()); }

storage::ExecutionLog BackendTest::Log(const ExecutionId& id) { return Must(db_->Get(id)); }

std::vector<std::string> BackendTest::EventNames(const ExecutionId& id) {
  std::vector<std::string> names;
  for (const auto& event : Log(id).events) {
    names.emplace_back(core::ExecutionRequestVariantName(event.event));
  }
  return names;
}

core::ExecutionIdDerived BackendTest::CreateParentAwaitingChild(const ExecutionId& parent) {
  const core::ComponentId workflow = core::ComponentId::DummyWorkflow();
  Must(db_->Create(CreateReq(parent, kT0, WorkflowFfqn(), workflow)));
  Must(db_->LockOne(kT0, workflow, parent, core::RunId::Generate(), Version(1),
                    core::ExecutorId::Generate(), kT0 + 1s, Retries(std::nullopt, 1s)));
  const core::JoinSetId join_set =
      core::JoinSetId::Create(core::JoinSetKind::kOneOff, "1-child").value();
  const core::ExecutionIdDerived child = parent.NextLevel(join_set, 1);
  storage::CreateRequest child_req = CreateReq(child, kT0, ChildFfqn());
  child_req.parent = std::make_pair(parent, join_set);
  const std::vector<storage::AppendRequest> batch = {
      {kT0, core::HistoryEventRequest{core::HistoryJoinSetCreate{join_set}}},
      {kT0, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                join_set, core::ChildExecutionRequest{child, ChildFfqn(), core::Json::array()}}}},
      {kT0, core::HistoryEventRequest{core::HistoryJoinNext{join_set, kT0, ChildFfqn(), false}}},
  };
  Must(db_->AppendBatchCreateNewExecution(kT0, batch, parent, Version(2), {child_req}));
  return child;
}

// --- Synchronisation helpers ---------------------------------------------------

void Gate::Open() {
  std::lock_guard lock(mu_);
  open_ = true;
  cv_.notify_all();
}

bool Gate::WaitFor(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return open_; });
}

bool Gate::is_open() {
  std::lock_guard lock(mu_);
  return open_;
}

void WaitForCancel(const CancellationToken& token) {
  // Shared with the callback, which may still be unwinding when we return.
  auto gate = std::make_shared<Gate>();
  const uint64_t id = token.OnCancel([gate] { gate->Open(); });
  while (!gate->WaitFor(1h)) {
  }
  token.Unregister(id);
}

// --- Worker doubles -----------------------------------------------------------

ScriptedWorker::ScriptedWorker(std::vector<core::FunctionFqn> ffqns) : ffqns_(std::move(ffqns)) {}

ScriptedWorker& ScriptedWorker::Then(Step step) {
  std::lock_guard lock(mu_);
  steps_.push_back(std::move(step));
  return *this;
}

WorkerResult ScriptedWorker::Run(WorkerContext ctx) {
  Step step;
  {
    std::lock_guard lock(mu_);
    contexts_.push_back(ctx);
    if (steps_.empty()) {
      ADD_FAILURE() << "ScriptedWorker ran out of steps for " << ctx.execution_id.ToString();
      return WorkerResult::DbUpdated();
    }
    step = std::move(steps_.front());
    steps_.pop_front();
  }
  return step(ctx);
}

size_t ScriptedWorker::runs() const {
  std::lock_guard lock(mu_);
  return contexts_.size();
}

WorkerContext ScriptedWorker::context(size_t run) const {
  std::lock_guard lock(mu_);
  return contexts_.at(run);
}

size_t ScriptedWorker::steps_left() const {
  std::lock_guard lock(mu_);
  return steps_.size();
}

ScriptedWorker::Step ReturnOk(core::SupportedFunctionReturnValue value) {
  return [value](const WorkerContext& ctx) { return WorkerResult::Ok(value, ctx.version); };
}

ScriptedWorker::Step ReturnDbUpdated() {
  return [](const WorkerContext&) { return WorkerResult::DbUpdated(); };
}

ScriptedWorker::Step ReturnFatal(FatalErrorKind kind, std::string reason) {
  return [kind, reason](const WorkerContext& ctx) {
    return WorkerResult::Fatal(ctx.version, kind, reason);
  };
}

ScriptedWorker::Step BlockUntilCancelled(std::shared_ptr<Gate> started, ScriptedWorker::Step then) {
  return [started, then](const WorkerContext& ctx) {
    started->Open();
    WaitForCancel(ctx.cancel);
    return then(ctx);
  };
}

}  // namespace stele::executor::testing
