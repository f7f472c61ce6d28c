// Backtraces of workflow host calls, stored per version range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/component_id.h"
#include "core/ids.h"
#include "core/version.h"

namespace stele::core {

struct FrameSymbol {
  std::optional<std::string> func_name;
  std::optional<std::string> file;
  std::optional<uint32_t> line;
  std::optional<uint32_t> col;
  friend bool operator==(const FrameSymbol&, const FrameSymbol&) = default;
};
struct FrameInfo {
  std::string module;
  std::string func_name;
  std::vector<FrameSymbol> symbols;
  friend bool operator==(const FrameInfo&, const FrameInfo&) = default;
};
struct WasmBacktrace {
  std::vector<FrameInfo> frames;
  // The engine that ran the guest and took these frames
  // ("v8 10.2.154.26-node.36"); absent in backtraces stored without one.
  std::optional<std::string> engine = std::nullopt;
  friend bool operator==(const WasmBacktrace&, const WasmBacktrace&) = default;
};
struct BacktraceInfo {
  ExecutionId execution_id;
  ComponentId component_id;
  Version version_min_including;
  Version version_max_excluding;
  WasmBacktrace wasm_backtrace;
  friend bool operator==(const BacktraceInfo&, const BacktraceInfo&) = default;
};

}  // namespace stele::core
