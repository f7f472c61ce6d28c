#include "runtime/exec/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
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

namespace stele::runtime::exec {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kMaxLogLine = 4096;

std::string ErrnoText(int error) { return std::error_code(error, std::generic_category()).message(); }

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

Result<void, std::string> MakePipe(Pipe& p) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Unexpected("pipe2: " + ErrnoText(errno));
  p.read.Reset(fds[0]);
  p.write.Reset(fds[1]);
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

}  // namespace

ProcessOutcome RunProcess(const ProcessSpec& spec, const CancellationToken& cancel,
                          const std::function<void(std::string_view)>& on_stderr_line) {
  using End = ProcessOutcome::End;
  if (spec.argv.empty()) return SpawnFailed("argv is empty");
  if (cancel.IsCancelled()) {
    ProcessOutcome outcome;
    outcome.end = End::kCancelled;
    return outcome;
  }
  auto executable = ResolveExecutable(spec);
  if (!executable) return SpawnFailed("cannot execute: " + executable.error());

  Pipe in, out, err;
  for (Pipe* p : {&in, &out, &err}) {
    if (auto made = MakePipe(*p); !made) return SpawnFailed(made.error());
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&actions, in.read.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, out.write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err.write.get(), 2);
  // Nothing of the server leaks into the command, O_CLOEXEC or not.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (!spec.working_dir.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, spec.working_dir.c_str());
  }
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group, led by itself
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);

  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  // glibc's posix_spawn returns only once the child has exec'd (or failed
  // to), so the exec error comes back here and the group exists on return.
  int rc = ::posix_spawn(&pid, executable->c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return SpawnFailed("cannot execute `" + spec.argv[0] + "`" +
                       (spec.working_dir.empty() ? "" : " in `" + spec.working_dir + "`") + ": " +
                       ErrnoText(rc));
  }
  in.read.Reset();
  out.write.Reset();
  err.write.Reset();
  SetNonBlocking(in.write.get());
  SetNonBlocking(out.read.get());
  SetNonBlocking(err.read.get());

  ProcessOutcome outcome;
  outcome.pid = pid;
  std::optional<End> forced_end;  // set when we killed the group
  bool group_killed = false;
  auto kill_group = [&](End why) {
    if (!forced_end) forced_end = why;
    if (!group_killed) {
      ::kill(-pid, SIGKILL);
      group_killed = true;
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
  // Via syscall(): glibc 2.36 declares pidfd_open without extern "C".
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));

  LineSplitter stderr_lines(on_stderr_line);
  std::size_t stdin_offset = 0;
  if (spec.stdin_data.empty()) in.write.Reset();
  bool leader_exited = false;
  int wait_status = 0;
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
        kill_group(overflow);
        fd.Reset();
        return;
      }
    }
  };

  while (true) {
    if (leader_exited && ((!out.read.valid() && !err.read.valid()) || cancel_seen)) break;
    pollfd fds[5];
    nfds_t count = 0;
    auto add = [&](int fd, short events) -> pollfd* {
      fds[count] = pollfd{fd, events, 0};
      return &fds[count++];
    };
    pollfd* p_in = in.write.valid() ? add(in.write.get(), POLLOUT) : nullptr;
    pollfd* p_out = out.read.valid() ? add(out.read.get(), POLLIN) : nullptr;
    pollfd* p_err = err.read.valid() ? add(err.read.get(), POLLIN) : nullptr;
    pollfd* p_pid = pidfd.valid() && !leader_exited ? add(pidfd.get(), POLLIN) : nullptr;
    pollfd* p_wake = wake->valid() && !cancel_seen ? add(wake->get(), POLLIN) : nullptr;
    // Without a pidfd (old kernels) the leader's exit is polled for.
    int timeout_ms = (!pidfd.valid() && !leader_exited) ? 10 : -1;
    if (!wake->valid() && timeout_ms < 0) timeout_ms = 10;  // and so is the token
    int ready = ::poll(fds, count, timeout_ms);
    if (ready < 0 && errno != EINTR) break;  // cannot happen with valid fds

    if ((p_wake && p_wake->revents) || (!wake->valid() && cancel.IsCancelled())) {
      cancel_seen = true;
      kill_group(End::kCancelled);
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
    if (!leader_exited && ((p_pid && p_pid->revents) || !pidfd.valid())) {
      siginfo_t info{};
      // WNOWAIT: the leader stays a zombie, so its pid (the group id) cannot
      // be reused while its stragglers are killed.
      if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid) {
        leader_exited = true;
        ::kill(-pid, SIGKILL);  // stragglers (background jobs) of a finished leader
        while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
        }
      }
    }
  }
  if (registration != 0) cancel.Unregister(registration);
  stderr_lines.Flush();

  if (!leader_exited) {  // only after a poll failure: never leave it behind
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  if (forced_end) {
    outcome.end = *forced_end;
  } else if (WIFEXITED(wait_status)) {
    outcome.end = End::kExited;
    outcome.exit_status = WEXITSTATUS(wait_status);
  } else {
    outcome.end = End::kSignaled;
    outcome.term_signal = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
  }
  return outcome;
}

}  // namespace stele::runtime::exec
