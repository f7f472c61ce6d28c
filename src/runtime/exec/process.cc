#include "runtime/exec/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

#include "base/result.h"
#include "runtime/exec/supervisor_protocol.h"

namespace stele::runtime::exec {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kMaxLogLine = 4096;

std::string ErrnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

// Closes its fd on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

// `fd` moved to a number >= supervisor::kFirstFreeFd (O_CLOEXEC kept), so
// that the spawn's dup2s onto 3..7 can never overwrite a source fd.
Result<int, std::string> AboveSupervisorFds(int fd) {
  if (fd >= supervisor::kFirstFreeFd) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, supervisor::kFirstFreeFd);
  const int error = errno;
  ::close(fd);
  if (moved < 0) return Unexpected("fcntl(F_DUPFD_CLOEXEC): " + ErrnoText(error));
  return moved;
}

Result<void, std::string> MakePipe(Pipe& p) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Unexpected("pipe2: " + ErrnoText(errno));
  auto read = AboveSupervisorFds(fds[0]);
  auto write = AboveSupervisorFds(fds[1]);
  if (read) p.read.Reset(*read);
  if (write) p.write.Reset(*write);
  if (!read) return Unexpected(read.error());
  if (!write) return Unexpected(write.error());
  return {};
}

void SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The executable to spawn: argv[0] itself when it holds a '/', else the
// first match in the PATH of the child's environment.
Result<std::string, std::string> ResolveExecutable(const ProcessSpec& spec) {
  const std::string& name = spec.argv[0];
  if (name.empty()) return Unexpected(std::string("argv[0] is empty"));
  if (name.find('/') != std::string::npos) return name;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& entry : spec.env) {
    if (entry.rfind("PATH=", 0) == 0) path = entry.substr(5);
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    if (dir[0] != '/' && !spec.working_dir.empty()) dir = spec.working_dir + "/" + dir;
    std::string candidate = dir + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return Unexpected("`" + name + "` not found in PATH (" + path + ")");
}

// Writes to a pipe whose reader may be gone without raising SIGPIPE in the
// process: the signal is blocked on this thread and a pending one consumed.
ssize_t WriteNoSigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_set;
  sigset_t old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t written = ::write(fd, data, size);
  int error = errno;
  if (written < 0 && error == EPIPE && !sigismember(&old, SIGPIPE)) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = error;
  return written;
}

// Splits stderr into log lines.
class LineSplitter {
 public:
  explicit LineSplitter(const std::function<void(std::string_view)>& sink) : sink_(sink) {}
  void Add(std::string_view data) {
    if (!sink_) return;
    pending_.append(data);
    std::size_t start = 0;
    while (true) {
      std::size_t nl = pending_.find('\n', start);
      if (nl == std::string::npos) break;
      Emit(std::string_view(pending_).substr(start, nl - start));
      start = nl + 1;
    }
    pending_.erase(0, start);
    while (pending_.size() >= kMaxLogLine) {
      Emit(std::string_view(pending_).substr(0, kMaxLogLine));
      pending_.erase(0, kMaxLogLine);
    }
  }
  void Flush() {
    if (sink_ && !pending_.empty()) Emit(pending_);
    pending_.clear();
  }

 private:
  void Emit(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (line.size() > kMaxLogLine) {
      sink_(line.substr(0, kMaxLogLine));
      line.remove_prefix(kMaxLogLine);
    }
    sink_(line);
  }
  const std::function<void(std::string_view)>& sink_;
  std::string pending_;
};

ProcessOutcome SpawnFailed(std::string why) {
  ProcessOutcome outcome;
  outcome.end = ProcessOutcome::End::kSpawnFailed;
  outcome.spawn_error = std::move(why);
  return outcome;
}

enum class ReportRead { kGot, kNothingYet, kEof };

// Reads one whole Report (written whole by the supervisor, so a partial
// read is completed by waiting); kNothingYet only on a non-blocking fd
// with nothing to read; kEof when the supervisor is gone (or on error).
ReportRead ReadReport(int fd, supervisor::Report& report) {
  std::size_t got = 0;
  auto* bytes = reinterpret_cast<char*>(&report);
  while (got < sizeof report) {
    ssize_t n = ::read(fd, bytes + got, sizeof report - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (got == 0) return ReportRead::kNothingYet;
      pollfd wait{fd, POLLIN, 0};
      ::poll(&wait, 1, -1);
      continue;
    }
    if (n <= 0) return ReportRead::kEof;
    got += static_cast<std::size_t>(n);
  }
  return ReportRead::kGot;
}

