// RunProcess: one host command run to completion (or to cancellation) with
// bounded output — the process half of an exec activity
// (exec_activity_worker.h maps its outcome to a WorkerResult).
//
// The command is spawned with posix_spawn (never a shell) as the leader of
// its own process group, with exactly the given environment, the signal
// mask and dispositions reset, and every fd other than 0/1/2 closed. Stdin
// receives `stdin_data` and is then closed; stdout and stderr are read
// concurrently with poll(), so neither side can deadlock on a full pipe.
//
// The whole process group is killed with SIGKILL (no SIGTERM grace: the
// caller's deadline is the lock expiry and a grace period would run past
// it) when:
//   - `cancel` fires (deadline, cancel, shutdown): RunProcess returns as soon
//     as the group is dead and the leader reaped;
//   - stdout or stderr exceeds its cap;
//   - the leader exits: stragglers it left behind in its group (background
//     jobs) are killed, so an attempt never leaks processes. A process that
//     moves itself to another group or session (setsid, setpgid) escapes
//     this; that is documented, not prevented.
// The leader is always reaped before RunProcess returns (no zombies of
// ours). Stragglers are the leader's children, not ours: SIGKILL is
// asynchronous, so they may still be finishing their exit when RunProcess
// returns, and they are reaped by whoever inherits them.
//
// Threading: RunProcess blocks the calling thread; any number of threads may
// run processes concurrently. SIGPIPE from writing to a closed stdin is
// blocked on the calling thread for the duration of the write and consumed,
// so the process-wide disposition is left alone. `on_stderr_line` is called
// on the calling thread. Ownership: plain values; the fds are owned and
// closed by RunProcess.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/cancellation.h"

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
};

struct ProcessOutcome {
  enum class End {
    kExited,          // exit_status is valid
    kSignaled,        // term_signal is valid
    kCancelled,       // the token fired; the group was killed
    kStdoutOverflow,  // more than max_stdout_bytes; the group was killed
    kStderrOverflow,  // more than max_stderr_bytes; the group was killed
    kSpawnFailed,     // spawn_error says why; nothing ran
  };
  End end = End::kSpawnFailed;
  int exit_status = 0;
  int term_signal = 0;
  std::string spawn_error;
  std::string stdout_data;  // at most max_stdout_bytes
  std::string stderr_data;  // at most max_stderr_bytes
  pid_t pid = -1;           // also the process group id; -1 when nothing ran
};

// Runs `spec` (see the file comment). `on_stderr_line` gets each complete
// stderr line (without '\n'; long lines are split at 4 KiB) and the final
// unterminated piece; may be empty.
ProcessOutcome RunProcess(const ProcessSpec& spec, const CancellationToken& cancel,
                          const std::function<void(std::string_view)>& on_stderr_line = {});

}  // namespace stele::runtime::exec
