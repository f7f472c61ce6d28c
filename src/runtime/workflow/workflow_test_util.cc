#include "runtime/workflow/workflow_test_util.h"

#include <unistd.h>

#include <atomic>
#include <sstream>

#include "runtime/workflow/run_state.h"
#include "storage/memory/memory_pool.h"
#ifdef STELE_WORKFLOW_TEST_HAVE_SQLITE
#include "storage/sqlite/sqlite_pool.h"
#endif

namespace stele::runtime::workflow::testing {

namespace {

core::FunctionFqn Ffqn(const char* text) { return *(core::FunctionFqn::Parse(text)); }

// Runs the script over a WorkflowRun built from the context.
class ScriptWorker final : public executor::Worker {
 public:
  ScriptWorker(storage::DbConnection& db, SharedClock clock, const FunctionRegistry& registry,
               WorkflowRunOptions options, Script script, executor::CancelRegistry* cancels)
      : db_(db),
        clock_(std::move(clock)),
        registry_(registry),
        options_(options),
        script_(std::move(script)),
        cancels_(cancels) {}

  executor::WorkerResult Run(executor::WorkerContext ctx) override {
    WorkflowRun run(std::move(ctx),
                    WorkflowRunDeps{&db_, clock_.get(), &registry_, nullptr, nullptr, cancels_},
                    options_);
    return script_(run);
  }
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

 private:
  storage::DbConnection& db_;
  const SharedClock clock_;
  const FunctionRegistry& registry_;
  const WorkflowRunOptions options_;
  const Script script_;
  executor::CancelRegistry* const cancels_;
  const std::vector<core::FunctionFqn> ffqns_{WorkflowFfqn(), ChildWorkflowFfqn()};
};

// An activity: returns ok(params[0] * 2), or ok(null) without params.
class LambdaWorker final : public executor::Worker {
 public:
  using Fn = std::function<executor::WorkerResult(const executor::WorkerContext&)>;
  LambdaWorker(std::vector<core::FunctionFqn> ffqns, Fn fn)
      : ffqns_(std::move(ffqns)), fn_(std::move(fn)) {}
  executor::WorkerResult Run(executor::WorkerContext ctx) override { return fn_(ctx); }
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

