// Writes through the API that name a delay or child the caller made up
// (issue 16): 404 not_found, and the database is exactly as before — the
// events and responses of every execution involved, and `db check` clean.
// The storage rule behind it is the conformance suite's RequestTest.
#include "server/api_test_fixture.h"
#include "storage/check/consistency_check.h"

namespace stele::server::testing {
namespace {

using ::testing::IsEmpty;

class ApiRequestTest : public ApiTest {
 protected:
  // The parent of ParentWithStubChild() also sleeps: it requested `Delay()`
  // in join set "timers" (due in an hour), then awaits its stub child.
  core::ExecutionIdDerived SleepingParentWithStubChild() {
    core::ExecutionIdDerived child = ParentWithStubChild();
    const core::ExecutionId parent = child.SplitToParts().first;
    auto db = server_->pool().Connection();
    EXPECT_TRUE(db.has_value());
    auto last = (*db)->GetLastExecutionEvent(parent);
    EXPECT_TRUE(last.has_value());
    const DateTime now = SystemClock::Instance().Now();
    const core::DelayId delay(parent, timers_, 1);
    const DateTime expires = now + std::chrono::hours(1);
    std::vector<storage::AppendRequest> batch = {
        {now, core::HistoryEventRequest{core::HistoryJoinSetCreate{timers_}}},
        {now, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                  timers_,
                  core::DelayRequest{delay, expires, core::HistoryEventScheduleAt::At(expires)}}}},
        {now,
         core::HistoryEventRequest{core::HistoryJoinNext{
             child.SplitToParts().second, now + std::chrono::seconds(60), Ffqn(kApprove), false}}}};
    auto appended = (*db)->AppendBatch(now, batch, parent, last->version.Increment());
    EXPECT_TRUE(appended.has_value()) << (appended ? "" : appended.error().ToString());
    return child;
  }

  // What the API shows of the executions: state, events and responses.
  Json Snapshot(const std::vector<std::string>& ids) {
    Json out = Json::array();
    for (const std::string& id : ids) {
      Json doc = Body(Get("/v1/executions/" + id));
      out.push_back({doc["pending_state"],
                     Body(Get("/v1/executions/" + id + "/events?length=1000")),
                     Body(Get("/v1/executions/" + id + "/responses"))});
    }
    return out;
  }

  std::vector<storage::check::Finding> Check() {
    auto api = server_->pool().ExternalApiConn();
    EXPECT_TRUE(api.has_value());
    auto report = storage::check::CheckStore(**api);
    EXPECT_TRUE(report.has_value()) << (report ? "" : report.error());
    return report ? report->findings : std::vector<storage::check::Finding>{};
  }

  const core::JoinSetId timers_ = *core::JoinSetId::Create(core::JoinSetKind::kNamed, "timers");
};

TEST_F(ApiRequestTest, CancellingADelayThatWasNeverRequestedIs404AndWritesNothing) {
  const core::ExecutionIdDerived child = SleepingParentWithStubChild();
  const auto [parent, children] = child.SplitToParts();
  const std::vector<std::string> ids = {parent.ToString(), child.ToString()};
  const Json before = Snapshot(ids);
  ASSERT_EQ(before[0][0]["status"], "blocked_by_join_set") << before[0][0].dump();
  ASSERT_THAT(Check(), IsEmpty());

  for (const core::DelayId& made_up :
       {core::DelayId(parent, timers_, 9), core::DelayId(parent, children, 1),
        core::DelayId(core::ExecutionId::Generate(), timers_, 1)}) {
    auto res = Put("/v1/delays/" + made_up.ToString() + "/cancel", Json::object());
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << made_up.ToString() << " → " << res->body;
    EXPECT_EQ(ErrorKind(res), "not_found") << res->body;
  }
  EXPECT_EQ(Snapshot(ids), before);
  EXPECT_THAT(Check(), IsEmpty());

  // The real delay cancels; the stub child is still there to be stubbed.
  auto cancelled =
      Put("/v1/delays/" + core::DelayId(parent, timers_, 1).ToString() + "/cancel", Json::object());
  ASSERT_EQ(cancelled->status, 200) << cancelled->body;
  EXPECT_EQ(Body(cancelled)["outcome"], "cancelled");
  EXPECT_EQ(
      Put("/v1/executions/" + child.ToString() + "/stub", {{"result", {{"ok", "yes"}}}})->status,
      200);
  EXPECT_THAT(Check(), IsEmpty());
}

TEST_F(ApiRequestTest, StubbingAChildThatWasNeverRequestedIs404AndWritesNothing) {
  const core::ExecutionIdDerived child = ParentWithStubChild(/*join_next=*/true);
  const auto [parent, children] = child.SplitToParts();
  const std::vector<std::string> ids = {parent.ToString(), child.ToString()};
  const Json before = Snapshot(ids);
  auto res = Put("/v1/executions/" + parent.NextLevel(children, 2).ToString() + "/stub",
                 {{"result", {{"ok", "yes"}}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404) << res->body;
  EXPECT_EQ(ErrorKind(res), "not_found");
  EXPECT_EQ(Snapshot(ids), before);
  EXPECT_THAT(Check(), IsEmpty());
}

TEST_F(ApiRequestTest, UpgradingAnUnknownExecutionIs404) {
  // To a digest a component serves (another one is refused before storage).
  const std::string digest = stub_digest_.ToString();
  auto res = Put("/v1/executions/" + core::ExecutionId::Generate().ToString() + "/upgrade",
                 {{"old_digest", Sha256Digest("v1").ToString()}, {"new_digest", digest}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404) << res->body;
  EXPECT_EQ(ErrorKind(res), "not_found");
}

}  // namespace
}  // namespace stele::server::testing
