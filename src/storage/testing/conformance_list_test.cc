// Reads for the API and UI: ListExecutions (pagination both ways, with and
// without the cursor, filters), ListExecutionEvents, ListResponses,
// backtraces, record field order, and agreement of Get with the
// fine-grained reads.
#include <algorithm>

#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

using CreatedAtPage = core::Pagination<std::optional<DateTime>>;
using IdPage = core::Pagination<std::optional<ExecutionId>>;
using ResponsePage = core::Pagination<uint32_t>;

class ListTest : public ConformanceTest {
 protected:
  std::vector<ExecutionId> List(const core::ExecutionListPagination& pagination,
                                const std::optional<core::FunctionFqn>& ffqn = std::nullopt,
                                bool top_level_only = false) {
    return IdsOf(Must(db().ListExecutions(ffqn, top_level_only, pagination)));
  }
  std::vector<uint32_t> Cursors(const ExecutionId& id, const ResponsePage& page) {
    std::vector<uint32_t> cursors;
    for (const ResponseWithCursor& response : Must(db().ListResponses(id, page))) {
      cursors.push_back(response.cursor);
    }
    return cursors;
  }
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(ListTest);

TEST_P(ListTest, ListExecutionsDefaultsToTheTwentyNewest) {
  std::vector<ExecutionId> ids;
  for (int i = 0; i < 25; ++i) {
    ids.push_back(NewId());
    Must(db().Create(CreateReq(ids.back(), kT0 + std::chrono::seconds(i))));
  }
  std::vector<ExecutionId> listed = List(core::ExecutionListPagination{});
  ASSERT_THAT(listed, SizeIs(20));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(listed[i], ids[24 - i]) << i;
}

TEST_P(ListTest, ListExecutionsPagesByCreatedAt) {
  // ids[i] created at kT0 + i seconds, i = 1..5.
  std::vector<ExecutionId> ids(6, NewId());
  for (int i = 1; i <= 5; ++i) {
    ids[i] = NewId();
    Must(db().Create(CreateReq(ids[i], kT0 + std::chrono::seconds(i))));
  }
  DateTime t2 = kT0 + 2s, t4 = kT0 + 4s;

  EXPECT_THAT(List(CreatedAtPage::OlderThan(2, t4, false)), ElementsAre(ids[3], ids[2]));
  EXPECT_THAT(List(CreatedAtPage::OlderThan(2, t4, true)), ElementsAre(ids[4], ids[3]));
  EXPECT_THAT(List(CreatedAtPage::NewerThan(2, t2, false)), ElementsAre(ids[4], ids[3]));
  EXPECT_THAT(List(CreatedAtPage::NewerThan(2, t2, true)), ElementsAre(ids[3], ids[2]));
  EXPECT_THAT(List(CreatedAtPage::NewerThan(2, std::nullopt, false)), ElementsAre(ids[2], ids[1]));
  EXPECT_THAT(List(CreatedAtPage::OlderThan(10, std::nullopt, false)),
              ElementsAre(ids[5], ids[4], ids[3], ids[2], ids[1]));
  EXPECT_THAT(List(CreatedAtPage::OlderThan(10, kT0 + 1s, false)), IsEmpty());
  EXPECT_THAT(List(CreatedAtPage::NewerThan(10, kT0 + 5s, false)), IsEmpty());
}

TEST_P(ListTest, ListExecutionsPagesById) {
  // Creation order differs from id order on purpose.
  for (uint64_t n : {4, 1, 5, 3, 2}) Must(db().Create(CreateReq(TopLevelId(n), kT0)));
  auto id = [](uint64_t n) { return TopLevelId(n); };

  EXPECT_THAT(List(IdPage::OlderThan(2, id(4), false)), ElementsAre(id(3), id(2)));
  EXPECT_THAT(List(IdPage::OlderThan(2, id(4), true)), ElementsAre(id(4), id(3)));
  EXPECT_THAT(List(IdPage::NewerThan(2, id(2), false)), ElementsAre(id(4), id(3)));
  EXPECT_THAT(List(IdPage::NewerThan(2, id(2), true)), ElementsAre(id(3), id(2)));
  EXPECT_THAT(List(IdPage::OlderThan(10, std::nullopt, false)),
              ElementsAre(id(5), id(4), id(3), id(2), id(1)));
  EXPECT_THAT(List(IdPage::NewerThan(10, id(5), false)), IsEmpty());
}

// Lists by id follow core::ListKey (docs/storage_contract.md,
// "Listing order"): children right after their parent, numbers compared as
// numbers, so a workflow's children list in the order it created them
// (`_2` before `_10`, `o:2-x` before `o:10-x`; as text, `_10` came between
// `_1` and `_2`). A cursor is a position in that order, whichever id it
// names, so pages of any size, in both directions, meet without gaps or
// repeats.
TEST_P(ListTest, ListExecutionsOrdersChildrenAsCreated) {
  const ExecutionId parent = TopLevelId(2);
  // Expected order, oldest first (the listing is its reverse).
  std::vector<ExecutionId> order = {TopLevelId(1), parent};
  const core::JoinSetId generated =
      core::JoinSetId::Create(core::JoinSetKind::kGenerated, "1").value();
  std::vector<core::ExecutionIdDerived> children;  // of `parent`
  for (uint64_t idx = 1; idx <= 12; ++idx) children.push_back(ChildId(parent, generated, idx));
  const core::ExecutionIdDerived grandchild =
      ChildId(ChildId(parent, generated, 12), NamedJoinSet("js"), 1);
  for (uint64_t n : {2, 9, 10, 11}) {
    children.push_back(ChildId(
        parent,
        core::JoinSetId::Create(core::JoinSetKind::kOneOff, std::to_string(n) + "-pay").value(),
        1));
  }
  for (size_t i = 0; i < children.size(); ++i) {
    order.push_back(children[i]);
    if (i == 11) order.push_back(grandchild);  // right after its parent, child _12
  }
  order.push_back(TopLevelId(3));
  // Created in an order that is neither: the store must sort. Children
  // exist only requested by their (locked) parent.
  Must(db().Create(CreateReq(TopLevelId(3), kT0)));
  Version version = CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
  for (size_t i = children.size(); i-- > 0;) {
    if (i % 2 == 0) version = CreateChildren(db(), parent, version, kT0, {children[i]});
  }
  for (size_t i = 0; i < children.size(); ++i) {
    if (i % 2 == 1) version = CreateChildren(db(), parent, version, kT0, {children[i]});
  }
  const Version child_version =
      Must(LockOneAt(db(), children[11], Version(1), kT0, Runner::New(), kT0 + 10s)).next_version;
  CreateChildren(db(), children[11], child_version, kT0, {grandchild});
  Must(db().Create(CreateReq(TopLevelId(1), kT0)));
  const std::vector<ExecutionId> newest_first(order.rbegin(), order.rend());
  EXPECT_EQ(List(IdPage::OlderThan(100, std::nullopt, false)), newest_first);

  for (uint16_t length : {1, 4, 7}) {
    std::vector<ExecutionId> older;  // following each page's last id
    std::optional<ExecutionId> cursor;
    while (true) {
      std::vector<ExecutionId> page = List(IdPage::OlderThan(length, cursor, false));
      older.insert(older.end(), page.begin(), page.end());
      if (page.size() < length) break;
      cursor = page.back();
    }
    EXPECT_EQ(older, newest_first) << "pages of " << length << ", older";
    std::vector<ExecutionId> newer;  // from the oldest, each page prepended
    cursor = std::nullopt;
    while (true) {
      std::vector<ExecutionId> page = List(IdPage::NewerThan(length, cursor, false));
      newer.insert(newer.begin(), page.begin(), page.end());
      if (page.size() < length) break;
      cursor = page.front();
    }
    EXPECT_EQ(newer, newest_first) << "pages of " << length << ", newer";
  }
  // A cursor the store does not hold is a position too.
  const ExecutionId absent = ChildId(parent, NamedJoinSet("a"), 5);  // after g:, before o:
  EXPECT_THAT(List(IdPage::OlderThan(2, absent, false)), ElementsAre(order[14], order[13]));
  EXPECT_THAT(List(IdPage::NewerThan(1, absent, false)), ElementsAre(order[15]));
  // Top-level only: the children are skipped, the order is unchanged.
  EXPECT_THAT(List(IdPage::OlderThan(10, order[5], false), std::nullopt, true),
              ElementsAre(parent, TopLevelId(1)));
  EXPECT_THAT(List(IdPage::OlderThan(100, std::nullopt, false), FfqnA(), false), newest_first);
}

TEST_P(ListTest, ListExecutionsFiltersByFfqnAndTopLevel) {
  ExecutionId a = NewId(), b = NewId();
  Must(db().Create(CreateReq(a, kT0)));
  CreateRequest req_b = CreateReq(b, kT0 + 1s);
  req_b.ffqn = FfqnB();
  Must(db().Create(req_b));
  core::ExecutionIdDerived child = ChildId(a, NamedJoinSet("js"), 1);
  CreateChildren(db(), a, Version(1), kT0 + 2s, {child});

  EXPECT_THAT(List(core::ExecutionListPagination{}), ElementsAre(ExecutionId(child), b, a));
  EXPECT_THAT(List(core::ExecutionListPagination{}, FfqnB()), ElementsAre(b));
  EXPECT_THAT(List(core::ExecutionListPagination{}, std::nullopt, true), ElementsAre(b, a));
  EXPECT_THAT(List(core::ExecutionListPagination{}, FfqnA(), true), ElementsAre(a));
}

TEST_P(ListTest, ListExecutionsReportsTheCurrentState) {
  ExecutionId id = NewId();
  CreateRequest req = CreateReq(id, kT0);
  req.scheduled_at = kT0 + 3s;
  req.component_id = ComponentB();
  Must(db().Create(req));
  Runner runner = Runner::New();
  Must(LockOneAt(db(), id, Version(1), kT0 + 3s, runner, kT0 + 13s));

  std::vector<ExecutionWithState> rows =
      Must(db().ListExecutions(std::nullopt, false, core::ExecutionListPagination{}));
  ASSERT_THAT(rows, SizeIs(1));
  EXPECT_EQ(rows[0], (ExecutionWithState{id, FfqnA(),
                                         LockedState(runner, kT0 + 13s, ComponentB().input_digest),
                                         kT0, kT0 + 3s, ComponentB().input_digest}));
}

TEST_P(ListTest, CountExecutionsByStateCountsEveryExecution) {
  EXPECT_EQ(Must(db().CountExecutionsByState()), ExecutionCounts{});
  Must(db().Create(CreateReq(NewId(), kT0)));
  Must(db().Create(CreateReq(NewId(), kT0)));
  ExecutionId finished = NewId();
  Version v = CreateLocked(db(), finished, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(finished, v, FinishedReq(kT0 + 1s, OkResult())));
  CreateLocked(db(), NewId(), kT0, Runner::New(), kT0 + 10s);
  EXPECT_EQ(
      Must(db().CountExecutionsByState()),
      (ExecutionCounts{.pending_at = 2, .locked = 1, .blocked_by_join_set = 0, .finished = 1}));
}

TEST_P(ListTest, CountPendingByFfqnsCountsTheQueueOfTheGivenFunctions) {
  EXPECT_EQ(Must(db().CountPendingByFfqns({FfqnA()}, kT0)), PendingCounts{});
  // FfqnA: two due (one at exactly `now`), one scheduled later, one backing
  // off after a temporary failure, one locked, one blocked, one finished,
  // and a due child.
  Must(db().Create(CreateReq(NewId(), kT0)));
  CreateRequest at_now = CreateReq(NewId(), kT0);
  at_now.scheduled_at = kT0 + 5s;
  Must(db().Create(at_now));
  CreateRequest later = CreateReq(NewId(), kT0);
  later.scheduled_at = kT0 + 1h;
  Must(db().Create(later));
  ExecutionId failed = NewId();
  Version v = CreateLocked(db(), failed, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(failed, v, TemporarilyFailedReq(kT0 + 1s, kT0 + 1min)));
  CreateLocked(db(), NewId(), kT0, Runner::New(), kT0 + 10s);
  ExecutionId parent = NewId();
  v = CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
  const core::JoinSetId join_set = NamedJoinSet("js");
  const core::ExecutionIdDerived child = ChildId(parent, join_set, 1);
  Must(db().AppendBatchCreateNewExecution(
      kT0,
      {JoinSetCreateReq(kT0, join_set), ChildRequestReq(kT0, child),
       JoinNextReq(kT0, join_set, kT0 + 10s)},
      parent, v, {ChildCreateReq(child, kT0)}));
  ExecutionId finished = NewId();
  v = CreateLocked(db(), finished, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(finished, v, FinishedReq(kT0 + 1s, OkResult())));
  // FfqnB: one due.
  CreateRequest other = CreateReq(NewId(), kT0);
  other.ffqn = FfqnB();
  Must(db().Create(other));

  const DateTime now = kT0 + 5s;
  EXPECT_EQ(Must(db().CountPendingByFfqns({FfqnA()}, now)),
            (PendingCounts{.due = 3, .scheduled_later = 2, .locked = 1}));
  EXPECT_EQ(Must(db().CountPendingByFfqns({FfqnB()}, now)),
            (PendingCounts{.due = 1, .scheduled_later = 0, .locked = 0}));
  // Each execution once, however often its ffqn is named.
  EXPECT_EQ(Must(db().CountPendingByFfqns({FfqnA(), FfqnB(), FfqnA()}, now)),
            (PendingCounts{.due = 4, .scheduled_later = 2, .locked = 1}));
  // `now` moves the line between due and later.
  EXPECT_EQ(Must(db().CountPendingByFfqns({FfqnA()}, kT0 + 2h)),
            (PendingCounts{.due = 5, .scheduled_later = 0, .locked = 1}));
  EXPECT_EQ(Must(db().CountPendingByFfqns({}, now)), PendingCounts{});
}

// The server's check for executions no component can run: pending rows
// per digest, nothing else (locked, blocked and finished ones are not
// waiting for a component), and an upgrade moves the count.
TEST_P(ListTest, CountPendingByComponentDigestCountsOnlyPendingRows) {
  EXPECT_EQ(Must(db().CountPendingByComponentDigest()), std::vector<DigestCount>{});
  const core::InputContentDigest served = ComponentA().input_digest;
  const core::InputContentDigest gone = DigestOf(0xee);
  Must(db().Create(CreateReq(NewId(), kT0)));
  CreateRequest later = CreateReq(NewId(), kT0);
  later.scheduled_at = kT0 + 1h;  // pending, not yet due: counted too
  Must(db().Create(later));
  ExecutionId orphan = NewId();
  Must(db().Create(CreateReq(orphan, kT0)));
  Must(db().UpgradeExecutionComponent(orphan, served, gone));
  CreateLocked(db(), NewId(), kT0, Runner::New(), kT0 + 10s);
  ExecutionId finished = NewId();
  Version v = CreateLocked(db(), finished, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(finished, v, FinishedReq(kT0 + 1s, OkResult())));

  std::vector<DigestCount> expected{DigestCount{served, 2}, DigestCount{gone, 1}};
  std::sort(expected.begin(), expected.end(),
            [](const DigestCount& a, const DigestCount& b) { return a.digest < b.digest; });
  EXPECT_EQ(Must(db().CountPendingByComponentDigest()), expected);
}

TEST_P(ListTest, ListExecutionEventsHonoursSinceAndMaxLength) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  Must(db().AppendBatch(kT0, {PersistReq(kT0 + 1s), PersistReq(kT0 + 2s), PersistReq(kT0 + 3s)}, id,
                        v));
  auto versions = [&](uint32_t since, uint32_t length) {
    std::vector<uint32_t> out;
    for (const core::ExecutionEvent& event :
         Must(db().ListExecutionEvents(id, Version(since), length, false))) {
      out.push_back(event.version.value());
    }
    return out;
  };
  EXPECT_THAT(versions(0, 100), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(versions(1, 2), ElementsAre(1, 2));
  EXPECT_THAT(versions(4, 10), ElementsAre(4));
  EXPECT_THAT(versions(5, 10), IsEmpty());
  EXPECT_THAT(versions(0, 0), IsEmpty());
}

core::BacktraceInfo Backtrace(const ExecutionId& id, uint32_t min, uint32_t max) {
  core::WasmBacktrace trace{{core::FrameInfo{
      "module",
      "fn_" + std::to_string(min),
      {core::FrameSymbol{"sym", "src/lib.rs", 10 + min, 4}, core::FrameSymbol{}}}}};
  return core::BacktraceInfo{id, ComponentB(), Version(min), Version(max), trace};
}

TEST_P(ListTest, BacktracesAreFoundByFilter) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  Must(db().AppendBatch(kT0, {PersistReq(kT0), PersistReq(kT0), PersistReq(kT0), PersistReq(kT0)},
                        id, v));
  EXPECT_THAT(db().AppendBacktrace(Backtrace(id, 1, 3)), IsOk());
  EXPECT_THAT(db().AppendBacktraceBatch({Backtrace(id, 3, 5), Backtrace(id, 5, 6)}), IsOk());

