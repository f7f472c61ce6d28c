// Retention (DbExternalApi::DeleteFinishedExecutions): which trees are
// collected, what deleting one removes, bounded batches, idempotence.
#include <optional>
#include <vector>

#include "storage/retention.h"
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class RetentionTest : public ConformanceTest {
 protected:
  // A top-level execution created at `created` and finished at `finished`.
  void FinishedTop(const ExecutionId& id, DateTime created, DateTime finished) {
    Version v = CreateLocked(db(), id, created, Runner::New(), created + 10s);
    Must(db().Append(id, v, FinishedReq(finished, OkResult())));
  }
  // Finishes `child` (version 1) and records its response in its parent.
  void FinishChild(const core::ExecutionIdDerived& child, DateTime at) {
    Must(db().AppendBatchRespondToParent(
        AppendEventsToExecution{ExecutionId(child), Version(1), {FinishedReq(at, OkResult())}},
        ChildResponse(child, at, Version(1), OkResult()), at));
  }
  // Runs whole passes of `batch` until the cursor ends; returns the total.
  DeletedExecutions Pass(DateTime cutoff, uint32_t batch) {
    DeletedExecutions total;
    std::optional<RetentionCursor> cursor;
    do {
      DeletedExecutions one = Must(db().DeleteFinishedExecutions(cutoff, batch, cursor));
      total.examined += one.examined;
      total.deleted_top_level += one.deleted_top_level;
      total.deleted += one.deleted;
      cursor = one.next;
    } while (cursor);
    return total;
  }
  bool Exists(const ExecutionId& id) { return db().GetPendingState(id).has_value(); }

  const core::JoinSetId join_set_ = NamedJoinSet("js");
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(RetentionTest);

core::BacktraceInfo RetentionBacktrace(const ExecutionId& id) {
  core::WasmBacktrace trace{{core::FrameInfo{"module", "fn", {core::FrameSymbol{}}}}};
  return core::BacktraceInfo{id, ComponentB(), Version(0), Version(2), trace};
}

TEST_P(RetentionTest, DeletesTheWholeTreeWithEverythingStoredForIt) {
  const ExecutionId top = NewId();
  const core::ExecutionIdDerived child = ChildId(top, join_set_, 1);
  const core::ExecutionIdDerived grandchild = ChildId(ExecutionId(child), join_set_, 1);
  const core::DelayId fired(top, join_set_, 1);
  const core::DelayId live(ExecutionId(child), join_set_, 2);
  // The tree: top → child → grandchild; a delay of top that fired, a live
  // timer of the child (finished executions may keep one), backtraces.
  Version v = CreateLocked(db(), top, kT0, Runner::New(), kT0 + 10s);
  v = CreateChildren(db(), top, v, kT0, {child});
  v = RequestDelays(db(), top, v, kT0, {fired}, kT0 + 1s);
  Version cv = CreateChildren(db(), ExecutionId(child), Version(1), kT0, {grandchild});
  cv = RequestDelays(db(), ExecutionId(child), cv, kT0, {live}, kT0 + 1000s);
  FinishChild(grandchild, kT0 + 1s);
  Must(db().AppendBatchRespondToParent(
      AppendEventsToExecution{ExecutionId(child), cv, {FinishedReq(kT0 + 2s, OkResult())}},
      ChildResponse(child, kT0 + 2s, cv, OkResult()), kT0 + 2s));
  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 2s, top, join_set_, fired, true)),
            AppendDelayResponseOutcome::kSuccess);
  Must(db().Append(top, v, FinishedReq(kT0 + 3s, OkResult())));
  Must(db().AppendBacktrace(RetentionBacktrace(top)));
  Must(db().AppendBacktrace(RetentionBacktrace(ExecutionId(grandchild))));
  const ExecutionId other = NewId();  // another tree, still running
  Must(db().Create(CreateReq(other, kT0)));

  DeletedExecutions deleted = Must(db().DeleteFinishedExecutions(kT0 + 3s, 10, std::nullopt));
  EXPECT_EQ(deleted.examined, 2u);
  EXPECT_EQ(deleted.deleted_top_level, 1u);
  EXPECT_EQ(deleted.deleted, 3u);
  EXPECT_EQ(deleted.next, std::nullopt);

  for (const ExecutionId& id : {top, ExecutionId(child), ExecutionId(grandchild)}) {
    EXPECT_THAT(db().GetPendingState(id), IsNotFound()) << id.ToString();
    EXPECT_THAT(db().Get(id), IsNotFound()) << id.ToString();
    EXPECT_THAT(db().GetBacktrace(id, BacktraceFilter::Last()), IsNotFound()) << id.ToString();
  }
  EXPECT_THAT(ExpiredDelaysOf(Must(db().GetExpiredTimers(kT0 + 2000s))), IsEmpty());
  EXPECT_THAT(
      IdsOf(Must(db().ListExecutions(std::nullopt, false, core::ExecutionListPagination{}))),
      ElementsAre(other));
  EXPECT_EQ(Must(db().CountExecutionsByState()), (ExecutionCounts{1, 0, 0, 0}));

  // Nothing of the tree is left behind: the same ids are new again, and
  // the same child and delay may be answered once more (their responses,
  // unique per child and per delay, are gone).
  v = CreateLocked(db(), top, kT0 + 5s, Runner::New(), kT0 + 10s);
  EXPECT_EQ(v, Version(2));
  v = CreateChildren(db(), top, v, kT0 + 5s, {child});
  v = RequestDelays(db(), top, v, kT0 + 5s, {fired}, kT0 + 6s);
  FinishChild(child, kT0 + 6s);
  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 6s, top, join_set_, fired, true)),
            AppendDelayResponseOutcome::kSuccess);
  EXPECT_EQ(Must(db().Get(top)).responses.size(), 2u);
}

