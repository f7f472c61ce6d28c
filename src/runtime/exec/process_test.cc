// RunProcess on real processes (/bin/sh scripts in a scratch directory).
#include "runtime/exec/process.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/exec/exec_test_util.h"

namespace stele::runtime::exec {
namespace {

using ::testing::ElementsAre;
using testing::EventuallyDead;
using testing::EventuallyEmptyGroup;
using ::testing::HasSubstr;
using testing::IsAlive;
using ::testing::IsEmpty;
using testing::LiveMembersOfGroup;
using testing::ScratchDir;
using testing::WaitForLine;
using End = ProcessOutcome::End;

ProcessSpec Sh(const std::string& script) {
  return ProcessSpec{{"/bin/sh", "-c", script}, {}, {}, {}};
}

ProcessOutcome RunSpec(const ProcessSpec& spec) { return RunProcess(spec, CancellationToken()); }

TEST(ProcessTest, StdinArrivesIntactAndLargeOutputDoesNotDeadlock) {
  // cat writes back while we are still writing: both pipes fill up.
  std::string data;
  for (int i = 0; i < 40000; ++i)
    data += "h\xC3\xA9llo \xF0\x9F\x98\x80 " + std::to_string(i) + "\n";
  ASSERT_GT(data.size(), 600000u);
  ProcessSpec spec{{"/bin/cat"}, {}, {}, data};
  spec.max_stdout_bytes = 4 << 20;
  ProcessOutcome outcome = RunSpec(spec);
  EXPECT_EQ(outcome.end, End::kExited);
  EXPECT_EQ(outcome.exit_status, 0);
  EXPECT_EQ(outcome.stdout_data, data);
  EXPECT_GT(outcome.pid, 0);
}

TEST(ProcessTest, ExitStatusAndSignalAreReported) {
  ProcessOutcome exited = RunSpec(Sh("echo partial; exit 3"));
  EXPECT_EQ(exited.end, End::kExited);
  EXPECT_EQ(exited.exit_status, 3);
  EXPECT_EQ(exited.stdout_data, "partial\n");

  ProcessOutcome killed = RunSpec(Sh("kill -9 $$"));
  EXPECT_EQ(killed.end, End::kSignaled);
  EXPECT_EQ(killed.term_signal, 9);
}

TEST(ProcessTest, StdoutOverTheCapKillsTheGroup) {
  ProcessSpec spec = Sh("while :; do echo yyyyyyyyyyyyyyyyyyyyyyyy; done");
  spec.max_stdout_bytes = 1000;
  ProcessOutcome outcome = RunSpec(spec);
  EXPECT_EQ(outcome.end, End::kStdoutOverflow);
  EXPECT_EQ(outcome.stdout_data.size(), 1000u);
  EXPECT_TRUE(EventuallyEmptyGroup(outcome.pid));
}

TEST(ProcessTest, StderrOverTheCapKillsTheGroup) {
  ProcessSpec spec = Sh("while :; do echo eeeeeeeeeeeeeeeeeeeeeeeeeeeee >&2; done");
  spec.max_stderr_bytes = 500;
  ProcessOutcome outcome = RunSpec(spec);
  EXPECT_EQ(outcome.end, End::kStderrOverflow);
  EXPECT_EQ(outcome.stderr_data.size(), 500u);
  EXPECT_TRUE(EventuallyEmptyGroup(outcome.pid));
}

TEST(ProcessTest, StderrLinesReachTheCallback) {
  std::vector<std::string> lines;
  ProcessOutcome outcome =
      RunProcess(Sh("printf 'one\\ntwo\\r\\n\\nlast' >&2; echo out"), CancellationToken(),
                 [&](std::string_view line) { lines.emplace_back(line); });
  EXPECT_EQ(outcome.end, End::kExited);
  EXPECT_EQ(outcome.stdout_data, "out\n");
  EXPECT_EQ(outcome.stderr_data, "one\ntwo\r\n\nlast");
  EXPECT_THAT(lines, ElementsAre("one", "two", "", "last"));
}

TEST(ProcessTest, TheEnvironmentIsExactlyTheGivenOne) {
  ASSERT_EQ(::setenv("STELE_EXEC_TEST_AMBIENT", "leak", 1), 0);
  ProcessSpec spec{{"/usr/bin/env"}, {}, {"A=1", "B=two words"}, {}};
  ProcessOutcome outcome = RunSpec(spec);
  ::unsetenv("STELE_EXEC_TEST_AMBIENT");
  EXPECT_EQ(outcome.end, End::kExited);
  EXPECT_EQ(outcome.stdout_data, "A=1\nB=two words\n");
}

TEST(ProcessTest, OnlyTheStandardFdsAreInherited) {
  // An fd of the server without O_CLOEXEC must not reach the command.
  int leaked = ::open("/dev/null", O_RDONLY);  // NOLINT: deliberately without O_CLOEXEC
  ASSERT_GE(leaked, 0);
  ProcessOutcome outcome = RunSpec(Sh("ls /proc/$$/fd"));
  ::close(leaked);
  EXPECT_EQ(outcome.end, End::kExited);
  EXPECT_EQ(outcome.stdout_data, "0\n1\n2\n");
}

TEST(ProcessTest, SignalsAreResetToDefaultInTheChild) {
  // The server may ignore SIGTERM or block signals; the command must not
  // inherit that.
  struct sigaction ignore {};
  struct sigaction old {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGTERM, &ignore, &old), 0);
  ProcessOutcome outcome = RunSpec(Sh("kill -TERM $$; sleep 5; echo survived"));
  ::sigaction(SIGTERM, &old, nullptr);
  EXPECT_EQ(outcome.end, End::kSignaled);
  EXPECT_EQ(outcome.term_signal, SIGTERM);
}

TEST(ProcessTest, MissingExecutableIsASpawnFailure) {
  ProcessOutcome by_path = RunSpec(ProcessSpec{{"/nonexistent/command"}, {}, {}, "[]"});
  EXPECT_EQ(by_path.end, End::kSpawnFailed);
  EXPECT_THAT(by_path.spawn_error, HasSubstr("/nonexistent/command"));
  EXPECT_THAT(by_path.spawn_error, HasSubstr("No such file or directory"));
  EXPECT_EQ(by_path.pid, -1);

  ProcessOutcome by_name = RunSpec(ProcessSpec{{"stele-no-such-command"}, {}, {"PATH=/bin"}, "[]"});
  EXPECT_EQ(by_name.end, End::kSpawnFailed);
  EXPECT_THAT(by_name.spawn_error, HasSubstr("not found in PATH (/bin)"));

  ScratchDir dir;
  std::string not_executable = dir.File("plain");
  std::ofstream(not_executable) << "echo hi\n";
  ProcessOutcome denied = RunSpec(ProcessSpec{{not_executable}, {}, {}, {}});
  EXPECT_EQ(denied.end, End::kSpawnFailed);
  EXPECT_THAT(denied.spawn_error, HasSubstr("Permission denied"));

  EXPECT_EQ(RunSpec(ProcessSpec{}).end, End::kSpawnFailed);
  EXPECT_EQ(RunSpec(ProcessSpec{{""}, {}, {}, {}}).end, End::kSpawnFailed);
}

TEST(ProcessTest, BareNamesAreSearchedInTheChildPath) {
  ProcessOutcome outcome =
      RunSpec(ProcessSpec{{"echo", "found"}, {}, {"PATH=/nonexistent:/bin"}, {}});
  EXPECT_EQ(outcome.end, End::kExited);
  EXPECT_EQ(outcome.stdout_data, "found\n");
}

TEST(ProcessTest, WorkingDirectory) {
  ScratchDir dir;
  dir.Script("local.sh", "pwd");
  ProcessOutcome outcome = RunSpec(ProcessSpec{{"./local.sh"}, dir.path().string(), {}, {}});
  EXPECT_EQ(outcome.end, End::kExited);
  EXPECT_EQ(outcome.stdout_data, std::filesystem::canonical(dir.path()).string() + "\n");

  ProcessOutcome missing = RunSpec(ProcessSpec{{"/bin/pwd"}, dir.File("missing"), {}, {}});
  EXPECT_EQ(missing.end, End::kSpawnFailed);
  EXPECT_THAT(missing.spawn_error, HasSubstr("missing"));
}

TEST(ProcessTest, ACommandIgnoringStdinDoesNotBreakTheServer) {
  // The write hits EPIPE; SIGPIPE must not kill this test process.
  ProcessSpec spec{{"/bin/true"}, {}, {}, std::string(8 << 20, 'x')};
  ProcessOutcome outcome = RunSpec(spec);
  EXPECT_EQ(outcome.end, End::kExited);
  EXPECT_EQ(outcome.exit_status, 0);
}

TEST(ProcessTest, StragglersOfAFinishedLeaderAreKilled) {
  // The background job keeps stdout open; without the group kill this would
  // hang until the sleep ends.
  ScratchDir dir;
  ProcessOutcome outcome = RunSpec(Sh("sleep 1000 & echo $! > " + dir.File("bg") + "; echo done"));
  EXPECT_EQ(outcome.end, End::kExited);
  EXPECT_EQ(outcome.stdout_data, "done\n");
  const pid_t background = std::stoi(testing::ReadFile(dir.File("bg")));
  EXPECT_TRUE(EventuallyDead(background));
  EXPECT_TRUE(EventuallyEmptyGroup(outcome.pid));
}

TEST(ProcessTest, CancelKillsTheWholeProcessGroup) {
  ScratchDir dir;
  // Ignores stdin, sleeps forever, and has a child of its own.
  ProcessSpec spec = Sh("sh -c 'sleep 1000 & echo $! > " + dir.File("bg") +
                        "; sleep 1000' & echo $$ > " + dir.File("leader") + "; wait");
  CancellationToken cancel;
  ProcessOutcome outcome;
  std::thread runner([&] { outcome = RunProcess(spec, cancel); });
  const pid_t leader = std::stoi(WaitForLine(dir.File("leader")));
  const pid_t background = std::stoi(WaitForLine(dir.File("bg")));
  EXPECT_TRUE(IsAlive(background));
  EXPECT_GE(LiveMembersOfGroup(leader).size(), 3u);  // sh, sh, sleep, sleep
  cancel.Cancel();
  runner.join();
  EXPECT_EQ(outcome.end, End::kCancelled);
  EXPECT_EQ(outcome.pid, leader);
  EXPECT_TRUE(EventuallyDead(leader));
  EXPECT_TRUE(EventuallyDead(background));
  EXPECT_TRUE(EventuallyEmptyGroup(leader));
}

// The deadline is enforced by the supervisor on its own: nobody cancels
// here. The command, its background job and a process that left the group
// (setsid) all die; every stage of the attempt is reported as a deadline.
TEST(ProcessTest, TheDeadlineKillsEverythingWithoutTheCaller) {
  ScratchDir dir;
  ProcessSpec spec =
      Sh("echo $$ > " + dir.File("leader") + "; sleep 1000 & echo $! > " + dir.File("bg") +
         "; setsid sleep 1000 & echo $! > " + dir.File("escapee") + "; wait");
  spec.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  ProcessOutcome outcome = RunSpec(spec);
  EXPECT_EQ(outcome.end, End::kDeadline);
  const pid_t leader = std::stoi(WaitForLine(dir.File("leader")));
  EXPECT_EQ(outcome.pid, leader);
  EXPECT_TRUE(EventuallyDead(leader));
  EXPECT_TRUE(EventuallyDead(std::stoi(WaitForLine(dir.File("bg")))));
  EXPECT_TRUE(EventuallyDead(std::stoi(WaitForLine(dir.File("escapee")))));
  EXPECT_TRUE(EventuallyEmptyGroup(leader));

  // A deadline already behind: nothing runs.
  spec = Sh("echo ran > " + dir.File("ran"));
  spec.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  outcome = RunSpec(spec);
  EXPECT_EQ(outcome.end, End::kDeadline);
  EXPECT_EQ(outcome.pid, -1);
  EXPECT_FALSE(std::filesystem::exists(dir.File("ran")));
}

TEST(ProcessTest, AProcessThatLeftTheGroupDiesWithTheLeader) {
  // setsid: its own session and group, so the group kill misses it; it is
  // re-parented to the supervisor (a subreaper) and killed there. It keeps
  // stdout open: without the kill this would hang until the sleep ends.
  ScratchDir dir;
  ProcessOutcome outcome =
      RunSpec(Sh("setsid sleep 1000 & echo $! > " + dir.File("escapee") + "; echo done"));
  EXPECT_EQ(outcome.end, End::kExited);
  EXPECT_EQ(outcome.stdout_data, "done\n");
  EXPECT_TRUE(EventuallyDead(std::stoi(testing::ReadFile(dir.File("escapee")))));
}

TEST(ProcessTest, TheCommandDiesWithItsSupervisor) {
  ScratchDir dir;
  ProcessSpec spec = Sh("echo $$ > " + dir.File("leader") + "; sleep 1000");
  ProcessOutcome outcome;
  std::thread runner([&] { outcome = RunProcess(spec, CancellationToken()); });
  const pid_t leader = std::stoi(WaitForLine(dir.File("leader")));
  const auto fields = testing::StatFields("/proc/" + std::to_string(leader) + "/stat");
  const pid_t supervisor = fields.size() >= 2 ? std::stoi(fields[1]) : -1;
  EXPECT_NE(supervisor, ::getpid());  // the command's parent is its supervisor
  ::kill(supervisor > 1 && supervisor != ::getpid() ? supervisor : leader, SIGKILL);
  runner.join();
  EXPECT_EQ(outcome.end, End::kSupervisorLost);
  EXPECT_THAT(outcome.spawn_error, HasSubstr("killed by signal 9"));
  EXPECT_TRUE(EventuallyDead(leader));
}

TEST(ProcessTest, CancelledBeforeStartRunsNothing) {
  CancellationToken cancel;
  cancel.Cancel();
  ProcessOutcome outcome = RunProcess(Sh("echo ran"), cancel);
  EXPECT_EQ(outcome.end, End::kCancelled);
  EXPECT_EQ(outcome.pid, -1);
  EXPECT_EQ(outcome.stdout_data, "");
}

TEST(ProcessTest, ConcurrentRunsDoNotMixOutputs) {
  std::vector<std::thread> threads;
  std::vector<ProcessOutcome> outcomes(8);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    threads.emplace_back([&, i] {
      ProcessSpec spec{{"/bin/cat"}, {}, {}, std::string(100000 + i, static_cast<char>('a' + i))};
      outcomes[i] = RunSpec(spec);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_EQ(outcomes[i].stdout_data, std::string(100000 + i, static_cast<char>('a' + i)));
  }
}

}  // namespace
}  // namespace stele::runtime::exec