  EXPECT_EQ(Must(db().GetBacktrace(id, BacktraceFilter::First())), Backtrace(id, 1, 3));
  EXPECT_EQ(Must(db().GetBacktrace(id, BacktraceFilter::Last())), Backtrace(id, 5, 6));
  EXPECT_EQ(Must(db().GetBacktrace(id, BacktraceFilter::Specific(Version(3)))),
            Backtrace(id, 3, 5));
  EXPECT_EQ(Must(db().GetBacktrace(id, BacktraceFilter::Specific(Version(4)))),
            Backtrace(id, 3, 5));
  EXPECT_THAT(db().GetBacktrace(id, BacktraceFilter::Specific(Version(0))), IsNotFound());
  EXPECT_THAT(db().GetBacktrace(id, BacktraceFilter::Specific(Version(6))), IsNotFound());
  EXPECT_THAT(db().GetBacktrace(NewId(), BacktraceFilter::Last()), IsNotFound());
}

// A run stores its backtraces without waiting (SQLite queues them on its
// writer); a client that sees the run's next write — its result — sees
// them too.
TEST_P(ListTest, StoredBacktracesAreVisibleOnceALaterWriteReturns) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  v = Must(db().AppendBatch(
      kT0, {PersistReq(kT0), PersistReq(kT0), PersistReq(kT0), PersistReq(kT0)}, id, v));
  db().StoreBacktraces({Backtrace(id, 1, 3), Backtrace(id, 3, 5)});
  db().StoreBacktraces({});  // nothing to store
  v = Must(db().Append(id, v, PersistReq(kT0 + 1s)));
  EXPECT_EQ(Must(db().GetBacktrace(id, BacktraceFilter::First())), Backtrace(id, 1, 3));
  EXPECT_EQ(Must(db().GetBacktrace(id, BacktraceFilter::Last())), Backtrace(id, 3, 5));
  // A backtrace of an execution that is not there is dropped, not an error.
  db().StoreBacktraces({Backtrace(NewId(), 1, 2)});
  Must(db().Append(id, v, PersistReq(kT0 + 2s)));
  EXPECT_EQ(Must(db().GetBacktrace(id, BacktraceFilter::Last())), Backtrace(id, 3, 5));
}

