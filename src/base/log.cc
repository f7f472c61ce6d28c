#include "base/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/clock.h"
#include "base/time.h"

namespace stele {
namespace {

LogLevel LevelFromEnvironment() {
  const char* value = std::getenv("STELE_LOG");
  if (value == nullptr) return LogLevel::kWarn;
  std::string name(value);
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (name == "trace") return LogLevel::kTrace;
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "error") return LogLevel::kError;
  return LogLevel::kWarn;
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

void SetLogLevel(LogLevel level) { LevelSlot().store(level, std::memory_order_relaxed); }

LogLevel GetLogLevel() { return LevelSlot().load(std::memory_order_relaxed); }

void LogMessage(LogLevel level, std::string_view file, int line, std::string_view msg) {
  if (level < GetLogLevel()) return;
  std::string text = FormatRfc3339(SystemClock::Instance().Now());
  text += ' ';
  text += LevelName(level);
  text += ' ';
  text += Basename(file);
  text += ':';
  text += std::to_string(line);
  text += ' ';
  text += msg;
  text += '\n';
  // One fwrite per line: POSIX stdio locks the stream for the whole call, so
  // concurrent lines do not interleave and no lock of our own is needed.
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace stele
