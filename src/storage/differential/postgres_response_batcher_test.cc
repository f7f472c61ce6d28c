// ResponseBatcher (storage/postgres/response_batcher.h) on its own: who
// writes alone, who is grouped, and that every caller keeps its own
// outcome when a group fails. The writes are functions given by the test,
// so the interleavings are forced, not hoped for; the real transactions
// are covered in postgres_pool_test.cc (ChildrenRespondingAtOnce...).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "storage/postgres/response_batcher.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::postgres::internal {
namespace {

using conformance::ChildId;
using conformance::ChildResponse;
using conformance::FinishedReq;
using conformance::kT0;
using conformance::NamedJoinSet;
using conformance::NewId;
using conformance::OkResult;
using namespace std::chrono_literals;

// One child's request: its events and its response to `parent`, with the
// child's index as its version so each outcome says whose it is.
struct Request {
  AppendEventsToExecution events;
  AppendResponseToExecution response;
  ChildResponseWrite write() const { return ChildResponseWrite{&events, &response, kT0}; }
};

std::vector<Request> Requests(const ExecutionId& parent, int n) {
  std::vector<Request> requests;
  for (int i = 0; i < n; ++i) {
    const auto child = ChildId(parent, NamedJoinSet("js"), static_cast<uint32_t>(i + 1));
    requests.push_back(Request{
        AppendEventsToExecution{
            ExecutionId(child), Version(static_cast<uint32_t>(i)), {FinishedReq(kT0, OkResult())}},
        ChildResponse(child, kT0, Version(static_cast<uint32_t>(i)), OkResult())});
  }
  return requests;
}

// Waits (bounded) until `n` callers queue behind the writer for `parent`.
bool WaitQueued(ResponseBatcher& batcher, const ExecutionId& parent, size_t n) {
  for (int i = 0; i < 10000; ++i) {
    if (batcher.QueuedForTest(parent.ToString()) == n) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

bool WaitFor(const std::atomic<bool>& flag) {
  for (int i = 0; i < 10000 && !flag; ++i) std::this_thread::sleep_for(1ms);
  return flag;
}

// Starts a caller per request: the first, until its write holds (`entered`),
// then the others, until all of them queue behind it. Results land in
// `results` once `threads` are joined; the write functions are borrowed by
// the threads, so they must outlive them.
bool StartBehindFirst(ResponseBatcher& batcher, const ExecutionId& parent,
                      const std::vector<Request>& requests,
                      const ResponseBatcher::WriteGroup& write_group,
                      const ResponseBatcher::WriteOne& write_one, const std::atomic<bool>& entered,
                      std::vector<std::optional<Result<Version, DbErrorWrite>>>& results,
                      std::vector<std::thread>& threads) {
  auto start = [&](size_t i) {
    threads.emplace_back(
        [&, i] { results[i].emplace(batcher.Run(requests[i].write(), write_group, write_one)); });
  };
  start(0);
  if (!WaitFor(entered)) return false;
  for (size_t i = 1; i < requests.size(); ++i) start(i);
  return WaitQueued(batcher, parent, requests.size() - 1);
}

Result<Version, DbErrorWrite> Echo(const ChildResponseWrite& request) {
  return request.events->version.Increment();
}

TEST(ResponseBatcherTest, AnUncontendedRequestIsWrittenAloneAtOnce) {
  ResponseBatcher batcher;
  const ExecutionId parent = NewId();
  const auto requests = Requests(parent, 1);
  int groups = 0;
  auto result = batcher.Run(
      requests[0].write(),
      [&](const std::vector<const ChildResponseWrite*>&)
          -> Result<std::vector<Version>, DbErrorWrite> {
        ++groups;
        return std::vector<Version>{};
      },
      Echo);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(*result, Version(1));
  EXPECT_EQ(groups, 0);
  EXPECT_EQ(batcher.GetStats().groups, 0u);
  EXPECT_EQ(batcher.QueuedForTest(parent.ToString()), 0u);
}

// The first caller blocks in its write; the others queue behind it and
// the next of them writes them all in one group, each getting its own
// version. A caller for another parent is not held up.
TEST(ResponseBatcherTest, CallersArrivingDuringAWriteShareTheNextGroup) {
  ResponseBatcher batcher;
  const ExecutionId parent = NewId();
  constexpr int kCallers = 6;
  const auto requests = Requests(parent, kCallers);
  std::atomic<bool> entered{false};  // the first caller is in its write
  std::atomic<bool> release{false};
  std::mutex mu;
  std::vector<size_t> group_sizes;
  const ResponseBatcher::WriteGroup write_group =
      [&](const std::vector<const ChildResponseWrite*>& group)
      -> Result<std::vector<Version>, DbErrorWrite> {
    std::lock_guard lock(mu);
    group_sizes.push_back(group.size());
    std::vector<Version> versions;
    for (const ChildResponseWrite* request : group)
      versions.push_back(request->events->version.Increment());
    return versions;
  };
  const ResponseBatcher::WriteOne write_one =
      [&](const ChildResponseWrite& request) -> Result<Version, DbErrorWrite> {
    if (request.events == &requests[0].events) {
      entered = true;
      while (!release) std::this_thread::sleep_for(1ms);
    }
    return Echo(request);
  };

  std::vector<std::optional<Result<Version, DbErrorWrite>>> results(kCallers);
  std::vector<std::thread> threads;
  ASSERT_TRUE(StartBehindFirst(batcher, parent, requests, write_group, write_one, entered, results,
                               threads));

  // Another parent goes straight through while this one is busy.
  const ExecutionId other = NewId();
  const auto other_requests = Requests(other, 1);
  auto other_result = batcher.Run(other_requests[0].write(), write_group, Echo);
  ASSERT_TRUE(other_result.has_value());

  release = true;
  for (auto& t : threads) t.join();
  for (int i = 0; i < kCallers; ++i) {
    ASSERT_TRUE(results[i].has_value() && results[i]->has_value()) << i;
    EXPECT_EQ(**results[i], Version(static_cast<uint32_t>(i + 1))) << i;
  }
  ASSERT_EQ(group_sizes, std::vector<size_t>{kCallers - 1});
  const ResponseBatcher::Stats stats = batcher.GetStats();
  EXPECT_EQ(stats.groups, 1u);
  EXPECT_EQ(stats.grouped, static_cast<uint64_t>(kCallers - 1));
  EXPECT_EQ(stats.failed_groups, 0u);
}

// A group whose transaction fails is written again member by member: the
// one bad request gets its own error, the others succeed.
TEST(ResponseBatcherTest, AFailedGroupIsRetriedAloneAndOnlyTheBadRequestFails) {
  ResponseBatcher batcher;
  const ExecutionId parent = NewId();
  constexpr int kCallers = 5;
  const auto requests = Requests(parent, kCallers);
  const AppendEventsToExecution* bad = &requests[3].events;
  std::atomic<bool> entered{false};  // the first caller is in its write
  std::atomic<bool> release{false};
  std::atomic<int> group_calls{0};
  const ResponseBatcher::WriteGroup write_group =
      [&](const std::vector<const ChildResponseWrite*>& group)
      -> Result<std::vector<Version>, DbErrorWrite> {
    ++group_calls;
    for (const ChildResponseWrite* request : group) {
      if (request->events == bad) {
        return Unexpected(DbErrorWrite(DbErrorWriteNonRetriable::VersionConflict(
            request->events->version.Increment(), request->events->version)));
      }
    }
    return Unexpected(DbErrorWrite(DbErrorGeneric::Uncategorized("group without the bad one")));
  };
  const ResponseBatcher::WriteOne write_one =
      [&](const ChildResponseWrite& request) -> Result<Version, DbErrorWrite> {
    if (request.events == &requests[0].events) {
      entered = true;
      while (!release) std::this_thread::sleep_for(1ms);
    }
    if (request.events == bad) {
      return Unexpected(DbErrorWrite(DbErrorWriteNonRetriable::VersionConflict(
          request.events->version.Increment(), request.events->version)));
    }
    return Echo(request);
  };

  std::vector<std::optional<Result<Version, DbErrorWrite>>> results(kCallers);
  std::vector<std::thread> threads;
  ASSERT_TRUE(StartBehindFirst(batcher, parent, requests, write_group, write_one, entered, results,
                               threads));
  release = true;
  for (auto& t : threads) t.join();

  EXPECT_EQ(group_calls.load(), 1);
  for (int i = 0; i < kCallers; ++i) {
    ASSERT_TRUE(results[i].has_value()) << i;
    if (i == 3) {
      ASSERT_FALSE(results[i]->has_value());
      EXPECT_EQ(results[i]->error().kind(), DbErrorWrite::Kind::kNonRetriable);
    } else {
      ASSERT_TRUE(results[i]->has_value()) << i;
      EXPECT_EQ(**results[i], Version(static_cast<uint32_t>(i + 1))) << i;
    }
  }
  EXPECT_EQ(batcher.GetStats().failed_groups, 1u);
}

}  // namespace
}  // namespace stele::storage::postgres::internal
