// The shared t_state rules (sql_rows.h, state_transition.h) on their own;
// the conformance and differential suites run them through both SQL
// backends against the memory model.
#include "storage/state_transition.h"

#include <gtest/gtest.h>

#include "storage/sql_rows.h"

namespace stele::storage {
namespace {

using std::chrono::seconds;

const DateTime kTransitionT0 = DateTimeFromMicros(1'700'000'000'000'000);

core::JoinSetId TransitionJs(const std::string& name) {
  return core::JoinSetId::Create(core::JoinSetKind::kNamed, name).value();
}

class StateTransitionTest : public ::testing::Test {
 protected:
  StateTransitionTest() {
    state_.execution_id = id_.ToString();
    state_.pending_state.value = core::PendingStateLocked{by_, kTransitionT0 + seconds(2), {}};
    state_.corresponding_version = Version(1);
    state_.ffqn = "test:rules/ifc.fn";
    state_.last_lock = by_;
    state_.last_lock_version = Version(1);
    state_.created_at = kTransitionT0;
    state_.first_scheduled_at = kTransitionT0;
    state_.updated_at = kTransitionT0;
  }

  static AppendRequest History(core::HistoryEvent event, DateTime at = kTransitionT0) {
    return AppendRequest{at, core::HistoryEventRequest{std::move(event)}};
  }

  // Applies after CheckAppend, as a backend does.
  AppendEffects Apply(const AppendRequest& req, std::optional<DateTime> awaited = std::nullopt) {
    const Version version = state_.NextVersion();
    EXPECT_TRUE(CheckAppend(state_, version, req));
    auto effects =
        ApplyAppend(state_, version, req,
                    [&](const core::JoinSetId&) -> Result<std::optional<DateTime>, DbErrorWrite> {
                      ++awaited_calls_;
                      return awaited;
                    });
    EXPECT_TRUE(effects);
    return *effects;
  }

  const ExecutionId id_ = ExecutionId::Generate();
  const core::LockedBy by_{core::ExecutorId::Generate(), core::RunId::Generate()};
  const core::JoinSetId js_ = TransitionJs("a");
  ExecutionState state_;
  int awaited_calls_ = 0;
};

TEST_F(StateTransitionTest, ChecksFinishedThenVersionThenLock) {
  const AppendRequest persist = History(core::HistoryJoinSetCreate{js_});
  auto conflict = CheckAppend(state_, Version(5), persist);
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error(),
            DbErrorWrite(DbErrorWriteNonRetriable::VersionConflict(Version(2), Version(5))));

  const AppendRequest steal{kTransitionT0, core::Locked{{},
                                                        core::ExecutorId::Generate(),
                                                        core::RunId::Generate(),
                                                        kTransitionT0 + seconds(5),
                                                        {}}};
  auto locked = CheckAppend(state_, Version(2), steal);
  ASSERT_FALSE(locked);
  EXPECT_EQ(locked.error(),
            DbErrorWrite(DbErrorWriteNonRetriable::IllegalState("cannot lock, already locked")));

  Apply(AppendRequest{kTransitionT0, core::Finished{core::ReturnValueOk{}, {}}});
  auto finished = CheckAppend(state_, Version(5), persist);
  ASSERT_FALSE(finished);
  EXPECT_EQ(finished.error(),
            DbErrorWrite(DbErrorWriteNonRetriable::IllegalState("already finished")));
}

TEST_F(StateTransitionTest, JoinSetCreateOnlyMovesTheVersion) {
  const auto effects = Apply(History(core::HistoryJoinSetCreate{js_}, kTransitionT0 + seconds(1)));
  EXPECT_TRUE(effects.version_only);
  EXPECT_FALSE(effects.pending_at);
  EXPECT_EQ(state_.corresponding_version, Version(2));
  EXPECT_EQ(state_.updated_at, kTransitionT0 + seconds(1));
  EXPECT_TRUE(std::holds_alternative<core::PendingStateLocked>(state_.pending_state.value));
}

TEST_F(StateTransitionTest, JoinNextWithoutItsResponseBlocksOnTheJoinSet) {
  const auto effects =
      Apply(History(core::HistoryJoinNext{js_, kTransitionT0 + seconds(2), {}, false}));
  EXPECT_EQ(awaited_calls_, 1);
  EXPECT_FALSE(effects.version_only);
  EXPECT_FALSE(effects.pending_at);
  const auto* blocked =
      std::get_if<core::PendingStateBlockedByJoinSet>(&state_.pending_state.value);
  ASSERT_NE(blocked, nullptr);
  EXPECT_EQ(blocked->join_set_id, js_);
  EXPECT_EQ(blocked->lock_expires_at, kTransitionT0 + seconds(2));
  EXPECT_FALSE(state_.last_lock_version);
  EXPECT_EQ(state_.last_lock, by_);  // kept: the warm run may extend

  // The response arrives before the lease ends: pending when the lease ends.
  const auto at = ApplyResponse(state_, js_, kTransitionT0 + seconds(1));
  ASSERT_TRUE(at);
  EXPECT_EQ(*at, kTransitionT0 + seconds(2));
  EXPECT_EQ(state_.updated_at, kTransitionT0 + seconds(1));
  // A response on another join set changes nothing.
  EXPECT_FALSE(ApplyResponse(state_, TransitionJs("b"), kTransitionT0 + seconds(3)));
}

TEST_F(StateTransitionTest, JoinNextWithItsResponsePendsAtTheLaterOfLeaseAndResponse) {
  const auto effects =
      Apply(History(core::HistoryJoinNext{js_, kTransitionT0 + seconds(2), {}, false}),
            kTransitionT0 + seconds(7));
  ASSERT_TRUE(effects.pending_at);
  EXPECT_EQ(*effects.pending_at, kTransitionT0 + seconds(7));
  const auto* pending = std::get_if<core::PendingStatePendingAt>(&state_.pending_state.value);
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(pending->scheduled_at, kTransitionT0 + seconds(7));
  EXPECT_EQ(state_.intermittent_event_count, 0u);
}

TEST_F(StateTransitionTest, TemporaryFailureCountsARetryUnlockDoesNot) {
  Apply(AppendRequest{kTransitionT0, core::Unlocked{kTransitionT0 + seconds(1), "shutdown"}});
  EXPECT_EQ(state_.intermittent_event_count, 0u);
  state_.pending_state.value = core::PendingStateLocked{by_, kTransitionT0 + seconds(2), {}};
  core::TemporarilyFailed failed;
  failed.backoff_expires_at = kTransitionT0 + seconds(4);
  failed.reason = "boom";
  const auto effects = Apply(AppendRequest{kTransitionT0, failed});
  EXPECT_EQ(state_.intermittent_event_count, 1u);
  ASSERT_TRUE(effects.pending_at);
  EXPECT_EQ(*effects.pending_at, kTransitionT0 + seconds(4));
}

TEST_F(StateTransitionTest, CancelResumesAPausedRunAndTerminateDisarmsTheDeadline) {
  Apply(AppendRequest{kTransitionT0, core::Paused{"ops"}});
  EXPECT_TRUE(state_.pending_state.paused);
  // Paused while locked: the run is fenced out, the execution pends.
  EXPECT_TRUE(std::holds_alternative<core::PendingStatePendingAt>(state_.pending_state.value));

  const auto effects =
      Apply(History(core::HistoryCancelRequest{kTransitionT0 + seconds(60), true, "stop", false},
                    kTransitionT0 + seconds(1)));
  EXPECT_TRUE(effects.disarm_deadline);
  EXPECT_FALSE(state_.pending_state.paused);
  EXPECT_TRUE(state_.pending_state.cancelling);
  ASSERT_TRUE(effects.pending_at);
  EXPECT_EQ(*effects.pending_at, kTransitionT0 + seconds(1));
}

TEST_F(StateTransitionTest, FinishedDisarmsAndHandsTheResultOver) {
  const AppendRequest req{kTransitionT0 + seconds(1), core::Finished{core::ReturnValueOk{}, {}}};
  const auto effects = Apply(req);
  EXPECT_TRUE(effects.disarm_deadline);
  ASSERT_NE(effects.finished, nullptr);
  EXPECT_EQ(effects.finished, &std::get<core::Finished>(req.event));
  EXPECT_TRUE(state_.IsFinished());
  EXPECT_FALSE(state_.last_lock);
}

TEST(SqlRowsTest, EveryStateRoundTripsThroughItsColumns) {
  const core::LockedBy by{core::ExecutorId::Generate(), core::RunId::Generate()};
  ExecutionState state;
  state.execution_id = ExecutionId::Generate().ToString();
  state.ffqn = "test:rules/ifc.fn";
  state.corresponding_version = Version(4);
  state.created_at = kTransitionT0;
  state.first_scheduled_at = kTransitionT0;
  state.updated_at = kTransitionT0 + seconds(1);
  state.response_count = 3;
  state.last_lock = by;
  state.max_retries = 7;
  state.retry_exp_backoff = core::Duration::FromMillis(250);
  const std::vector<decltype(core::PendingState::value)> values = {
      core::PendingStatePendingAt{kTransitionT0 + seconds(3), by, {}},
      core::PendingStateBlockedByJoinSet{TransitionJs("a"), kTransitionT0 + seconds(2), true, {}},
  };
  for (const auto& value : values) {
    state.pending_state.value = value;
    state.pending_state.paused = true;
    auto columns = EncodeState(state);
    ASSERT_TRUE(columns);
    auto decoded = DecodeState(*columns);
    ASSERT_TRUE(decoded) << decoded.error().ToString();
    EXPECT_EQ(decoded->pending_state, state.pending_state);
    EXPECT_EQ(decoded->last_lock, by);
    EXPECT_EQ(decoded->response_count, 3u);
    EXPECT_EQ(decoded->max_retries, 7u);
    EXPECT_EQ(decoded->retry_exp_backoff, state.retry_exp_backoff);
    EXPECT_EQ(decoded->updated_at, state.updated_at);
  }
}

TEST(SqlRowsTest, AStateWithColumnsOfAnotherIsCorrupt) {
  StateColumns columns;
  columns.execution_id = ExecutionId::Generate().ToString();
  columns.state = std::string(kStatePendingAt);
  columns.join_set_id = TransitionJs("a").ToString();
  auto decoded = DecodeState(columns);
  ASSERT_FALSE(decoded);
  EXPECT_NE(decoded.error().ToString().find("state `pending_at` with columns of another state"),
            std::string::npos);

  columns.join_set_id.reset();
  columns.state = "sleeping";
  decoded = DecodeState(columns);
  ASSERT_FALSE(decoded);
  EXPECT_NE(decoded.error().ToString().find("unknown state `sleeping`"), std::string::npos);
}

}  // namespace
}  // namespace stele::storage
