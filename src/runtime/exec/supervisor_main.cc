// stele-exec-supervisor: the process between the server and the command of
// one exec activity attempt (supervisor_protocol.h is the contract with
// RunProcess; docs/exec_activities.md, "The supervisor", says why it
// exists). It runs the command as the leader of its own process group and
// kills every process of the attempt with SIGKILL:
//   - at the deadline, whether the server is alive or not;
//   - when the server dies: EOF on the control pipe (the kernel closes the
//     server's end when the server dies, however it dies), and the
//     parent-death signal as a second, independent trigger;
//   - when the server asks (a byte on the control pipe: cancel, output
//     over its cap);
//   - when the command (the group leader) exits: its stragglers.
// "Every process of the attempt" is the command's process group plus every
// descendant: the supervisor is a child subreaper (PR_SET_CHILD_SUBREAPER),
// so a process that double-forks or leaves the group (setsid, setpgid) is
// re-parented to it once its parent dies, and it kills its children until
// it has none left. The command itself dies with the supervisor
// (PR_SET_PDEATHSIG), should the supervisor be killed from outside.
//
// Single-threaded; it never runs a shell and touches no file but
// /proc/self/task/<pid>/children. It links nothing of Stele's, so it
// starts in about a millisecond.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/exec/supervisor_protocol.h"

namespace {

namespace proto = stele::runtime::exec::supervisor;
using proto::ReportKind;
using proto::SpawnStage;

struct Args {
  pid_t server_pid = 0;
  bool has_deadline = false;
  int64_t deadline_ns = 0;  // CLOCK_MONOTONIC
  const char* executable = nullptr;
  const char* working_dir = nullptr;
  std::vector<char*> argv;  // nullptr-terminated
  std::vector<char*> envp;  // nullptr-terminated
};

bool ParseInt(const char* text, int64_t& out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  out = value;
  return true;
}

bool Parse(int argc, char** argv, Args& args) {
  if (argc < 8 || std::strcmp(argv[1], proto::kProtocol) != 0) return false;
  int64_t value = 0;
  if (!ParseInt(argv[2], value) || value <= 1) return false;
  args.server_pid = static_cast<pid_t>(value);
  if (std::strcmp(argv[3], "-") != 0) {
    if (!ParseInt(argv[3], args.deadline_ns)) return false;
    args.has_deadline = true;
  }
  args.executable = argv[4];
  args.working_dir = argv[5];
  int at = 6;
  int64_t count = 0;
  if (!ParseInt(argv[at++], count) || count < 1 || count > argc - at) return false;
  for (int64_t i = 0; i < count; ++i) args.argv.push_back(argv[at++]);
  args.argv.push_back(nullptr);
  if (at >= argc || !ParseInt(argv[at++], count) || count < 0 || count != argc - at) return false;
  for (int64_t i = 0; i < count; ++i) args.envp.push_back(argv[at++]);
  args.envp.push_back(nullptr);
  return true;
}

int64_t NowNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// A lost report (the server is gone: EPIPE, with SIGPIPE blocked) changes
// nothing: the supervisor's job is the same.
void Send(ReportKind kind, int32_t value = 0, SpawnStage stage = SpawnStage::kSetup) {
  proto::Report report;
  report.kind = static_cast<int32_t>(kind);
  report.value = value;
  report.stage = static_cast<int32_t>(stage);
  while (write(proto::kReportFd, &report, sizeof report) < 0 && errno == EINTR) {
  }
}

// The child between fork and execve: only async-signal-safe calls (the
// supervisor is single-threaded, but this keeps the child trivially safe).
[[noreturn]] void RunCommand(const Args& args, pid_t supervisor, int status_fd) {
  auto fail = [status_fd](SpawnStage stage) {
    const int32_t message[2] = {static_cast<int32_t>(stage), errno};
    while (write(status_fd, message, sizeof message) < 0 && errno == EINTR) {
    }
    _exit(127);
  };
  setpgid(0, 0);
  // The command dies with the supervisor; checked after setting it, in case
  // the supervisor died before.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != supervisor) _exit(127);
  if (dup2(proto::kCommandStdinFd, 0) < 0 || dup2(proto::kCommandStdoutFd, 1) < 0 ||
      dup2(proto::kCommandStderrFd, 2) < 0) {
    fail(SpawnStage::kSetup);
  }
  // Nothing but 0/1/2 reaches the command (status_fd is O_CLOEXEC).
  if (status_fd > 3) close_range(3, static_cast<unsigned>(status_fd) - 1, 0);
  close_range(static_cast<unsigned>(status_fd) + 1, ~0U, 0);
  if (args.working_dir[0] != '\0' && chdir(args.working_dir) != 0) fail(SpawnStage::kChdir);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(args.executable, args.argv.data(), args.envp.data());
  fail(SpawnStage::kExec);
  _exit(127);  // not reached
}

// Our children, from /proc/self/task/<pid>/children (the supervisor has one
// thread). False when the file cannot be read (no /proc).
bool ListChildren(std::vector<pid_t>& children) {
  children.clear();
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/children", static_cast<int>(getpid()));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[4096];
  int64_t current = -1;
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buffer[i];
      if (c >= '0' && c <= '9') {
        current = (current < 0 ? 0 : current * 10) + (c - '0');
      } else if (current >= 0) {
        children.push_back(static_cast<pid_t>(current));
        current = -1;
      }
    }
  }
  if (current >= 0) children.push_back(static_cast<pid_t>(current));
  close(fd);
  return true;
}

