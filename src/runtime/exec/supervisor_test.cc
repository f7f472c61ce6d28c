// stele-exec-supervisor on its own, under a stand-in for the server: a
// /bin/sh that starts it (so that it is the supervisor's parent, as the
// server is), holds the write end of its control pipe, and then dies by
// SIGKILL — what RunProcess's caller cannot do to itself in a test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/exec/exec_test_util.h"
#include "runtime/exec/process.h"
#include "runtime/exec/supervisor_protocol.h"

namespace stele::runtime::exec {
namespace {

using testing::EventuallyDead;
using testing::EventuallyEmptyGroup;
using testing::IsAlive;
using testing::ReadFile;
using testing::ScratchDir;

// Runs `sh -c script sh args...` in `dir` and waits for it; its wait status.
int RunShell(const ScratchDir& dir, const std::string& script, std::vector<std::string> args) {
  std::vector<std::string> strings = {"sh", "-c", script, "sh"};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  char path_env[] = "PATH=/usr/bin:/bin";
  char* envp[] = {path_env, nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, dir.path().c_str());
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/bin/sh", &actions, nullptr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

pid_t PidIn(const ScratchDir& dir, const std::string& name) {
  const std::string text = ReadFile(dir.File(name));
  return text.empty() ? -1 : std::stoi(text);
}

// The server dies (SIGKILL) while the command runs, with no deadline: the
// supervisor kills the command, its background job and a process that left
// the group with setsid, then exits itself.
TEST(SupervisorTest, EverythingDiesWithTheServer) {
  auto supervisor = FindSupervisor();
  ASSERT_TRUE(supervisor.has_value()) << supervisor.error();
  ScratchDir dir;
  const std::string command =
      "echo $$ > leader; sleep 1000 & echo $! > bg; setsid sleep 1000 & echo $! > escapee; wait";
  // $1 the supervisor, $2 the command. fd 9 is the server's end of the
  // control pipe (a fifo opened read-write, so that opening it does not
  // block); the supervisor must not inherit it.
  const std::string server =
      "mkfifo control; exec 9<>control; "
      "\"$1\" " +
      std::string(supervisor::kProtocol) +
      " $$ - /bin/sh '' 3 /bin/sh -c \"$2\" 1 PATH=/usr/bin:/bin "
      "3>report 4<control 5</dev/null 6>/dev/null 7>/dev/null 9<&- & "
      "echo $! > supervisor; "
      "i=0; while [ ! -s escapee ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; "
      "kill -9 $$";
  const int status = RunShell(dir, server, {*supervisor, command});
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  const pid_t leader = PidIn(dir, "leader");
  ASSERT_GT(leader, 0);
  // The supervisor had started the command and said so.
  supervisor::Report first;
  const std::string report = ReadFile(dir.File("report"));
  ASSERT_GE(report.size(), sizeof first);
  std::memcpy(&first, report.data(), sizeof first);
  EXPECT_EQ(first.kind, static_cast<int32_t>(supervisor::ReportKind::kSpawned));
  EXPECT_EQ(first.value, leader);

  for (const char* name : {"leader", "bg", "escapee", "supervisor"}) {
    const pid_t pid = PidIn(dir, name);
    ASSERT_GT(pid, 0) << name;
    EXPECT_TRUE(EventuallyDead(pid)) << name << " " << pid << " survived the server";
    if (IsAlive(pid)) ::kill(pid, SIGKILL);
  }
  EXPECT_TRUE(EventuallyEmptyGroup(leader));
}

// Arguments that do not follow the protocol: a setup failure is reported
// and nothing runs.
TEST(SupervisorTest, BadArgumentsAreReportedAndRunNothing) {
  auto supervisor = FindSupervisor();
  ASSERT_TRUE(supervisor.has_value()) << supervisor.error();
  ScratchDir dir;
  const std::string server =
      "\"$1\" not-the-protocol $$ - /bin/sh '' 1 /bin/sh 0 3>report 4</dev/null; echo $? > code";
  const int status = RunShell(dir, server, {*supervisor});
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(ReadFile(dir.File("code")), "2\n");
  supervisor::Report first;
  const std::string report = ReadFile(dir.File("report"));
  ASSERT_EQ(report.size(), sizeof first);
  std::memcpy(&first, report.data(), sizeof first);
  EXPECT_EQ(first.kind, static_cast<int32_t>(supervisor::ReportKind::kSpawnFailed));
  EXPECT_EQ(first.stage, static_cast<int32_t>(supervisor::SpawnStage::kSetup));
}

}  // namespace
}  // namespace stele::runtime::exec