TEST_P(RetentionTest, KeepsRunningTreesAndThoseWithARunningDescendant) {
  const ExecutionId running = NewId();
  Must(db().Create(CreateReq(running, kT0)));
  const ExecutionId locked = NewId();
  CreateLocked(db(), locked, kT0, Runner::New(), kT0 + 1s);
  // Finished, but its child still runs.
  const ExecutionId with_child = NewId();
  const core::ExecutionIdDerived running_child = ChildId(with_child, join_set_, 1);
  Version v = CreateLocked(db(), with_child, kT0, Runner::New(), kT0 + 10s);
  v = CreateChildren(db(), with_child, v, kT0, {running_child});
  Must(db().Append(with_child, v, FinishedReq(kT0 + 1s, OkResult())));
  // Finished with a finished child, but a grandchild still runs.
  const ExecutionId with_grandchild = NewId();
  const core::ExecutionIdDerived child = ChildId(with_grandchild, join_set_, 1);
  const core::ExecutionIdDerived grandchild = ChildId(ExecutionId(child), join_set_, 1);
  v = CreateLocked(db(), with_grandchild, kT0, Runner::New(), kT0 + 10s);
  v = CreateChildren(db(), with_grandchild, v, kT0, {child});
  Version cv = CreateChildren(db(), ExecutionId(child), Version(1), kT0, {grandchild});
  Must(db().AppendBatchRespondToParent(
      AppendEventsToExecution{ExecutionId(child), cv, {FinishedReq(kT0 + 1s, OkResult())}},
      ChildResponse(child, kT0 + 1s, cv, OkResult()), kT0 + 1s));
  Must(db().Append(with_grandchild, v, FinishedReq(kT0 + 1s, OkResult())));
  const ExecutionId done = NewId();
  FinishedTop(done, kT0, kT0 + 1s);

  DeletedExecutions deleted = Pass(kT0 + 100s, 2);
  EXPECT_EQ(deleted.examined, 5u);
  EXPECT_EQ(deleted.deleted_top_level, 1u);
  EXPECT_EQ(deleted.deleted, 1u);
  EXPECT_FALSE(Exists(done));
  for (const ExecutionId& id : {running, locked, with_child, ExecutionId(running_child),
                                with_grandchild, ExecutionId(child), ExecutionId(grandchild)}) {
    EXPECT_TRUE(Exists(id)) << id.ToString();
  }

  // Once the descendant finishes, the tree goes.
  FinishChild(grandchild, kT0 + 2s);
  EXPECT_EQ(Pass(kT0 + 100s, 10).deleted, 3u);
  EXPECT_FALSE(Exists(with_grandchild));
  EXPECT_FALSE(Exists(ExecutionId(grandchild)));
  EXPECT_TRUE(Exists(with_child));
}

