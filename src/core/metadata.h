// Small records attached to executions and events.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/time.h"

namespace stele::core {

// Free-form string map; keys `tracing:<w3c key>` carry trace context.
struct ExecutionMetadata {
  std::map<std::string, std::string> entries;
  friend bool operator==(const ExecutionMetadata&, const ExecutionMetadata&) = default;
};

struct HttpRequestTrace {
  DateTime sent_at;
  std::string uri;
  std::string method;
  friend bool operator==(const HttpRequestTrace&, const HttpRequestTrace&) = default;
};
struct HttpResponseTrace {
  DateTime finished_at;
  // HTTP status, or the transport error.
  std::variant<uint16_t, std::string> status;
  friend bool operator==(const HttpResponseTrace&, const HttpResponseTrace&) = default;
};
struct HttpClientTrace {
  HttpRequestTrace req;
  std::optional<HttpResponseTrace> resp;
  friend bool operator==(const HttpClientTrace&, const HttpClientTrace&) = default;
};
using HttpClientTraces = std::optional<std::vector<HttpClientTrace>>;

}  // namespace stele::core
