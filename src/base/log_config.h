// The log level as the environment names it: STELE_LOG (base/log.h) parsed
// strictly, so that programs that can refuse to start (the `stele` binary
// does) report a misspelt level instead of silently using the default.
// docs/config.md ("Logging") says what the server logs at which level.
//
// Threading: pure functions (LogLevelFromEnvironment reads the
// environment); callable from any thread.
#ifndef STELE_BASE_LOG_CONFIG_H_
#define STELE_BASE_LOG_CONFIG_H_

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "stele/log_level.h"

namespace stele {

// The level names, lowest first, as messages list them.
inline constexpr std::string_view kLogLevelNames = "trace, debug, info, warn, error";

// A level by name (case-insensitive); nullopt for anything else.
std::optional<LogLevel> ParseLogLevel(std::string_view name);

// The level STELE_LOG asks for: nullopt when it is unset or empty; an error
// naming the accepted levels when it is not a level name. (base/log.h, which
// takes its initial level from STELE_LOG too, reports such a value on
// stderr once and logs at warn.)
Result<std::optional<LogLevel>, std::string> LogLevelFromEnvironment();

}  // namespace stele

#endif  // STELE_BASE_LOG_CONFIG_H_
