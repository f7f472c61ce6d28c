// The JSON value type used for params, results and persisted events.
// Ordered on purpose: record field order must survive round trips.
#pragma once

#include <nlohmann/json.hpp>

namespace stele::core {
using Json = nlohmann::ordered_json;
// Params of an execution: always a JSON array.
using Params = Json;
}  // namespace stele::core
