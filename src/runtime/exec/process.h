// RunProcess: one host command run to completion (or to cancellation, or
// to its deadline) with bounded output — the process half of an exec
// activity (exec_activity_worker.h maps its outcome to a WorkerResult).
//
// The command runs under a supervisor (`stele-exec-supervisor`,
// supervisor_main.cc; the protocol is supervisor_protocol.h): RunProcess
// posix_spawns the supervisor, which forks and execs the command (never a
// shell) as the leader of its own process group, with exactly the given
// environment, the signal mask and dispositions reset, and every fd other
// than 0/1/2 closed. Stdin receives `stdin_data` and is then closed; stdout
// and stderr are read concurrently with poll(), so neither side can
// deadlock on a full pipe.
//
// Every process of the attempt (the command's group and, through the
// supervisor being a child subreaper, every descendant, including one that
// left the group with setsid or setpgid) is killed with SIGKILL (no
// SIGTERM grace: the deadline is the lock expiry and a grace period would
// run past it) when:
//   - `deadline` passes: the supervisor does it on its own clock
//     (CLOCK_MONOTONIC), whether this process is alive, stuck or gone;
//   - this process dies (SIGKILL, crash): the supervisor sees its control
//     pipe close (and gets its parent-death signal) and kills everything;
//   - `cancel` fires (deadline on the executor's Clock, cancel, shutdown):
//     RunProcess returns as soon as everything is dead;
//   - stdout or stderr exceeds its cap;
//   - the leader exits: stragglers it left behind (background jobs) are
//     killed, so an attempt never leaks processes.
// When RunProcess returns, the supervisor has reaped the leader and every
// descendant it could name, and RunProcess has reaped the supervisor (no
// zombies). Without /proc the supervisor cannot name processes outside the
// group, and those escape.
//
// Threading: RunProcess blocks the calling thread; any number of threads may
// run processes concurrently. SIGPIPE from writing to a closed stdin is
// blocked on the calling thread for the duration of the write and consumed,
// so the process-wide disposition is left alone. `on_stderr_line` is called
// on the calling thread. Ownership: plain values; the fds are owned and
// closed by RunProcess.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/cancellation.h"
#include "base/result.h"

namespace stele::runtime::exec {

struct ProcessSpec {
  // argv[0] is the executable: a path (containing '/', resolved against
  // working_dir when relative) or a bare name searched in the PATH of `env`
  // (or /usr/local/bin:/usr/bin:/bin when `env` has none). REQUIRES: non-empty.
  std::vector<std::string> argv;
  // Empty: the server's working directory.
  std::string working_dir;
  // "NAME=value" entries: the child's whole environment.
  std::vector<std::string> env;
  std::string stdin_data;
  std::size_t max_stdout_bytes = 1 << 20;
  std::size_t max_stderr_bytes = 64 << 10;
  // Past it every process of the attempt is killed (End::kDeadline); none:
  // no time limit besides `cancel`. Already past: nothing runs.
  std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt;
};

struct ProcessOutcome {
  enum class End {
    kExited,          // exit_status is valid
    kSignaled,        // term_signal is valid
    kCancelled,       // the token fired; the group was killed
    kStdoutOverflow,  // more than max_stdout_bytes; the group was killed
    kStderrOverflow,  // more than max_stderr_bytes; the group was killed
    kDeadline,        // ProcessSpec::deadline passed; everything was killed
    kSpawnFailed,     // spawn_error says why; nothing ran
    kSupervisorLost,  // the supervisor died (killed from outside); spawn_error says how
  };
  End end = End::kSpawnFailed;
  int exit_status = 0;
  int term_signal = 0;
  std::string spawn_error;
  std::string stdout_data;  // at most max_stdout_bytes
  std::string stderr_data;  // at most max_stderr_bytes
  pid_t pid = -1;           // also the process group id; -1 when nothing ran
};

// The supervisor executable: `stele-exec-supervisor` next to the running
// binary (/proc/self/exe), else the one of this build tree. The error
// names the places looked in.
Result<std::string, std::string> FindSupervisor();

// Runs `spec` (see the file comment). `on_stderr_line` gets each complete
// stderr line (without '\n'; long lines are split at 4 KiB) and the final
// unterminated piece; may be empty.
ProcessOutcome RunProcess(const ProcessSpec& spec, const CancellationToken& cancel,
                          const std::function<void(std::string_view)>& on_stderr_line = {});

}  // namespace stele::runtime::exec
