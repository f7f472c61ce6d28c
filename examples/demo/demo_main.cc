// stele_demo: drives the storage layer by hand on an embedded SQLite file —
// a parent workflow calls a child activity that fails once, is retried, and
// finishes; the parent is unblocked by the child's result — then prints
// every execution's event log. Until the executor and the server exist this
// is Stele's "main job".
//
// Usage: stele_demo [path/to/db.sqlite]
#include <chrono>
#include <iostream>

#include "base/clock.h"
#include "core/json_codec.h"
#include "storage/sqlite/sqlite_pool.h"

namespace {

using namespace stele;           // NOLINT: example program
using namespace stele::storage;  // NOLINT
using stele::storage::sqlite::SqliteOptions;
using stele::storage::sqlite::SqlitePool;
using std::chrono::milliseconds;
using std::chrono::seconds;

template <class T, class E>
T OrDie(Result<T, E> result, const char* what) {
  if (!result) {
    std::cerr << "demo: " << what << " failed: " << result.error().ToString() << "\n";
    std::exit(1);
  }
  return std::move(*result);
}

void PrintLog(DbConnectionTest& db, const core::ExecutionId& id) {
  auto log = OrDie(db.Get(id), "get");
  std::cout << "\n== " << id.ToString() << "  state: " << log.pending_state.ToString() << "\n";
  for (const auto& event : log.events) {
    std::cout << "  v" << event.version.value() << "  " << FormatRfc3339(event.created_at) << "  "
              << core::ToJson(event.event).dump() << "\n";
  }
  for (const auto& response : log.responses) {
    std::cout << "  response  " << core::ToJson(response).dump() << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "stele-demo.sqlite";
  auto pool = OrDie(SqlitePool::Open(SqliteOptions{.path = path}), "open");
  auto db = OrDie(pool->ConnectionTest(), "connection");
  const Clock& clock = SystemClock::Instance();

  const auto workflow_ffqn = core::FunctionFqn::Parse("demo:orders/checkout.place-order").value();
  const auto activity_ffqn = core::FunctionFqn::Parse("demo:payments/card.charge").value();
  const auto workflow_component = core::ComponentId::DummyWorkflow();
  const auto activity_component = core::ComponentId::DummyActivity();
  const auto executor_id = core::ExecutorId::Generate();
  const core::ComponentRetryConfig activity_retry{5u, core::Duration::FromMillis(100)};
  const core::ComponentRetryConfig workflow_retry{std::nullopt, core::Duration::FromMillis(100)};

  // 1. Submit the parent workflow.
  const auto parent_id = core::ExecutionId::Generate();
  DateTime now = clock.Now();
  OrDie(db->Create(CreateRequest{now, parent_id, workflow_ffqn,
                                 core::Json::array({{{"order", 42}, {"amount", 1999}}}),
                                 std::nullopt, now, workflow_component, {}, std::nullopt}),
        "create parent");

  // 2. An executor locks it; the workflow calls the activity (one-off join
  //    set, child Created in the same transaction) and awaits it.
  auto run_id = core::RunId::Generate();
  auto locked = OrDie(db->LockPendingByFfqns(10, now, {workflow_ffqn}, now, workflow_component,
                                             executor_id, now + seconds(1), run_id, workflow_retry),
                      "lock parent");
  std::cout << "locked " << locked.size() << " workflow(s)\n";
  auto join_set = core::JoinSetId::Create(core::JoinSetKind::kOneOff, "1-charge").value();
  auto child_id = parent_id.NextLevel(join_set, 1);
  now = clock.Now();
  auto version = OrDie(
      db->AppendBatchCreateNewExecution(
          now,
          {AppendRequest{now, core::HistoryEventRequest{core::HistoryJoinSetCreate{join_set}}},
           AppendRequest{now, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                                  join_set, core::ChildExecutionRequest{
                                                child_id, activity_ffqn,
                                                core::Json::array({1999})}}}},
           AppendRequest{now, core::HistoryEventRequest{core::HistoryJoinNext{
                                  join_set, now, activity_ffqn, false}}}},
          parent_id, locked.front().next_version,
          {CreateRequest{now, child_id, activity_ffqn, core::Json::array({1999}),
                         std::make_pair(core::ExecutionId(parent_id), join_set), now,
                         activity_component, {}, std::nullopt}}),
      "call child");
  (void)version;

  // 3. The activity fails once (retried with backoff), then succeeds; its
  //    Finished and the parent's response are one transaction.
  now = clock.Now();
  auto child_lock = OrDie(db->LockPendingByFfqns(10, now, {activity_ffqn}, now, activity_component,
                                                 executor_id, now + seconds(1),
                                                 core::RunId::Generate(), activity_retry),
                          "lock child");
  auto backoff = core::CanBeRetriedAfter(1, activity_retry.max_retries,
                                         activity_retry.retry_exp_backoff);
  auto child_version =
      OrDie(db->Append(child_id, child_lock.front().next_version,
                       AppendRequest{now, core::TemporarilyFailed{
                                              now + backoff->ToChronoSaturating(),
                                              "card network unavailable", std::nullopt,
                                              std::nullopt}}),
            "temporary failure");
  now = clock.Now() + backoff->ToChronoSaturating();
  auto retry_lock = OrDie(db->LockOne(now, activity_component, child_id, core::RunId::Generate(),
                                      child_version, executor_id, now + seconds(1),
                                      activity_retry),
                          "lock retry");
  core::SupportedFunctionReturnValue result = core::ReturnValueOk{core::Json{{"receipt", "R-1"}}};
  OrDie(db->AppendBatchRespondToParent(
            AppendEventsToExecution{child_id, retry_lock.next_version,
                                    {AppendRequest{now, core::Finished{result, std::nullopt}}}},
            AppendResponseToExecution{parent_id, now, join_set, child_id,
                                      retry_lock.next_version, result},
            now),
        "finish child");

  // 4. The parent is pending again; it is replayed and finishes.
  auto pending = OrDie(db->GetPendingState(parent_id), "pending state");
  std::cout << "parent after child finished: " << pending.ToString() << "\n";
  now = clock.Now() + seconds(2);
  auto relock = OrDie(db->LockPendingByFfqns(10, now, {workflow_ffqn}, now, workflow_component,
                                             executor_id, now + seconds(1),
                                             core::RunId::Generate(), workflow_retry),
                      "relock parent");
  if (relock.size() == 1) {
    OrDie(db->Append(parent_id, relock.front().next_version,
                     AppendRequest{now, core::Finished{core::ReturnValueOk{core::Json("placed")},
                                                       std::nullopt}}),
          "finish parent");
  }
  auto final_result = OrDie(db->WaitForFinishedResult(parent_id, WaitOptions::For(seconds(5))),
                            "wait for result");
  std::cout << "parent result: " << core::ToJson(final_result).dump() << "\n";

  PrintLog(*db, parent_id);
  PrintLog(*db, child_id);
  std::cout << "\ndatabase: " << path << "\n";
  pool->Close();
  return 0;
}