 private:
  const std::vector<core::FunctionFqn> ffqns_;
  const Fn fn_;
};

}  // namespace

const core::FunctionFqn& WorkflowFfqn() {
  static const core::FunctionFqn kFfqn = Ffqn("testing:workflow/ifc.workflow");
  return kFfqn;
}
const core::FunctionFqn& ChildWorkflowFfqn() {
  static const core::FunctionFqn kFfqn = Ffqn("testing:workflow/ifc.child-workflow");
  return kFfqn;
}
const core::FunctionFqn& ActivityFfqn() {
  static const core::FunctionFqn kFfqn = Ffqn("testing:workflow/ifc.activity");
  return kFfqn;
}
const core::FunctionFqn& FailingFfqn() {
  static const core::FunctionFqn kFfqn = Ffqn("testing:workflow/ifc.failing");
  return kFfqn;
}
const core::FunctionFqn& StubFfqn() {
  static const core::FunctionFqn kFfqn = Ffqn("testing:workflow/ifc.stub");
  return kFfqn;
}

const core::FunctionFqn& BlockingFfqn() {
  static const core::FunctionFqn kFfqn = Ffqn("testing:workflow/ifc.blocking");
  return kFfqn;
}

core::SupportedFunctionReturnValue OkValue(core::Json value) {
  return core::ReturnValueOk{value.is_null() ? std::nullopt : std::optional<core::Json>(value)};
}

std::string StrategyName(BlockingStrategy strategy) {
  return strategy == BlockingStrategy::kAwait ? "Await" : "Interrupt";
}

WorkflowRunOptions TestOptions(BlockingStrategy strategy) {
  WorkflowRunOptions options;
  options.blocking_strategy = strategy;
  options.max_warm_wait = std::chrono::milliseconds(0);
  return options;
}

std::string Describe(const std::vector<core::HistoryEvent>& events) {
  std::ostringstream out;
  for (const auto& event : events) out << "  " << internal::DescribeHistoryEvent(event) << "\n";
  return out.str();
}

TestEnv::TestEnv(Backend backend, WorkflowRunOptions options, Script script)
    : options_(options), script_(std::move(script)) {
  static std::atomic<int> counter{0};
  dir_ = std::filesystem::temp_directory_path() /
         ("stele-workflow-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  if (backend == Backend::kMemory) {
    pool_ = storage::memory::MemoryPool::Create();
  } else {
#ifdef STELE_WORKFLOW_TEST_HAVE_SQLITE
    storage::sqlite::SqliteOptions sqlite{.path = (dir_ / "stele.sqlite").string()};
    sqlite.synchronous = storage::sqlite::SqliteOptions::Synchronous::kNormal;
    pool_ = Must(storage::sqlite::SqlitePool::Open(sqlite));
#else
    pool_ = storage::memory::MemoryPool::Create();
#endif
  }
  db_ = Must(pool_->ConnectionTest());
  worker_conn_ = Must(pool_->Connection());
  const core::ComponentId stub{core::ComponentType::kActivityStub, "stub",
                               core::InputContentDigest()};
  const core::ComponentId failing{core::ComponentType::kActivityWasm, "failing",
                                  core::InputContentDigest()};
  const core::ComponentId blocking{core::ComponentType::kActivityWasm, "blocking",
                                   core::InputContentDigest()};
  registry_.Add(ActivityFfqn(), {core::ComponentId::DummyActivity(), FunctionKind::kActivity})
      .Add(FailingFfqn(), {failing, FunctionKind::kActivity})
      .Add(StubFfqn(), {stub, FunctionKind::kActivityStub})
      .Add(BlockingFfqn(), {blocking, FunctionKind::kActivity})
      .Add(WorkflowFfqn(), {core::ComponentId::DummyWorkflow(), FunctionKind::kWorkflow})
      .Add(ChildWorkflowFfqn(), {core::ComponentId::DummyWorkflow(), FunctionKind::kWorkflow});

  StartWorkflowExecutor();

  executor::ExecutorOptions act;
  act.component_id = core::ComponentId::DummyActivity();
  act.lock_expiry = std::chrono::milliseconds(1000);
  act.cancel_registry = cancels_;
  auto runs = activity_runs_;
  activities_ = std::make_unique<executor::ExecTask>(
      std::make_shared<LambdaWorker>(
          std::vector<core::FunctionFqn>{ActivityFfqn()},
          [runs](const executor::WorkerContext& ctx) {
            ++*runs;
            core::Json value =
                ctx.params.is_array() && !ctx.params.empty() && ctx.params[0].is_number_integer()
                    ? core::Json(ctx.params[0].get<int64_t>() * 2)
                    : core::Json();
            return executor::WorkerResult::Ok(OkValue(value), ctx.version);
          }),
      Must(pool_->DbExecConn()), clock_, act);

  executor::ExecutorOptions fail = act;
  fail.component_id = failing;
  fail.retry_config = core::ComponentRetryConfig{0u, core::Duration::FromMillis(100)};
  failing_ = std::make_unique<executor::ExecTask>(
      std::make_shared<LambdaWorker>(
          std::vector<core::FunctionFqn>{FailingFfqn()},
          [](const executor::WorkerContext& ctx) {
            return executor::WorkerResult::Err(ctx.version, executor::ActivityTrap{"boom", {}, {}});
          }),
      Must(pool_->DbExecConn()), clock_, fail);

  executor::ExecutorOptions block = act;
  block.component_id = blocking;
  block.lock_expiry = std::chrono::hours(1);
  // Only the registry may stop these runs (not the cancel watcher), so a
  // test sees whether a cancel reached them through it.
  block.cancel_watch_interval = std::chrono::milliseconds(0);
  auto started = blocking_started_;
  auto cancelled = blocking_cancelled_;
  blocking_ = std::make_unique<executor::ExecTask>(
      std::make_shared<LambdaWorker>(
          std::vector<core::FunctionFqn>{BlockingFfqn()},
          [started, cancelled](const executor::WorkerContext& ctx) {
            started->Open();
            auto fired = std::make_shared<executor::testing::Gate>();
            const uint64_t id = ctx.cancel.OnCancel([fired] { fired->Open(); });
            const bool was_cancelled = fired->WaitFor(std::chrono::seconds(20));
            ctx.cancel.Unregister(id);
            if (!was_cancelled) {
              return executor::WorkerResult::Ok(OkValue("never cancelled"), ctx.version);
            }
            cancelled->Open();
            return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCancelled,
                                                 "cancelled");
          }),
      Must(pool_->DbExecConn()), clock_, block);
  watcher_ = std::make_unique<executor::ExpiredTimersWatcher>(Must(pool_->Connection()), clock_);
}

