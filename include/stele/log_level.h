// stele/log_level.h — the levels of Stele's log (stderr; the environment
// variable STELE_LOG sets the initial level, docs/config.md) and of
// WorkflowContext::log.
//
// Threading: a plain enum.
#pragma once

namespace stele {

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError };

}  // namespace stele
