#include "base/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/clock.h"
#include "base/log_config.h"
#include "base/time.h"

namespace stele {
namespace {

LogLevel LevelFromEnvironment() {
  auto level = LogLevelFromEnvironment();
  if (!level) {
    // Not through LogMessage: this runs while the level is being set up.
    const std::string line = "stele: " + level.error() + "; logging at warn\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    return LogLevel::kWarn;
  }
  return level->value_or(LogLevel::kWarn);
}

std::atomic<LogLevel>& LevelSlot() {
  // Read from the environment on first use rather than during static
  // initialisation, whose order across translation units is unspecified.
  // std::atomic is trivially destructible, so this is safe at exit too.
  static std::atomic<LogLevel> level{LevelFromEnvironment()};
  return level;
}

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return "TRACE";
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (lower == "trace") return LogLevel::kTrace;
  if (lower == "debug") return LogLevel::kDebug;
  if (lower == "info") return LogLevel::kInfo;
  if (lower == "warn") return LogLevel::kWarn;
  if (lower == "error") return LogLevel::kError;
  return std::nullopt;
}

Result<std::optional<LogLevel>, std::string> LogLevelFromEnvironment() {
  const char* value = std::getenv("STELE_LOG");
  if (value == nullptr || *value == '\0') return std::optional<LogLevel>();
  std::optional<LogLevel> level = ParseLogLevel(value);
  if (!level) {
    return Unexpected("STELE_LOG=`" + std::string(value) + "` is not a log level; use one of " +
                      std::string(kLogLevelNames));
  }
  return level;
}

void SetLogLevel(LogLevel level) { LevelSlot().store(level, std::memory_order_relaxed); }

LogLevel GetLogLevel() { return LevelSlot().load(std::memory_order_relaxed); }

void LogMessage(LogLevel level, std::string_view file, int line, std::string_view msg) {
  if (level < GetLogLevel()) return;
  std::string text = FormatRfc3339(SystemClock::Instance().Now());
  text += ' ';
  text += LevelName(level);
  text += ' ';
  text += Basename(file);
  // Line 0: `file` is a label printed alone ("... INFO workflow E_...: msg",
  // a workflow's own log), not "workflow:0".
  if (line > 0) {
    text += ':';
    text += std::to_string(line);
  }
  text += ' ';
  text += msg;
  text += '\n';
  // One fwrite per line: POSIX stdio locks the stream for the whole call, so
  // concurrent lines do not interleave and no lock of our own is needed.
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace stele