std::string WaitStatusText(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

// Reaps the supervisor; its wait status.
int ReapSupervisor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

int64_t SteadyNanos(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// The supervisor's argv (supervisor_protocol.h).
std::vector<std::string> SupervisorArgs(const ProcessSpec& spec, const std::string& executable) {
  std::vector<std::string> args = {
      supervisor::kExecutableName,
      supervisor::kProtocol,
      std::to_string(::getpid()),
      spec.deadline ? std::to_string(SteadyNanos(*spec.deadline)) : "-",
      executable,
      spec.working_dir,
      std::to_string(spec.argv.size())};
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  args.push_back(std::to_string(spec.env.size()));
  args.insert(args.end(), spec.env.begin(), spec.env.end());
  return args;
}

std::string CannotExecute(const ProcessSpec& spec, bool in_working_dir, int error) {
  return "cannot execute `" + spec.argv[0] + "`" +
         (in_working_dir && !spec.working_dir.empty() ? " in `" + spec.working_dir + "`" : "") +
         ": " + ErrnoText(error);
}

std::string SelfDirectory() {
  char buffer[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return {};
  std::string path(buffer, static_cast<std::size_t>(n));
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

}  // namespace

Result<std::string, std::string> FindSupervisor() {
  std::vector<std::string> candidates;
  if (std::string dir = SelfDirectory(); !dir.empty()) {
    candidates.push_back(dir + "/" + supervisor::kExecutableName);
  }
#ifdef STELE_EXEC_SUPERVISOR_BUILD_PATH
  candidates.push_back(STELE_EXEC_SUPERVISOR_BUILD_PATH);
#endif
  std::string looked;
  for (const auto& candidate : candidates) {
    if (IsExecutableFile(candidate)) return candidate;
    looked += (looked.empty() ? "" : ", ") + candidate;
  }
  return Unexpected("exec activities need the `" + std::string(supervisor::kExecutableName) +
                    "` executable next to this binary; not found (looked for " + looked + ")");
}

ProcessOutcome RunProcess(const ProcessSpec& spec, const CancellationToken& cancel,
                          const std::function<void(std::string_view)>& on_stderr_line) {
  using End = ProcessOutcome::End;
  if (spec.argv.empty()) return SpawnFailed("argv is empty");
  if (cancel.IsCancelled()) {
    ProcessOutcome outcome;
    outcome.end = End::kCancelled;
    return outcome;
  }
  if (spec.deadline && std::chrono::steady_clock::now() >= *spec.deadline) {
    ProcessOutcome outcome;
    outcome.end = End::kDeadline;
    return outcome;
  }
  auto executable = ResolveExecutable(spec);
  if (!executable) return SpawnFailed("cannot execute: " + executable.error());
  auto supervisor_path = FindSupervisor();
  if (!supervisor_path) return SpawnFailed(supervisor_path.error());

  Pipe in, out, err, report, control;
  for (Pipe* p : {&in, &out, &err, &report, &control}) {
    if (auto made = MakePipe(*p); !made) return SpawnFailed(made.error());
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  // The supervisor's own 0/1 are /dev/null, its 2 the server's stderr.
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, report.write.get(), supervisor::kReportFd);
  posix_spawn_file_actions_adddup2(&actions, control.read.get(), supervisor::kControlFd);
  posix_spawn_file_actions_adddup2(&actions, in.read.get(), supervisor::kCommandStdinFd);
  posix_spawn_file_actions_adddup2(&actions, out.write.get(), supervisor::kCommandStdoutFd);
  posix_spawn_file_actions_adddup2(&actions, err.write.get(), supervisor::kCommandStderrFd);
  // Nothing of the server leaks into the supervisor or the command,
  // O_CLOEXEC or not.
  posix_spawn_file_actions_addclosefrom_np(&actions, supervisor::kFirstFreeFd);
  // Every signal blocked (the supervisor watches its own through a
  // signalfd) and every disposition default; it stays in our process
  // group, the command gets its own.
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&attr, &all);
  posix_spawnattr_setsigdefault(&attr, &all);

  std::vector<std::string> args = SupervisorArgs(spec, *executable);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};

  pid_t supervisor_pid = -1;
  int rc =
      ::posix_spawn(&supervisor_pid, supervisor_path->c_str(), &actions, &attr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return SpawnFailed("cannot start the exec supervisor `" + *supervisor_path +
                       "`: " + ErrnoText(rc));
  }
  in.read.Reset();
  out.write.Reset();
  err.write.Reset();
  report.write.Reset();
  control.read.Reset();

  // The first report: the command runs (or could not be started).
  supervisor::Report first;
  if (ReadReport(report.read.get(), first) != ReportRead::kGot) {
    int status = ReapSupervisor(supervisor_pid);
    if (WIFSIGNALED(status)) {
      // Killed from outside, possibly after the command started (it runs
      // before the supervisor reports it): the command died with it (its
      // parent-death signal). Not a spawn failure: the command may have run.
      ProcessOutcome outcome;
      outcome.end = End::kSupervisorLost;
      outcome.spawn_error = "the exec supervisor died as the command started (" +
                            WaitStatusText(status) + "); the command was killed with it";
      return outcome;
    }
    return SpawnFailed("the exec supervisor `" + *supervisor_path +
                       "` ended before starting the command (" + WaitStatusText(status) + ")");
  }
  switch (static_cast<supervisor::ReportKind>(first.kind)) {
    case supervisor::ReportKind::kSpawned:
      break;
    case supervisor::ReportKind::kDeadline: {
      ReapSupervisor(supervisor_pid);
      ProcessOutcome outcome;
      outcome.end = End::kDeadline;
      return outcome;
    }
    case supervisor::ReportKind::kSpawnFailed:
      ReapSupervisor(supervisor_pid);
      if (static_cast<supervisor::SpawnStage>(first.stage) == supervisor::SpawnStage::kSetup) {
        return SpawnFailed("the exec supervisor could not start the command: " +
                           ErrnoText(first.value));
      }
      return SpawnFailed(CannotExecute(
          spec, static_cast<supervisor::SpawnStage>(first.stage) == supervisor::SpawnStage::kChdir,
          first.value));
    default:
      ReapSupervisor(supervisor_pid);
      return SpawnFailed("the exec supervisor sent an unexpected report (" +
                         std::to_string(first.kind) + ")");
  }
  SetNonBlocking(in.write.get());
  SetNonBlocking(out.read.get());
  SetNonBlocking(err.read.get());
  SetNonBlocking(report.read.get());

  ProcessOutcome outcome;
  outcome.pid = static_cast<pid_t>(first.value);
  std::optional<End> forced_end;  // set when we had everything killed
  bool kill_requested = false;
  // Asks the supervisor to kill everything; it reports kCancelled when done.
  auto kill_all = [&](End why) {
    if (!forced_end) forced_end = why;
    if (!kill_requested) {
      // EPIPE when the supervisor is gone already: nothing left to kill.
      const char byte = 'k';
      while (WriteNoSigpipe(control.write.get(), &byte, 1) < 0 && errno == EINTR) {
      }
      kill_requested = true;
    }
  };

  // The token's callback only pokes an eventfd; it may run on any thread
  // and even after this function returned, so the fd is shared.
  auto wake = std::make_shared<Fd>(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  uint64_t registration = 0;
  if (wake->valid()) {
    registration = cancel.OnCancel([wake] {
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(wake->get(), &one, sizeof one);
    });
  }

  LineSplitter stderr_lines(on_stderr_line);
  std::size_t stdin_offset = 0;
  if (spec.stdin_data.empty()) in.write.Reset();
  std::optional<supervisor::Report> last;  // the supervisor's final report
  bool supervisor_gone = false;            // its report pipe reached EOF
  bool cancel_seen = false;
  char buffer[kReadChunk];

  // Reads what is available on `fd` into `sink`; false at EOF or error.
  auto drain = [&](Fd& fd, std::string& sink, std::size_t cap, End overflow) {
    while (true) {
      ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        fd.Reset();
        return;
      }
      std::size_t room = cap - std::min(cap, sink.size());
      std::size_t take = std::min(room, static_cast<std::size_t>(n));
      sink.append(buffer, take);
      if (&sink == &outcome.stderr_data) stderr_lines.Add(std::string_view(buffer, take));
      if (take < static_cast<std::size_t>(n)) {
        kill_all(overflow);
        fd.Reset();
        return;
      }
    }
  };

  while (true) {
    const bool ended = last.has_value() || supervisor_gone;
    // Once everything is dead the pipes reach EOF at once; after a kill we
    // do not wait for that (a process we could not name may hold them).
    if (ended && ((!out.read.valid() && !err.read.valid()) || forced_end || supervisor_gone ||
                  (last && last->kind != static_cast<int32_t>(supervisor::ReportKind::kExited) &&
                   last->kind != static_cast<int32_t>(supervisor::ReportKind::kSignaled)))) {
      break;
    }
    pollfd fds[5];
    nfds_t count = 0;
    auto add = [&](int fd, short events) -> pollfd* {
      fds[count] = pollfd{fd, events, 0};
      return &fds[count++];
    };
    pollfd* p_in = in.write.valid() ? add(in.write.get(), POLLOUT) : nullptr;
    pollfd* p_out = out.read.valid() ? add(out.read.get(), POLLIN) : nullptr;
    pollfd* p_err = err.read.valid() ? add(err.read.get(), POLLIN) : nullptr;
    pollfd* p_report = !ended ? add(report.read.get(), POLLIN) : nullptr;
    pollfd* p_wake = wake->valid() && !cancel_seen ? add(wake->get(), POLLIN) : nullptr;
    // Without an eventfd the token is polled for.
    int timeout_ms = wake->valid() ? -1 : 10;
    int ready = ::poll(fds, count, timeout_ms);
    if (ready < 0 && errno != EINTR) break;  // cannot happen with valid fds

    if ((p_wake && p_wake->revents) || (!wake->valid() && !cancel_seen && cancel.IsCancelled())) {
      cancel_seen = true;
      kill_all(End::kCancelled);
      in.write.Reset();
    }
    if (p_in && p_in->revents && in.write.valid()) {
      while (stdin_offset < spec.stdin_data.size()) {
        std::size_t chunk = std::min(kReadChunk, spec.stdin_data.size() - stdin_offset);
        ssize_t n = WriteNoSigpipe(in.write.get(), spec.stdin_data.data() + stdin_offset, chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) {  // EPIPE: the command does not read its stdin
          stdin_offset = spec.stdin_data.size();
          break;
        }
        stdin_offset += static_cast<std::size_t>(n);
      }
      if (stdin_offset >= spec.stdin_data.size()) in.write.Reset();
    }
    if (p_out && p_out->revents && out.read.valid()) {
      drain(out.read, outcome.stdout_data, spec.max_stdout_bytes, End::kStdoutOverflow);
    }
    if (p_err && p_err->revents && err.read.valid()) {
      drain(err.read, outcome.stderr_data, spec.max_stderr_bytes, End::kStderrOverflow);
    }
    if (p_report && p_report->revents) {
      supervisor::Report record;
      switch (ReadReport(report.read.get(), record)) {
        case ReportRead::kGot:
          last = record;
          break;
        case ReportRead::kEof:
          supervisor_gone = true;
          break;
        case ReportRead::kNothingYet:
          break;
      }
    }
  }
  if (registration != 0) cancel.Unregister(registration);
  stderr_lines.Flush();

  if (!last && !supervisor_gone) kill_all(End::kCancelled);  // only after a poll failure
  // Closing the control pipe ends a supervisor still running (EOF: it kills
  // everything); then it is reaped.
  control.write.Reset();
  const int supervisor_status = ReapSupervisor(supervisor_pid);

  if (forced_end) {
    outcome.end = *forced_end;
    return outcome;
  }
  if (!last) {
    // The leader died with the supervisor (its parent-death signal); the
    // rest of its group is killed here, best effort: the group id stays
    // taken while the group has a member.
    if (outcome.pid > 0) ::kill(-outcome.pid, SIGKILL);
    outcome.end = End::kSupervisorLost;
    outcome.spawn_error = "the exec supervisor died while the command ran (" +
                          WaitStatusText(supervisor_status) + "); the command was killed with it";
    return outcome;
  }
  switch (static_cast<supervisor::ReportKind>(last->kind)) {
    case supervisor::ReportKind::kExited:
      outcome.end = End::kExited;
      outcome.exit_status = last->value;
      break;
    case supervisor::ReportKind::kSignaled:
      outcome.end = End::kSignaled;
      outcome.term_signal = last->value;
      break;
    case supervisor::ReportKind::kDeadline:
      outcome.end = End::kDeadline;
      break;
    default:  // kCancelled is only ever asked for by us (forced_end)
      outcome.end = End::kSupervisorLost;
      outcome.spawn_error =
          "the exec supervisor sent an unexpected report (" + std::to_string(last->kind) + ")";
      break;
  }
  return outcome;
}

}  // namespace stele::runtime::exec
