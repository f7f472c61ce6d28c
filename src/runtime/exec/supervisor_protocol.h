// The private protocol between RunProcess (process.cc, in the server) and
// the exec supervisor (supervisor_main.cc, the `stele-exec-supervisor`
// executable): one supervisor per attempt sits between the server and the
// command, kills the command's whole process tree at the deadline or when
// the server dies, and reports how the command ended
// (docs/exec_activities.md, "The supervisor").
//
// The supervisor is started with exactly these descriptors:
//   0, 1  /dev/null          2  the server's stderr (diagnostics)
//   3     kReportFd: the write end of the report pipe
//   4     kControlFd: the read end of the control pipe; a byte on it asks
//         for the command to be killed (cancel), EOF means the server died
//   5, 6, 7  the command's stdin, stdout and stderr
// its argv is
//   [0] any  [1] kProtocol  [2] the server's pid
//   [3] the deadline, CLOCK_MONOTONIC nanoseconds, or "-" for none
//   [4] the executable (a path)  [5] the working directory ("" = inherit)
//   [6] n, then n arguments (the command's argv, argv[0] included)
//   then m, then m "NAME=value" entries (the command's whole environment)
// and every signal blocked. It writes Reports to kReportFd: first kSpawned
// (or kSpawnFailed, or kDeadline when the deadline has passed before
// anything ran), then exactly one of kExited, kSignaled, kDeadline,
// kCancelled once every process it could find of the attempt is dead and
// reaped, and exits 0. A server that reads EOF before the final report
// lost its supervisor (killed from outside).
//
// Threading/ownership: plain constants and a plain struct.
#pragma once

#include <cstdint>

namespace stele::runtime::exec::supervisor {

inline constexpr char kProtocol[] = "stele-exec-supervisor/1";
// The file name of the executable, looked for next to the running binary
// (process.h, FindSupervisor).
inline constexpr char kExecutableName[] = "stele-exec-supervisor";

inline constexpr int kReportFd = 3;
inline constexpr int kControlFd = 4;
inline constexpr int kCommandStdinFd = 5;
inline constexpr int kCommandStdoutFd = 6;
inline constexpr int kCommandStderrFd = 7;
inline constexpr int kFirstFreeFd = 8;

enum class ReportKind : int32_t {
  kSpawned = 1,      // value: the command's pid, also its process group id
  kSpawnFailed = 2,  // value: errno; stage: SpawnStage
  kExited = 3,       // value: the command's exit status
  kSignaled = 4,     // value: the signal that killed the command
  kDeadline = 5,     // the deadline passed: everything was killed
  kCancelled = 6,    // the server asked (kControlFd): everything was killed
};

enum class SpawnStage : int32_t {
  kSetup = 1,  // bad arguments, no pipe, fork failed
  kChdir = 2,  // the working directory
  kExec = 3,   // execve of the command
};

// Written and read whole (16 bytes < PIPE_BUF: atomic on a pipe).
struct Report {
  int32_t kind = 0;   // ReportKind
  int32_t value = 0;  // see ReportKind
  int32_t stage = 0;  // SpawnStage, kSpawnFailed only
  int32_t reserved = 0;
};
static_assert(sizeof(Report) == 16);

}  // namespace stele::runtime::exec::supervisor
