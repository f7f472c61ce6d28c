// stele/json.h — the JSON value type of params and results, and typed
// helpers that convert common C++ types to and from it.
//
// Params of every execution are a JSON array (one element per argument);
// results are any JSON value. `Json` is nlohmann::ordered_json, so object
// field order survives the round trip through the event log.
//
// The helpers never throw: a value of the wrong shape is an error string
// ("param 0: expected number, got string").
//
// Threading: plain values and pure functions.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "stele/result.h"

namespace stele {

using Json = nlohmann::ordered_json;

// Converts `value` to JSON (anything nlohmann::json can convert: numbers,
// bool, std::string, std::vector, std::map, Json, user types with to_json).
template <class T>
Json ToJson(const T& value) {
  return Json(value);
}

// Converts `json` to T, or says why it cannot.
template <class T>
Result<T, std::string> FromJson(const Json& json) {
  try {
    return json.get<T>();
  } catch (const std::exception& e) {
    return Unexpected(std::string(e.what()));
  }
}

// The `index`-th element of a params array converted to T.
template <class T>
Result<T, std::string> Param(const Json& params, size_t index) {
  if (!params.is_array() || index >= params.size()) {
    return Unexpected("param " + std::to_string(index) + ": missing (params has " +
                      std::to_string(params.is_array() ? params.size() : 0) + " elements)");
  }
  auto value = FromJson<T>(params[index]);
  if (!value) return Unexpected("param " + std::to_string(index) + ": " + value.error());
  return std::move(*value);
}

// Builds a params array from arguments: Params(1, "a", true) == [1,"a",true].
template <class... Args>
Json Params(const Args&... args) {
  Json array = Json::array();
  (array.push_back(Json(args)), ...);
  return array;
}

}  // namespace stele
