// Watches: WatchFinished, WatchPublish and Unwatch (docs/storage_contract.md
// "Watches"), the callback form of the waits. A watch that must fire is
// awaited with a bound that never expires when it does; a watch that must
// not fire is checked against a sentinel watch on the same execution
// registered after it, which the same commit fires.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using namespace std::chrono_literals;

// Counts callback runs; shared with the callbacks, which may outlive a
// test's scope on a backend thread.
class WatchFiredCount {
 public:
  WatchCallback Callback() {
    return [self = state_] {
      std::lock_guard lock(self->mu);
      ++self->count;
      if (self->closed) ++self->after_close;
      self->cv.notify_all();
    };
  }
  int count() const {
    std::lock_guard lock(state_->mu);
    return state_->count;
  }
  // From now on a run counts as one after the close (Unwatch returned).
  void Close() {
    std::lock_guard lock(state_->mu);
    state_->closed = true;
  }
  int after_close() const {
    std::lock_guard lock(state_->mu);
    return state_->after_close;
  }
  // Whether at least `n` runs happened within a bound that only a missing
  // notification reaches.
  bool AwaitAtLeast(int n) const {
    std::unique_lock lock(state_->mu);
    return state_->cv.wait_for(lock, 20s, [&] { return state_->count >= n; });
  }

 private:
  struct State {
    mutable std::mutex mu;
    std::condition_variable cv;
    int count = 0;
    bool closed = false;
    int after_close = 0;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

class WatchTest : public ConformanceTest {};
STELE_INSTANTIATE_CONFORMANCE_SUITE(WatchTest);

TEST_P(WatchTest, WatchFinishedFiresOnceAfterTheFinishingCommit) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  WatchFiredCount fired;
  WatchToken token = Must(db().WatchFinished(id, fired.Callback()));
  EXPECT_NE(token, WatchToken{0});
  // A write that does not finish the execution does not fire it (the
  // sentinel is fired by the Finished commit below, after it).
  v = Must(db().AppendBatch(kT0 + 1s, {PersistReq(kT0 + 1s)}, id, v));
  WatchFiredCount sentinel;
  Must(db().WatchFinished(id, sentinel.Callback()));
  Must(db().Append(id, v, FinishedReq(kT0 + 2s, OkResult(core::Json(5)))));
  ASSERT_TRUE(fired.AwaitAtLeast(1));
  ASSERT_TRUE(sentinel.AwaitAtLeast(1));
  EXPECT_EQ(fired.count(), 1);
  // Unwatching a fired watch is harmless.
  db().Unwatch(token);
  EXPECT_EQ(Must(db().WaitForFinishedResult(id, std::nullopt)), OkResult(core::Json(5)));
}

TEST_P(WatchTest, WatchFinishedFiresAtOnceWhenAlreadyFinished) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(id, v, FinishedReq(kT0, OkResult(core::Json(1)))));
  WatchFiredCount fired;
  EXPECT_EQ(Must(db().WatchFinished(id, fired.Callback())), WatchToken{0});
  // On this thread, before returning.
  EXPECT_EQ(fired.count(), 1);
}

TEST_P(WatchTest, UnwatchPreventsTheCall) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  WatchFiredCount unwatched;
  WatchToken token = Must(db().WatchFinished(id, unwatched.Callback()));
  db().Unwatch(token);
  // Before this point the watch may have fired early, as a hint (the
  // contract allows it: PostgreSQL's listener coming up fires every watch);
  // after it, never.
  unwatched.Close();
  WatchFiredCount sentinel;
  Must(db().WatchFinished(id, sentinel.Callback()));
  Must(db().Append(id, v, FinishedReq(kT0 + 1s, OkResult(core::Json(5)))));
  ASSERT_TRUE(sentinel.AwaitAtLeast(1));
  EXPECT_EQ(unwatched.after_close(), 0);
}

TEST_P(WatchTest, WatchOfAnUnknownExecutionIsNotFound) {
  WatchFiredCount fired;
  EXPECT_THAT(db().WatchFinished(NewId(), fired.Callback()), IsNotFound());
  EXPECT_THAT(db().WatchPublish(NewId(), Version(0), fired.Callback()), IsNotFound());
}

