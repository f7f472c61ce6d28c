// Crash recovery of the SDK: a child process (stele_sdk_crash_worker) runs
// 1,000 workflows — each sleeps briefly, then calls an activity that
// appends a line to a file — and is killed with SIGKILL mid-run. A second
// process on the same database finishes the work. Then: every workflow
// finished with its own value, none is lost, every activity execution has
// exactly one Finished event in its log, and the file shows every index
// (at least once: an activity killed between its side effect and the
// record of its result runs again).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "core/execution_event.h"
#include "core/ids.h"
#include "engine/sdk_test_util.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele {
namespace {

constexpr int kCount = 1000;

pid_t Spawn(const std::string& db, const std::string& out, bool cancel = false) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string count = std::to_string(kCount);
    if (cancel) {
      execl(STELE_SDK_CRASH_WORKER, STELE_SDK_CRASH_WORKER, db.c_str(), out.c_str(), count.c_str(),
            "cancel", static_cast<char*>(nullptr));
    } else {
      execl(STELE_SDK_CRASH_WORKER, STELE_SDK_CRASH_WORKER, db.c_str(), out.c_str(), count.c_str(),
            static_cast<char*>(nullptr));
    }
    _exit(127);
  }
  return pid;
}

// Lines in `path` (0 when missing).
size_t CountLines(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

// Waits for `pid` to exit within `limit`; its exit status, or -1.
int WaitExit(pid_t pid, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

std::string IdOf(int index) {
  static constexpr char kDigits[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  std::string suffix(10, '0');
  for (int pos = 9, value = index; pos >= 0 && value > 0; --pos, value /= 32) {
    suffix[pos] = kDigits[value % 32];
  }
  return "E_01KBNHM5FQW81KP5" + suffix;
}

TEST(SdkCrashTest, KilledMidRunLosesNothingAndRecordsEachActivityOnce) {
  auto dir = testing::MakeTempDir("stele_sdk_crash_");
  const std::string db = (dir / "crash.sqlite").string();
  const std::string out = (dir / "appended.txt").string();

  pid_t first = Spawn(db, out);
  ASSERT_GT(first, 0);
  // Kill once about a third of the activities have run: mid-run, with
  // workflows in every state (pending, sleeping, calling, finished).
  bool midway =
      testing::WaitUntil([&] { return CountLines(out) >= kCount / 3; }, std::chrono::seconds(60));
  kill(first, SIGKILL);
  int status = 0;
  waitpid(first, &status, 0);
  ASSERT_TRUE(midway) << "the first process did not get a third of the way";
  const size_t lines_at_kill = CountLines(out);
  EXPECT_LT(lines_at_kill, static_cast<size_t>(kCount)) << "killed too late to test recovery";

  pid_t second = Spawn(db, out);
  ASSERT_GT(second, 0);
  ASSERT_EQ(WaitExit(second, std::chrono::seconds(90)), 0) << "the restarted process failed";

  // The file: every index at least once.
  std::map<int, int> seen;
  {
    std::ifstream in(out);
    std::string line;
    while (std::getline(in, line)) ++seen[std::stoi(line)];
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kCount));

  // The log: every workflow Finished ok with its index; every activity
  // child has exactly one Finished.
  auto pool = storage::sqlite::SqlitePool::Open({.path = db});
  ASSERT_TRUE(pool) << pool.error().ToString();
  auto conn = (*pool)->ConnectionTest();
  ASSERT_TRUE(conn);
  int duplicated = 0;
  int lost = 0;
  for (int i = 0; i < kCount; ++i) {
    auto id = core::ExecutionId::Parse(IdOf(i));
    ASSERT_TRUE(id);
    auto log = (*conn)->Get(*id);
    ASSERT_TRUE(log) << IdOf(i);
    if (!log->pending_state.IsFinished()) ++lost;
    auto child_id = core::ExecutionId::Parse(IdOf(i) + ".o:2-append_1");
    ASSERT_TRUE(child_id);
    auto child = (*conn)->Get(*child_id);
    ASSERT_TRUE(child) << child_id->ToString() << ": " << child.error().ToString();
    int finished = 0;
    for (const auto& event : child->events) {
      if (std::holds_alternative<core::Finished>(event.event)) ++finished;
    }
    if (finished != 1) ++duplicated;
    EXPECT_EQ(child->responses.size(), 0u);
  }
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(duplicated, 0);
  (*pool)->Close();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

// Cancels under SIGKILL: every fourth workflow is cancelled right after
// the submissions and the process is killed mid-run, then restarted (it
// cancels them again). Every acknowledged cancel took effect exactly once:
// the workflow finished `cancelled`, with one Finished and at most one cancel
// request; the others finished with their value; no activity result was
// recorded twice.
TEST(SdkCrashTest, AcknowledgedCancelsSurviveASigkillAndTakeEffectOnce) {
  auto dir = testing::MakeTempDir("stele_sdk_crash_cancel_");
  const std::string db = (dir / "crash.sqlite").string();
  const std::string out = (dir / "appended.txt").string();

  pid_t first = Spawn(db, out, /*cancel=*/true);
  ASSERT_GT(first, 0);
  // Killed once some cancels were acknowledged: they are recorded, their
  // effect (the workflows waking, cancelling, finishing) mostly is not.
  bool midway = testing::WaitUntil([&] { return CountLines(out + ".cancels") >= 20; },
                                   std::chrono::seconds(60));
  kill(first, SIGKILL);
  waitpid(first, nullptr, 0);
  ASSERT_TRUE(midway) << "the first process did not get to its cancels";
  const size_t acknowledged_before_kill = CountLines(out + ".cancels");

  pid_t second = Spawn(db, out, /*cancel=*/true);
  ASSERT_GT(second, 0);
  ASSERT_EQ(WaitExit(second, std::chrono::seconds(90)), 0) << "the restarted process failed";

  std::map<int, int> acknowledged;
  {
    std::ifstream in(out + ".cancels");
    std::string line;
    while (std::getline(in, line)) ++acknowledged[std::stoi(line)];
  }
  std::cout << "cancels acknowledged before the kill: " << acknowledged_before_kill
            << ", in all: " << acknowledged.size() << "\n";
  auto pool = storage::sqlite::SqlitePool::Open({.path = db});
  ASSERT_TRUE(pool) << pool.error().ToString();
  auto conn = (*pool)->ConnectionTest();
  ASSERT_TRUE(conn);
  int wrong = 0;
  for (int i = 0; i < kCount; ++i) {
    auto id = core::ExecutionId::Parse(IdOf(i));
    ASSERT_TRUE(id);
    auto log = (*conn)->Get(*id);
    ASSERT_TRUE(log) << IdOf(i);
    int finished = 0;
    int requests = 0;
    bool cancelled = false;
    for (const auto& event : log->events) {
      if (const auto* f = std::get_if<core::Finished>(&event.event)) {
        ++finished;
        const auto* failure = std::get_if<core::FinishedExecutionError>(&f->result);
        cancelled = failure != nullptr && failure->kind == core::ExecutionFailureKind::kCancelled;
      }
      const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
      if (history != nullptr &&
          std::holds_alternative<core::HistoryCancelRequest>(history->event)) {
        ++requests;
      }
    }
    const bool wanted = acknowledged.contains(i);
    if (finished != 1 || requests > 1 || (wanted && !cancelled) || (i % 4 != 0 && cancelled)) {
      ++wrong;
      ADD_FAILURE() << IdOf(i) << ": finished " << finished << " times, " << requests
                    << " cancel requests, cancelled " << cancelled << ", acknowledged " << wanted;
    }
    // The activity child, when the workflow got to call it, has one result.
    auto child_id = core::ExecutionId::Parse(IdOf(i) + ".o:2-append_1");
    ASSERT_TRUE(child_id);
    if (auto child = (*conn)->Get(*child_id); child) {
      int child_finished = 0;
      for (const auto& event : child->events) {
        child_finished += std::holds_alternative<core::Finished>(event.event);
      }
      EXPECT_EQ(child_finished, 1) << child_id->ToString();
    }
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_GE(acknowledged_before_kill, 20u);
  (*pool)->Close();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace stele