void TestEnv::StartWorkflowExecutor() {
  executor::ExecutorOptions wf;
  wf.component_id = core::ComponentId::DummyWorkflow();
  wf.retry_config = core::ComponentRetryConfig{std::nullopt, core::Duration::FromMillis(100)};
  wf.lock_expiry = std::chrono::milliseconds(1000);
  workflows_ = std::make_unique<executor::ExecTask>(
      std::make_shared<ScriptWorker>(*worker_conn_, clock_, registry_, options_, script_,
                                     cancels_.get()),
      Must(pool_->DbExecConn()), clock_, wf);
}

void TestEnv::RestartWorkflowExecutor() {
  workflows_.reset();  // Stop: runs in flight are unlocked
  StartWorkflowExecutor();
}

TestEnv::~TestEnv() {
  workflows_.reset();
  activities_.reset();
  failing_.reset();
  blocking_.reset();
  watcher_.reset();
  worker_conn_.reset();
  db_.reset();
  if (pool_) pool_->Close();
  pool_.reset();
  std::filesystem::remove_all(dir_);
}

void TestEnv::CreateWorkflow(const core::ExecutionId& id, core::Json params) {
  const DateTime now = clock_->Now();
  Must(db_->Create(storage::CreateRequest{now,
                                          id,
                                          WorkflowFfqn(),
                                          std::move(params),
                                          std::nullopt,
                                          now,
                                          core::ComponentId::DummyWorkflow(),
                                          {},
                                          std::nullopt}));
}

void TestEnv::Round() {
  const DateTime now = clock_->Now();
  Must(workflows_->TickForTest(now));
  Must(activities_->TickForTest(now));
  Must(failing_->TickForTest(now));
  Must(watcher_->TickForTest(now));
}

void TestEnv::DeclareActivitySignature(core::FunctionSignature signature) {
  registry_.Add(ActivityFfqn(),
                {core::ComponentId::DummyActivity(), FunctionKind::kActivity,
                 std::make_shared<const core::FunctionSignature>(std::move(signature))});
}

void TestEnv::SpawnWorkflows() { Must(workflows_->SpawnForTest(clock_->Now())); }

void TestEnv::TickActivities() { Must(activities_->TickForTest(clock_->Now())); }

void TestEnv::TickWorkflows() { Must(workflows_->TickForTest(clock_->Now())); }

void TestEnv::TickWatcher() { Must(watcher_->TickForTest(clock_->Now())); }

void TestEnv::SpawnBlocking() { Must(blocking_->SpawnForTest(clock_->Now())); }

size_t TestEnv::BlockingInFlight() const { return blocking_->InFlightCountForTest(); }

namespace {

executor::WorkerContext ContextOf(storage::LockedExecution locked) {
  return executor::WorkerContext{
      .execution_id = locked.execution_id,
      .ffqn = locked.ffqn,
      .params = locked.params,
      .metadata = locked.metadata,
      .event_history = std::move(locked.event_history),
      .responses = std::move(locked.responses),
      .version = locked.next_version,
      .locked_event = locked.locked_event,
      .parent = locked.parent,
      .intermittent_event_count = locked.intermittent_event_count,
      .can_be_retried = true,
      .execution_deadline = locked.locked_event.lock_expires_at,
      .cancel = CancellationToken(),
      .run_id = locked.locked_event.run_id,
      .executor_id = locked.locked_event.executor_id,
  };
}

}  // namespace

