// Notifications: WaitForFinishedResult, WaitForPublish,
// SubscribeToNextResponses and WaitForPending*. Every wait is bounded
// (deadline or cancellation token). Writers on other threads pause briefly
// before writing so that the waiter is most likely already blocked; the
// pause is not what the assertions rely on — the results hold whichever
// thread wins.
#include <chrono>
#include <thread>

#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;
using Clock = std::chrono::steady_clock;

// Long enough to never expire on a loaded CI machine when the event comes.
constexpr auto kLongWait = 20s;
// Short, for waits that are expected to time out.
constexpr auto kShortWait = 50ms;

class WaitTest : public ConformanceTest {
 protected:
  void SetUp() override {
    ConformanceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    writer_db_ = Must(pool().Connection());
  }
  void TearDown() override {
    if (writer_.joinable()) writer_.join();
    writer_db_.reset();
    ConformanceTest::TearDown();
  }
  // Runs `write(connection)` on another thread, on its own connection,
  // after a short pause.
  template <class F>
  void WriteLater(F write) {
    writer_ = std::thread([this, write = std::move(write)]() mutable {
      std::this_thread::sleep_for(20ms);
      write(*writer_db_);
    });
  }

 private:
  std::unique_ptr<DbConnection> writer_db_;
  std::thread writer_;
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(WaitTest);

TEST_P(WaitTest, WaitForFinishedResultReturnsAtOnceWhenFinished) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(id, v, FinishedReq(kT0, ErrResult(core::Json("boom")))));

  // Even with a deadline already in the past the result wins.
  EXPECT_EQ(Must(db().WaitForFinishedResult(id, WaitOptions{Clock::now() - 1s, std::nullopt})),
            ErrResult(core::Json("boom")));
  EXPECT_EQ(Must(db().WaitForFinishedResult(id, std::nullopt)), ErrResult(core::Json("boom")));
}

TEST_P(WaitTest, WaitForFinishedResultReturnsAResultWrittenByAnotherThread) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  WriteLater([id, v](DbConnection& db) {
    EXPECT_THAT(db.Append(id, v, FinishedReq(kT0, OkResult(core::Json(5)))), IsOk());
  });

  EXPECT_EQ(Must(db().WaitForFinishedResult(id, WaitOptions::For(kLongWait))),
            OkResult(core::Json(5)));
}

TEST_P(WaitTest, WaitForFinishedResultTimesOut) {
  ExecutionId id = NewId();
  CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  EXPECT_THAT(db().WaitForFinishedResult(id, WaitOptions::For(kShortWait)),
              IsTimeout(TimeoutOutcome::kTimeout));
}

TEST_P(WaitTest, WaitForFinishedResultCanBeCancelled) {
  ExecutionId id = NewId();
  CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);

  CancellationToken cancelled;
  cancelled.Cancel();
  EXPECT_THAT(db().WaitForFinishedResult(id, WaitOptions::For(kLongWait, cancelled)),
              IsTimeout(TimeoutOutcome::kCancel));

  CancellationToken token;
  WriteLater([token](DbConnection&) { token.Cancel(); });
  Clock::time_point start = Clock::now();
  EXPECT_THAT(db().WaitForFinishedResult(id, WaitOptions::For(kLongWait, token)),
              IsTimeout(TimeoutOutcome::kCancel));
  EXPECT_LT(Clock::now() - start, kLongWait / 2);
}

TEST_P(WaitTest, WaitForFinishedResultOfAnUnknownExecutionIsNotFound) {
  auto result = db().WaitForFinishedResult(NewId(), WaitOptions::For(kShortWait));
  ASSERT_FALSE(result.has_value());
  ASSERT_FALSE(result.error().IsTimeout()) << ErrorText(result.error());
  EXPECT_TRUE(result.error().read().IsNotFound());
}

// WaitForPublish: the wait of a published value's reader (docs/model.md
// §8.6).
AppendRequest WaitPublishReq(DateTime at, const std::string& key, int value) {
  return HistoryReq(at, core::HistoryPublish{key, core::Json(value)});
}

TEST_P(WaitTest, WaitForPublishReturnsAtOnceForAPublishSinceTheVersion) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  const Version published = v;
  v = Must(db().AppendBatch(kT0 + 1s, {WaitPublishReq(kT0 + 1s, "k", 1)}, id, v));
  // Even with a deadline already in the past.
  EXPECT_THAT(db().WaitForPublish(id, published, WaitOptions{Clock::now() - 1s, std::nullopt}),
              IsOk());
  EXPECT_THAT(db().WaitForPublish(id, Version(0), WaitOptions::For(kShortWait)), IsOk());
  // Events that publish nothing do not count: after the Publish there is none.
  v = Must(db().AppendBatch(kT0 + 2s, {PersistReq(kT0 + 2s)}, id, v));
  EXPECT_THAT(db().WaitForPublish(id, published.Increment(), WaitOptions::For(kShortWait)),
              IsTimeout(TimeoutOutcome::kTimeout));
}