// The engine of a wasm run — an optional field of the events that end a run
// and of backtraces, inside their JSON — is kept by every backend.
TEST_P(ListTest, TheEngineOfARunIsKept) {
  const std::string engine = "v8 10.2.154.26-node.36";
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  const core::ExecutionRequest failed =
      core::TemporarilyFailed{kT0 + 1s, "activity trap: x", std::nullopt, std::nullopt, engine};
  v = Must(db().Append(id, v, AppendRequest{kT0, failed}));
  v = Must(LockOneAt(db(), id, v, kT0 + 2s, Runner::New(), kT0 + 10s)).next_version;
  const Version persisted = v;
  v = Must(db().Append(id, v, PersistReq(kT0 + 2s)));
  core::BacktraceInfo trace = Backtrace(id, persisted.value(), v.value());
  trace.wasm_backtrace.engine = engine;
  Must(db().AppendBacktrace(trace));
  const core::ExecutionRequest finished =
      core::Finished{OkResult(core::Json(1)), std::nullopt, engine};
  Must(db().Append(id, v, AppendRequest{kT0 + 3s, finished}));

  EXPECT_EQ(Must(db().GetExecutionEvent(id, Version(2))).event, failed);
  EXPECT_EQ(Must(db().GetExecutionEvent(id, v)).event, finished);
  std::vector<core::ExecutionEvent> listed =
      Must(db().ListExecutionEvents(id, Version(0), 10, true));
  ASSERT_THAT(listed, SizeIs(6));
  EXPECT_EQ(listed[2].event, failed);
  EXPECT_EQ(listed[5].event, finished);
  EXPECT_EQ(Must(db().Get(id)).events.back().event, finished);
  EXPECT_EQ(Must(db().GetBacktrace(id, BacktraceFilter::Last())), trace);
}