class Supervisor {
 public:
  explicit Supervisor(const Args& args) : args_(args) {}

  [[noreturn]] void Run() {
    if (args_.has_deadline && NowNs() >= args_.deadline_ns) {
      Send(ReportKind::kDeadline);
      _exit(0);
    }
    int status_pipe[2];
    if (pipe2(status_pipe, O_CLOEXEC) != 0) {
      Send(ReportKind::kSpawnFailed, errno, SpawnStage::kSetup);
      _exit(0);
    }
    const pid_t self = getpid();
    const pid_t child = fork();
    if (child < 0) {
      Send(ReportKind::kSpawnFailed, errno, SpawnStage::kSetup);
      _exit(0);
    }
    if (child == 0) RunCommand(args_, self, status_pipe[1]);
    // Here too: the group exists once either of us has made it, so a
    // cancel right after kSpawned finds it.
    setpgid(child, child);
    leader_ = child;
    close(status_pipe[1]);
    close(proto::kCommandStdinFd);
    close(proto::kCommandStdoutFd);
    close(proto::kCommandStderrFd);
    int32_t failure[2];
    ssize_t got = 0;
    while (got < static_cast<ssize_t>(sizeof failure)) {
      const ssize_t n = read(status_pipe[0], reinterpret_cast<char*>(failure) + got,
                             sizeof failure - static_cast<size_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += n;
    }
    close(status_pipe[0]);
    if (got == static_cast<ssize_t>(sizeof failure)) {  // execve (or chdir) failed
      int status = 0;
      while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      Send(ReportKind::kSpawnFailed, failure[1], static_cast<SpawnStage>(failure[0]));
      _exit(0);
    }
    Send(ReportKind::kSpawned, child);
    Watch();
  }

 private:
  [[noreturn]] void Watch() {
    sigset_t watched;
    sigemptyset(&watched);
    sigaddset(&watched, SIGCHLD);
    sigaddset(&watched, SIGUSR1);
    const int signals = signalfd(-1, &watched, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signals < 0) Lost();
    for (;;) {
      timespec timeout{};
      timespec* timeout_ptr = nullptr;
      if (args_.has_deadline) {
        const int64_t left = args_.deadline_ns - NowNs();
        if (left <= 0) Finish(ReportKind::kDeadline, 0);
        timeout.tv_sec = static_cast<time_t>(left / 1'000'000'000);
        timeout.tv_nsec = static_cast<long>(left % 1'000'000'000);
        timeout_ptr = &timeout;
      }
      pollfd fds[2] = {{proto::kControlFd, POLLIN, 0}, {signals, POLLIN, 0}};
      const int ready = ppoll(fds, 2, timeout_ptr, nullptr);
      if (ready < 0) {
        if (errno == EINTR) continue;
        Lost();
      }
      if (fds[0].revents != 0) {
        char byte = 0;
        const ssize_t n = read(proto::kControlFd, &byte, 1);
        if (n > 0) Finish(ReportKind::kCancelled, 0);
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) ServerGone();
      }
      if (fds[1].revents != 0) {
        signalfd_siginfo info;
        while (read(signals, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
          // The parent-death signal also comes when the server thread that
          // started us ends while the server lives on: then we were
          // re-parented to another of its threads and getppid() is unchanged.
          if (info.ssi_signo == SIGUSR1 && getppid() != args_.server_pid) ServerGone();
        }
        if (ReapExited()) {
          if (WIFEXITED(leader_status_)) {
            Finish(ReportKind::kExited, WEXITSTATUS(leader_status_));
          }
          Finish(ReportKind::kSignaled, WIFSIGNALED(leader_status_) ? WTERMSIG(leader_status_) : 0);
        }
      }
    }
  }

  // Reaps every exited child; true once the leader is among them. The
  // leader is looked at with WNOWAIT first: its group is killed while the
  // leader is still a zombie, so the group id cannot have been reused.
  bool ReapExited() {
    for (;;) {
      siginfo_t info{};
      if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
        return leader_reaped_;
      }
      if (info.si_pid == leader_ && !leader_reaped_) {
        kill(-leader_, SIGKILL);  // stragglers (background jobs) of a finished leader
        Reap(leader_);
        continue;
      }
      Reap(info.si_pid);  // an orphan of the attempt, re-parented to us
    }
  }

  void Reap(pid_t pid) {
    int status = 0;
    pid_t reaped;
    while ((reaped = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (reaped == leader_ && !leader_reaped_) {
      leader_reaped_ = true;
      leader_status_ = status;
    }
  }

  // Kills the group and every descendant until none is left; then reports
  // and exits.
  [[noreturn]] void Finish(ReportKind kind, int32_t value) {
    KillAll();
    Send(kind, value);
    _exit(0);
  }

  [[noreturn]] void ServerGone() {
    KillAll();
    _exit(0);
  }

  // Something impossible failed (signalfd, ppoll): kill everything and
  // exit without a final report, which the server reads as a lost
  // supervisor.
  [[noreturn]] void Lost() {
    KillAll();
    _exit(1);
  }

  // Every SIGKILLed process is reaped within milliseconds; one that cannot
  // be killed (it changed its user, e.g. sudo) or named (no /proc) is
  // given up on after this long, so the attempt still ends.
  static constexpr int64_t kKillWaitNs = 2'000'000'000;

  void KillAll() {
    std::vector<pid_t> children;
    const int64_t give_up = NowNs() + kKillWaitNs;
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    for (;;) {
      if (!leader_reaped_) kill(-leader_, SIGKILL);
      ListChildren(children);
      for (pid_t child : children) kill(child, SIGKILL);
      int status = 0;
      const pid_t reaped = waitpid(-1, &status, WNOHANG);
      if (reaped > 0) {
        if (reaped == leader_ && !leader_reaped_) {
          leader_reaped_ = true;
          leader_status_ = status;
        }
        continue;
      }
      if (reaped < 0 && errno == EINTR) continue;
      if (reaped < 0) return;  // ECHILD: nothing left
      const int64_t left = give_up - NowNs();
      if (left <= 0) return;
      // Wait for the next child to die (SIGCHLD is blocked, so pending),
      // and look again at least every 20 ms.
      const int64_t wait = left < 20'000'000 ? left : 20'000'000;
      const timespec timeout{0, static_cast<long>(wait)};
      sigtimedwait(&chld, nullptr, &timeout);
    }
  }

  const Args& args_;
  pid_t leader_ = -1;
  bool leader_reaped_ = false;
  int leader_status_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  // Normally blocked by the server's spawn already; terminal and service
  // manager signals must not end the supervisor before it has killed the
  // command (only SIGKILL can, and then PR_SET_PDEATHSIG kills the command).
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  Args args;
  if (!Parse(argc, argv, args)) {
    Send(ReportKind::kSpawnFailed, EINVAL, SpawnStage::kSetup);
    _exit(2);
  }
  prctl(PR_SET_PDEATHSIG, SIGUSR1);
  if (getppid() != args.server_pid) _exit(0);  // the server died before we got here
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  Supervisor(args).Run();
}