TEST_P(WaitTest, WaitForPublishWakesOnAPublishOfAnotherThread) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  WriteLater([id, v](DbConnection& db) {
    EXPECT_THAT(
        db.AppendBatch(kT0 + 1s, {PersistReq(kT0 + 1s), WaitPublishReq(kT0 + 1s, "k", 2)}, id, v),
        IsOk());
  });
  EXPECT_THAT(db().WaitForPublish(id, v, WaitOptions::For(kLongWait)), IsOk());
  // The log holds what woke the waiter.
  ExecutionLog log = Must(db().Get(id));
  ASSERT_THAT(log.events, SizeIs(v.value() + 2));
  EXPECT_EQ(
      log.events.back().event,
      core::ExecutionRequest(core::HistoryEventRequest{core::HistoryPublish{"k", core::Json(2)}}));
}

TEST_P(WaitTest, WaitForPublishWakesWhenTheExecutionFinishes) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  WriteLater([id, v](DbConnection& db) {
    EXPECT_THAT(db.Append(id, v, FinishedReq(kT0 + 1s, OkResult(core::Json(5)))), IsOk());
  });
  // No value can follow the end: the waiter returns, and finds it finished.
  EXPECT_THAT(db().WaitForPublish(id, v, WaitOptions::For(kLongWait)), IsOk());
  EXPECT_TRUE(Must(db().GetPendingState(id)).IsFinished());
  // A finished execution answers at once.
  EXPECT_THAT(db().WaitForPublish(id, v.Increment(), WaitOptions::For(kShortWait)), IsOk());
}

TEST_P(WaitTest, WaitForPublishCanBeCancelled) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  CancellationToken cancelled;
  cancelled.Cancel();
  EXPECT_THAT(db().WaitForPublish(id, v, WaitOptions::For(kLongWait, cancelled)),
              IsTimeout(TimeoutOutcome::kCancel));
  CancellationToken token;
  WriteLater([token](DbConnection&) { token.Cancel(); });
  EXPECT_THAT(db().WaitForPublish(id, v, WaitOptions::For(kLongWait, token)),
              IsTimeout(TimeoutOutcome::kCancel));
}

TEST_P(WaitTest, WaitForPublishOfAnUnknownExecutionIsNotFound) {
  auto result = db().WaitForPublish(NewId(), Version(0), WaitOptions::For(kShortWait));
  ASSERT_FALSE(result.has_value());
  ASSERT_FALSE(result.error().IsTimeout()) << ErrorText(result.error());
  EXPECT_TRUE(result.error().read().IsNotFound());
}