TEST_P(ListTest, ListExecutionEventsCanIncludeBacktraceIds) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  Must(db().AppendBatch(kT0, {PersistReq(kT0), PersistReq(kT0)}, id, v));
  Must(db().AppendBacktrace(Backtrace(id, 1, 3)));

  std::vector<std::optional<Version>> with, without;
  for (const core::ExecutionEvent& event :
       Must(db().ListExecutionEvents(id, Version(0), 10, true))) {
    with.push_back(event.backtrace_id);
  }
  for (const core::ExecutionEvent& event :
       Must(db().ListExecutionEvents(id, Version(0), 10, false))) {
    without.push_back(event.backtrace_id);
  }
  EXPECT_THAT(with, ElementsAre(std::nullopt, Version(1), Version(1), std::nullopt));
  EXPECT_THAT(without, ElementsAre(std::nullopt, std::nullopt, std::nullopt, std::nullopt));
}

TEST_P(ListTest, ListResponsesPagesByArrivalCursor) {
  ExecutionId id = NewId(), other = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  Version other_v = CreateLocked(db(), other, kT0, Runner::New(), kT0 + 10s);
  core::JoinSetId join_set = NamedJoinSet("js");
  for (uint64_t i = 1; i <= 5; ++i) {
    v = RequestDelays(db(), id, v, kT0, {core::DelayId(id, join_set, i)}, kT0 + 1h);
    other_v =
        RequestDelays(db(), other, other_v, kT0, {core::DelayId(other, join_set, i)}, kT0 + 1h);
  }
  // Five responses of `id`, interleaved with responses of `other`, which
  // must not shift `id`'s cursors.
  for (uint64_t i = 1; i <= 5; ++i) {
    DateTime at = kT0 + std::chrono::seconds(i);
    Must(db().AppendDelayResponse(at, id, join_set, core::DelayId(id, join_set, i), true));
    Must(db().AppendDelayResponse(at, other, join_set, core::DelayId(other, join_set, i), true));
  }

  std::vector<ResponseWithCursor> all =
      Must(db().ListResponses(id, ResponsePage::NewerThan(100, 0, true)));
  ASSERT_THAT(all, SizeIs(5));
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(all[i].cursor, i);
    EXPECT_EQ(all[i].event.created_at, kT0 + std::chrono::seconds(i + 1));
  }
  EXPECT_THAT(Cursors(id, ResponsePage::NewerThan(2, 1, false)), ElementsAre(2, 3));
  EXPECT_THAT(Cursors(id, ResponsePage::NewerThan(2, 1, true)), ElementsAre(1, 2));
  EXPECT_THAT(Cursors(id, ResponsePage::NewerThan(10, 4, false)), IsEmpty());
  // Older pages are the ones right before the cursor, still in arrival order.
  EXPECT_THAT(Cursors(id, ResponsePage::OlderThan(2, 3, false)), ElementsAre(1, 2));
  EXPECT_THAT(Cursors(id, ResponsePage::OlderThan(2, 3, true)), ElementsAre(2, 3));
  EXPECT_THAT(Cursors(id, ResponsePage::OlderThan(10, 0, false)), IsEmpty());
  EXPECT_THAT(Cursors(other, ResponsePage::NewerThan(100, 0, true)), ElementsAre(0, 1, 2, 3, 4));
}