TEST_P(RetentionTest, KeepsTreesThatFinishedAfterTheCutoff) {
  const ExecutionId young = NewId();  // created and finished after the cutoff
  FinishedTop(young, kT0 + 20s, kT0 + 21s);
  const ExecutionId late = NewId();  // created before, finished after
  FinishedTop(late, kT0, kT0 + 20s);
  // Finished before, but its child finished after the cutoff.
  const ExecutionId late_child = NewId();
  const core::ExecutionIdDerived child = ChildId(late_child, join_set_, 1);
  Version v = CreateLocked(db(), late_child, kT0, Runner::New(), kT0 + 10s);
  v = CreateChildren(db(), late_child, v, kT0, {child});
  Must(db().Append(late_child, v, FinishedReq(kT0 + 1s, OkResult())));
  FinishChild(child, kT0 + 20s);
  const ExecutionId old = NewId();
  FinishedTop(old, kT0, kT0 + 10s);  // exactly at the cutoff: collected

  DeletedExecutions deleted = Pass(kT0 + 10s, 10);
  EXPECT_EQ(deleted.examined, 3u);  // `young` was created after the cutoff
  EXPECT_EQ(deleted.deleted, 1u);
  EXPECT_FALSE(Exists(old));
  for (const ExecutionId& id : {young, late, late_child, ExecutionId(child)}) {
    EXPECT_TRUE(Exists(id)) << id.ToString();
  }
  EXPECT_EQ(Pass(kT0 + 30s, 10).deleted, 4u);
}

TEST_P(RetentionTest, BatchesAreBoundedAndResumeAtTheCursor) {
  // Five finished trees and a running one among them, created one second
  // apart: created_at orders them, whatever their ids.
  std::vector<ExecutionId> ids;
  for (int i = 0; i < 6; ++i) {
    ids.push_back(NewId());
    const DateTime created = kT0 + std::chrono::seconds(i);
    if (i == 2) {
      Must(db().Create(CreateReq(ids.back(), created)));
    } else {
      FinishedTop(ids.back(), created, created + 100ms);
    }
  }
  DeletedExecutions first = Must(db().DeleteFinishedExecutions(kT0 + 60s, 2, std::nullopt));
  EXPECT_EQ(first.examined, 2u);
  EXPECT_EQ(first.deleted, 2u);
  ASSERT_TRUE(first.next.has_value());
  EXPECT_EQ(first.next->execution_id, ids[1]);
  EXPECT_EQ(first.next->created_at, kT0 + 1s);
  EXPECT_FALSE(Exists(ids[0]));
  EXPECT_FALSE(Exists(ids[1]));
  EXPECT_TRUE(Exists(ids[3]));

  DeletedExecutions second = Must(db().DeleteFinishedExecutions(kT0 + 60s, 2, first.next));
  EXPECT_EQ(second.examined, 2u);  // the running one and ids[3]
  EXPECT_EQ(second.deleted, 1u);
  ASSERT_TRUE(second.next.has_value());
  EXPECT_EQ(second.next->execution_id, ids[3]);

  DeletedExecutions third = Must(db().DeleteFinishedExecutions(kT0 + 60s, 2, second.next));
  EXPECT_EQ(third.examined, 2u);
  EXPECT_EQ(third.deleted, 2u);
  ASSERT_TRUE(third.next.has_value());  // a full batch: there may be more

  DeletedExecutions last = Must(db().DeleteFinishedExecutions(kT0 + 60s, 2, third.next));
  EXPECT_EQ(last, DeletedExecutions{});
  EXPECT_THAT(
      IdsOf(Must(db().ListExecutions(std::nullopt, false, core::ExecutionListPagination{}))),
      ElementsAre(ids[2]));
}

TEST_P(RetentionTest, IsIdempotent) {
  const ExecutionId a = NewId();
  const ExecutionId b = NewId();
  FinishedTop(a, kT0, kT0 + 1s);
  FinishedTop(b, kT0, kT0 + 1s);
  EXPECT_EQ(Pass(kT0 + 5s, 1).deleted, 2u);
  DeletedExecutions again = Pass(kT0 + 5s, 1);
  EXPECT_EQ(again.examined, 0u);
  EXPECT_EQ(again.deleted, 0u);
  EXPECT_THAT(db().GetPendingState(a), IsNotFound());
  // Resuming at a cursor whose execution is gone is fine too.
  DeletedExecutions resumed =
      Must(db().DeleteFinishedExecutions(kT0 + 5s, 1, RetentionCursor{kT0, a}));
  EXPECT_EQ(resumed, DeletedExecutions{});
}

TEST_P(RetentionTest, RefusesABatchSizeOutOfRange) {
  const ExecutionId a = NewId();
  FinishedTop(a, kT0, kT0 + 1s);
  EXPECT_THAT(db().DeleteFinishedExecutions(kT0 + 5s, 0, std::nullopt),
              IsNonRetriable(kValidationFailed));
  EXPECT_THAT(db().DeleteFinishedExecutions(kT0 + 5s, kMaxRetentionBatch + 1, std::nullopt),
              IsNonRetriable(kValidationFailed));
  EXPECT_TRUE(Exists(a));
  EXPECT_EQ(Must(db().DeleteFinishedExecutions(kT0 + 5s, kMaxRetentionBatch, std::nullopt)).deleted,
            1u);
}

}  // namespace
}  // namespace stele::storage::conformance
