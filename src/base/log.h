// A minimal logging facade: leveled, one line per message, to stderr.
//
//   STELE_LOG(kWarn, "skipping " << id << ": " << reason);
//
// prints
//
//   2026-01-02T03:04:05.123456Z WARN exec_task.cc:42 skipping 01J...: locked
//
// The message is only built when the level is enabled, so disabled TRACE and
// DEBUG lines cost one relaxed atomic load. No third-party dependency on
// purpose: the library must stay embeddable, and the embedding program owns
// the logging choice; it can redirect stderr.
//
// The initial level comes from the environment variable STELE_LOG (trace,
// debug, info, warn or error, case-insensitive), default warn.
//
// Threading: everything here may be called from any thread. Lines from
// different threads never interleave.

#ifndef STELE_BASE_LOG_H_
#define STELE_BASE_LOG_H_

#include <sstream>
#include <string_view>

#include "stele/log_level.h"

namespace stele {

// Messages below `level` are dropped from now on.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

// Writes "<RFC 3339 UTC time> <LEVEL> <file basename>:<line> <msg>\n" to
// stderr if `level` is enabled. Prefer STELE_LOG, which fills in file and line.
void LogMessage(LogLevel level, std::string_view file, int line, std::string_view msg);

}  // namespace stele

// `level` is a LogLevel enumerator name without qualification (kInfo); the
// remaining arguments form an expression for `std::ostream <<`.
#define STELE_LOG(level, ...)                                                                     \
  do {                                                                                            \
    if (::stele::LogLevel::level >= ::stele::GetLogLevel()) {                                     \
      std::ostringstream stele_log_stream;                                                        \
      stele_log_stream << __VA_ARGS__;                                                            \
      ::stele::LogMessage(::stele::LogLevel::level, __FILE__, __LINE__, stele_log_stream.view()); \
    }                                                                                             \
  } while (false)

#endif  // STELE_BASE_LOG_H_