class SubscribeTest : public WaitTest {
 protected:
  // A locked execution with two delay responses in "js".
  ExecutionId WithTwoResponses() {
    ExecutionId id = NewId();
    Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
    RequestDelays(db(), id, v, kT0,
                  {core::DelayId(id, join_set_, 1), core::DelayId(id, join_set_, 2),
                   core::DelayId(id, join_set_, 3)},
                  kT0 + 1h);
    Must(db().AppendDelayResponse(kT0 + 1s, id, join_set_, core::DelayId(id, join_set_, 1), true));
    Must(db().AppendDelayResponse(kT0 + 2s, id, join_set_, core::DelayId(id, join_set_, 2), false));
    return id;
  }
  core::JoinSetResponseEventOuter Response(const ExecutionId& id, uint64_t idx, DateTime at,
                                           bool ok) {
    return {at, core::JoinSetResponseEvent{
                    join_set_, core::DelayFinished{core::DelayId(id, join_set_, idx), ok}}};
  }
  const core::JoinSetId join_set_ = NamedJoinSet("js");
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(SubscribeTest);

TEST_P(SubscribeTest, ReturnsExistingResponsesAtOnce) {
  ExecutionId id = WithTwoResponses();
  EXPECT_THAT(Must(db().SubscribeToNextResponses(id, 0, WaitOptions::For(kLongWait))),
              ElementsAre(Response(id, 1, kT0 + 1s, true), Response(id, 2, kT0 + 2s, false)));
  EXPECT_THAT(Must(db().SubscribeToNextResponses(id, 1, WaitOptions::For(kLongWait))),
              ElementsAre(Response(id, 2, kT0 + 2s, false)));
}

TEST_P(SubscribeTest, WakesOnANewResponseFromAnotherThread) {
  ExecutionId id = WithTwoResponses();
  WriteLater([id, this](DbConnection& db) {
    EXPECT_THAT(
        db.AppendDelayResponse(kT0 + 3s, id, join_set_, core::DelayId(id, join_set_, 3), true),
        IsOk());
  });

  std::vector<core::JoinSetResponseEventOuter> next =
      Must(db().SubscribeToNextResponses(id, 2, WaitOptions::For(kLongWait)));
  EXPECT_THAT(next, ElementsAre(Response(id, 3, kT0 + 3s, true)));
}

TEST_P(SubscribeTest, TimesOutWithoutANewResponse) {
  ExecutionId id = WithTwoResponses();
  EXPECT_THAT(db().SubscribeToNextResponses(id, 2, WaitOptions::For(kShortWait)),
              IsTimeout(TimeoutOutcome::kTimeout));
}

TEST_P(SubscribeTest, CanBeCancelled) {
  ExecutionId id = WithTwoResponses();
  CancellationToken token;
  WriteLater([token](DbConnection&) { token.Cancel(); });
  EXPECT_THAT(db().SubscribeToNextResponses(id, 2, WaitOptions::For(kLongWait, token)),
              IsTimeout(TimeoutOutcome::kCancel));
}

class WaitForPendingTest : public WaitTest {};
STELE_INSTANTIATE_CONFORMANCE_SUITE(WaitForPendingTest);

TEST_P(WaitForPendingTest, ReturnsAtOnceWhenSomethingIsPending) {
  Must(db().Create(CreateReq(NewId(), kT0)));
  auto executor = Must(pool().DbExecConn());

  Clock::time_point start = Clock::now();
  executor->WaitForPendingByFfqn(kT0, {FfqnA()}, WaitOptions::For(kLongWait));
  executor->WaitForPendingByComponentId(kT0, ComponentA(), WaitOptions::For(kLongWait));
  EXPECT_LT(Clock::now() - start, kLongWait / 2);
}

TEST_P(WaitForPendingTest, WakesOnCreateFromAnotherThread) {
  auto executor = Must(pool().DbExecConn());
  WriteLater([](DbConnection& db) { EXPECT_THAT(db.Create(CreateReq(NewId(), kT0)), IsOk()); });

  Clock::time_point start = Clock::now();
  executor->WaitForPendingByFfqn(kT0 + 1s, {FfqnA()}, WaitOptions::For(kLongWait));
  EXPECT_LT(Clock::now() - start, kLongWait / 2);
}

TEST_P(WaitForPendingTest, WakesOnCreateFromAnotherThreadByComponent) {
  auto executor = Must(pool().DbExecConn());
  WriteLater([](DbConnection& db) { EXPECT_THAT(db.Create(CreateReq(NewId(), kT0)), IsOk()); });

  Clock::time_point start = Clock::now();
  executor->WaitForPendingByComponentId(kT0 + 1s, ComponentA(), WaitOptions::For(kLongWait));
  EXPECT_LT(Clock::now() - start, kLongWait / 2);
}

TEST_P(WaitForPendingTest, ReturnsByTheDeadlineWhenNothingIsPending) {
  // Pending later, or for another function / component.
  CreateRequest later = CreateReq(NewId(), kT0);
  later.scheduled_at = kT0 + 1h;
  Must(db().Create(later));
  CreateRequest other = CreateReq(NewId(), kT0);
  other.ffqn = FfqnB();
  other.component_id = ComponentB();
  Must(db().Create(other));
  auto executor = Must(pool().DbExecConn());

  Clock::time_point start = Clock::now();
  executor->WaitForPendingByFfqn(kT0, {FfqnA()}, WaitOptions::For(kShortWait));
  executor->WaitForPendingByComponentId(kT0, ComponentA(), WaitOptions::For(kShortWait));
  EXPECT_LT(Clock::now() - start, kLongWait / 2);
}

TEST_P(WaitForPendingTest, CanBeCancelled) {
  auto executor = Must(pool().DbExecConn());
  CancellationToken token;
  WriteLater([token](DbConnection&) { token.Cancel(); });
  Clock::time_point start = Clock::now();
  executor->WaitForPendingByFfqn(kT0, {FfqnA()}, WaitOptions::For(kLongWait, token));
  EXPECT_LT(Clock::now() - start, kLongWait / 2);
}

}  // namespace
}  // namespace stele::storage::conformance