TEST_P(ListTest, ListResponsesOfAnUnknownExecutionIsNotFound) {
  EXPECT_THAT(db().ListResponses(NewId(), ResponsePage::NewerThan(10, 0, true)), IsNotFound());
}

// Params and results keep the order of record fields ({"z":..,"a":..}),
// through every read path.
TEST_P(ListTest, EventsPreserveRecordFieldOrder) {
  const std::string record = R"({"z":1,"a":2,"m":{"y":true,"b":null}})";
  const core::Json value = core::Json::parse(record);
  ExecutionId id = NewId();
  CreateRequest req = CreateReq(id, kT0);
  req.params = core::Json::array({value});
  Must(db().Create(req));
  Version v = Must(LockOneAt(db(), id, Version(1), kT0, Runner::New(), kT0 + 10s)).next_version;
  Must(db().Append(id, v, FinishedReq(kT0 + 1s, OkResult(value))));

  auto params_text = [](const core::ExecutionEvent& event) {
    return JsonText(std::get<core::Created>(event.event).params[0]);
  };
  auto result_text = [](const core::ExecutionEvent& event) {
    return JsonText(
        *std::get<core::ReturnValueOk>(std::get<core::Finished>(event.event).result).ok);
  };
  EXPECT_EQ(params_text(Must(db().GetExecutionEvent(id, Version(0)))), record);
  EXPECT_EQ(JsonText(Must(db().GetCreateRequest(id)).params[0]), record);
  EXPECT_EQ(result_text(Must(db().GetExecutionEvent(id, Version(2)))), record);
  std::vector<core::ExecutionEvent> listed =
      Must(db().ListExecutionEvents(id, Version(0), 10, false));
  ASSERT_THAT(listed, SizeIs(3));
  EXPECT_EQ(params_text(listed[0]), record);
  EXPECT_EQ(result_text(listed[2]), record);
  ExecutionLog log = Must(db().Get(id));
  EXPECT_EQ(params_text(log.events[0]), record);
  core::SupportedFunctionReturnValue result = Must(db().WaitForFinishedResult(id, std::nullopt));
  EXPECT_EQ(JsonText(*std::get<core::ReturnValueOk>(result).ok), record);
}