AppendRequest WatchPublishReq(DateTime at, int value) {
  return HistoryReq(at, core::HistoryPublish{"k", core::Json(value)});
}

TEST_P(WatchTest, WatchPublishFiresOnAPublishAndAtOnceForOneSinceTheVersion) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  WatchFiredCount fired;
  WatchToken token = Must(db().WatchPublish(id, v, fired.Callback()));
  EXPECT_NE(token, WatchToken{0});
  const Version published = v;
  v = Must(db().AppendBatch(kT0 + 1s, {WatchPublishReq(kT0 + 1s, 1)}, id, v));
  ASSERT_TRUE(fired.AwaitAtLeast(1));
  EXPECT_EQ(fired.count(), 1);

  WatchFiredCount again;
  EXPECT_EQ(Must(db().WatchPublish(id, published, again.Callback())), WatchToken{0});
  EXPECT_EQ(again.count(), 1);
  // Past the Publish nothing is there yet: registered (a token, not fired
  // at once; an early fire as a hint may still come), and fired by the end.
  WatchFiredCount later;
  EXPECT_NE(Must(db().WatchPublish(id, v, later.Callback())), WatchToken{0});
  Must(db().Append(id, v, FinishedReq(kT0 + 2s, OkResult(core::Json(5)))));
  ASSERT_TRUE(later.AwaitAtLeast(1));
  // A finished execution fires at once whatever the version.
  WatchFiredCount finished;
  EXPECT_EQ(Must(db().WatchPublish(id, v.Increment(), finished.Callback())), WatchToken{0});
  EXPECT_EQ(finished.count(), 1);
}

TEST_P(WatchTest, ThousandsOfWatchesOnOneExecution) {
  constexpr int kWatches = 3000;
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  WatchFiredCount fired;
  WatchFiredCount unwatched;
  for (int i = 0; i < kWatches; ++i) {
    Must(db().WatchFinished(id, fired.Callback()));
    db().Unwatch(Must(db().WatchPublish(id, v, unwatched.Callback())));
  }
  // A watch may fire early as a hint while registered (PostgreSQL: a
  // LISTEN (re)connect wakes every watch): only what comes after Unwatch
  // returned counts.
  const auto hinted = unwatched.count();
  Must(db().Append(id, v, FinishedReq(kT0 + 1s, OkResult(core::Json(5)))));
  ASSERT_TRUE(fired.AwaitAtLeast(kWatches));
  EXPECT_EQ(fired.count(), kWatches);
  EXPECT_EQ(unwatched.count(), hinted);
}

TEST_P(WatchTest, WatchesOnManyExecutionsFireEachForItsOwn) {
  constexpr int kExecutions = 1000;
  std::vector<std::pair<ExecutionId, Version>> executions;
  WatchFiredCount finished;
  WatchFiredCount published;
  for (int i = 0; i < kExecutions; ++i) {
    ExecutionId id = NewId();
    Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
    Must(db().WatchFinished(id, finished.Callback()));
    Must(db().WatchPublish(id, v, published.Callback()));
    executions.emplace_back(id, v);
  }
  // Only the first half finishes: each fires its own watches only.
  for (int i = 0; i < kExecutions / 2; ++i) {
    auto& [id, v] = executions[i];
    Must(db().Append(id, v, FinishedReq(kT0 + 1s, OkResult(core::Json(i)))));
  }
  ASSERT_TRUE(finished.AwaitAtLeast(kExecutions / 2));
  ASSERT_TRUE(published.AwaitAtLeast(kExecutions / 2));
  // A sentinel on an unfinished execution, fired by its own finish, orders
  // the check after every notification of the first half.
  auto& [last_id, last_v] = executions.back();
  WatchFiredCount sentinel;
  Must(db().WatchFinished(last_id, sentinel.Callback()));
  Must(db().Append(last_id, last_v, FinishedReq(kT0 + 1s, OkResult(core::Json(0)))));
  ASSERT_TRUE(sentinel.AwaitAtLeast(1));
  EXPECT_EQ(finished.count(), kExecutions / 2 + 1);
  EXPECT_EQ(published.count(), kExecutions / 2 + 1);
}

}  // namespace
}  // namespace stele::storage::conformance