executor::WorkerContext TestEnv::LockedContext(const core::ExecutionId& id) {
  const DateTime now = clock_->Now();
  const core::Locked locked{
      core::ComponentId::DummyWorkflow(), core::ExecutorId::Generate(), core::RunId::Generate(),
      now + std::chrono::seconds(1),
      core::ComponentRetryConfig{std::nullopt, core::Duration::FromMillis(100)}};
  return ContextOf(
      Must(db_->LockOne(now, locked.component_id, id, locked.run_id, Log(id).next_version,
                        locked.executor_id, locked.lock_expires_at, locked.retry_config)));
}

executor::WorkerContext TestEnv::ReplayContext(const core::ExecutionId& id) {
  const storage::ExecutionLog log = Log(id);
  const auto& created = std::get<core::Created>(log.events.at(0).event);
  std::vector<std::pair<core::HistoryEvent, core::Version>> history;
  for (const core::ExecutionEvent& event : log.events) {
    if (const auto* recorded = std::get_if<core::HistoryEventRequest>(&event.event)) {
      history.emplace_back(recorded->event, event.version);
    }
  }
  const DateTime now = clock_->Now();
  return ContextOf(storage::LockedExecution{
      id, log.next_version, created.metadata,
      core::Locked{core::ComponentId::DummyWorkflow(), core::ExecutorId::Generate(),
                   core::RunId::Generate(), now + std::chrono::seconds(1),
                   core::ComponentRetryConfig{std::nullopt, core::Duration::FromMillis(100)}},
      created.ffqn, created.params, std::move(history), log.responses, created.parent, 0});
}

std::optional<uint64_t> TestEnv::CommittedTransactions() const {
#ifdef STELE_WORKFLOW_TEST_HAVE_SQLITE
  if (const auto* sqlite = dynamic_cast<const storage::sqlite::SqlitePool*>(pool_.get())) {
    return sqlite->stats().transactions_committed;
  }
#endif
  return std::nullopt;
}

bool TestEnv::RunToCompletion(const core::ExecutionId& id, int max_rounds,
                              std::chrono::milliseconds step) {
  for (int i = 0; i < max_rounds; ++i) {
    Round();
    if (Log(id).pending_state.IsFinished()) return true;
    clock_->Advance(step);
  }
  return false;
}

storage::ExecutionLog TestEnv::Log(const core::ExecutionId& id) { return Must(db_->Get(id)); }

std::vector<core::HistoryEvent> TestEnv::History(const core::ExecutionId& id) {
  std::vector<core::HistoryEvent> out;
  for (const auto& event : Log(id).events) {
    const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
    if (history == nullptr) continue;
    core::HistoryEvent copy = history->event;
    if (auto* join_next = std::get_if<core::HistoryJoinNext>(&copy)) {
      join_next->run_expires_at = DateTime{};
    }
    if (auto* request = std::get_if<core::HistoryJoinSetRequest>(&copy)) {
      if (auto* delay = std::get_if<core::DelayRequest>(&request->request)) {
        delay->expires_at = DateTime{};
      }
    }
    out.push_back(std::move(copy));
  }
  return out;
}

std::vector<std::string> TestEnv::EventNames(const core::ExecutionId& id) {
  std::vector<std::string> names;
  for (const auto& event : Log(id).events) {
    if (const auto* history = std::get_if<core::HistoryEventRequest>(&event.event)) {
      names.emplace_back(core::HistoryEventTypeTag(history->event));
    } else {
      names.emplace_back(core::ExecutionRequestVariantName(event.event));
    }
  }
  return names;
}

core::SupportedFunctionReturnValue TestEnv::Result(const core::ExecutionId& id) {
  const auto log = Log(id);
  for (auto it = log.events.rbegin(); it != log.events.rend(); ++it) {
    if (const auto* finished = std::get_if<core::Finished>(&it->event)) return finished->result;
  }
  ADD_FAILURE() << "execution " << id.ToString() << " is not finished";
  return core::FinishedExecutionError{};
}

}  // namespace stele::runtime::workflow::testing