// Get (the test/oracle view) and the fine-grained reads describe the same
// execution.
TEST_P(ListTest, GetAgreesWithTheFineGrainedReads) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  core::JoinSetId join_set = NamedJoinSet("js");
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);
  v = Must(db().AppendBatch(kT0, {JoinSetCreateReq(kT0, join_set), PersistReq(kT0 + 1s)}, id, v));
  v = RequestDelays(db(), id, v, kT0 + 1s,
                    {core::DelayId(id, join_set, 1), core::DelayId(id, join_set, 2)}, kT0 + 1h);
  Must(db().AppendDelayResponse(kT0 + 2s, id, join_set, core::DelayId(id, join_set, 1), true));
  Must(db().AppendDelayResponse(kT0 + 3s, id, join_set, core::DelayId(id, join_set, 2), false));
  Must(db().Append(id, v, JoinNextReq(kT0 + 4s, join_set, kT0 + 5s)));

  ExecutionLog log = Must(db().Get(id));
  EXPECT_EQ(log.execution_id, id);
  EXPECT_EQ(log.pending_state, Must(db().GetPendingState(id)));
  EXPECT_EQ(log.pending_state, PendingAtState(kT0 + 5s, runner.locked_by()));
  std::vector<core::ExecutionEvent> listed =
      Must(db().ListExecutionEvents(id, Version(0), 100, false));
  EXPECT_EQ(log.events, listed);
  ASSERT_THAT(log.events, SizeIs(7));
  for (uint32_t i = 0; i < log.events.size(); ++i) {
    core::ExecutionEvent event = Must(db().GetExecutionEvent(id, Version(i)));
    event.backtrace_id.reset();  // implementations may leave it unset here
    EXPECT_EQ(event, log.events[i]);
  }
  core::ExecutionEvent last = Must(db().GetLastExecutionEvent(id));
  EXPECT_EQ(log.next_version, last.version.Increment());
  EXPECT_EQ(log.events[0].event,
            core::ExecutionRequest(Must(db().GetCreateRequest(id)).ToCreatedEvent()));
  std::vector<core::JoinSetResponseEventOuter> responses;
  for (const ResponseWithCursor& response :
       Must(db().ListResponses(id, ResponsePage::NewerThan(100, 0, true)))) {
    responses.push_back(response.event);
  }
  EXPECT_EQ(log.responses, responses);
  EXPECT_THAT(log.responses, SizeIs(2));
}

}  // namespace
}  // namespace stele::storage::conformance
