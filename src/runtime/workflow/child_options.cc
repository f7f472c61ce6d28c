#include "runtime/workflow/child_options.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "core/duration.h"

namespace stele::runtime::workflow {

namespace {

// An integer JSON value in [min, max], or nullopt.
std::optional<int64_t> IntegerIn(const core::Json& value, int64_t min, int64_t max) {
  int64_t v = 0;
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    v = static_cast<int64_t>(value.get<uint64_t>());
  } else if (value.is_number_integer()) {
    v = value.get<int64_t>();
  } else {
    return std::nullopt;
  }
  if (v < min || v > max) return std::nullopt;
  return v;
}

}  // namespace

Result<ChildOptions, std::string> ChildOptionsFromJson(const core::Json& options) {
  if (!options.is_object()) {
    return Unexpected(std::string("child options must be a JSON object, got ") +
                      options.dump().substr(0, 200));
  }
  constexpr int64_t kMaxU32 = std::numeric_limits<uint32_t>::max();
  // 100 years: past it `now + timeout` would near the int64 microseconds
  // of a deadline.
  constexpr int64_t kMaxMillis = 100LL * 366 * 24 * 3600 * 1000;
  ChildOptions out;
  for (const auto& item : options.items()) {
    // Named, not structured, bindings: clang 14 does not let a lambda
    // capture a structured binding.
    const std::string& key = item.key();
    const core::Json& value = item.value();
    auto bad = [&](const char* expected) {
      return Unexpected("child option `" + key + "` must be " + expected + ", got " +
                        value.dump().substr(0, 100));
    };
    if (value.is_null()) continue;  // absent
    if (key == "timeout_ms") {
      // Any integer: a non-positive one is ChildPolicy's constraint violation.
      auto v = IntegerIn(value, -kMaxMillis, kMaxMillis);
      if (!v) return bad("an integer number of milliseconds (at most 100 years)");
      out.timeout = std::chrono::milliseconds(*v);
    } else if (key == "max_retries") {
      auto v = IntegerIn(value, 0, kMaxU32);
      if (!v) return bad("an integer 0 to 4294967295");
      out.retry.max_retries = static_cast<uint32_t>(*v);
    } else if (key == "backoff_ms" || key == "max_backoff_ms") {
      auto v = IntegerIn(value, 0, kMaxMillis);
      if (!v) return bad("a whole number of milliseconds >= 0 (at most 100 years)");
      auto d = core::Duration::FromMillis(static_cast<uint64_t>(*v));
      (key == "backoff_ms" ? out.retry.retry_exp_backoff : out.retry.max_backoff) = d;
    } else if (key == "jitter_percent") {
      // Over 100 is ChildPolicy's constraint violation.
      auto v = IntegerIn(value, 0, kMaxU32);
      if (!v) return bad("an integer percentage");
      out.retry.jitter_percent = static_cast<uint32_t>(*v);
    } else {
      return Unexpected("unknown child option `" + key +
                        "` (timeout_ms, max_retries, backoff_ms, max_backoff_ms, jitter_percent)");
    }
  }
  return out;
}

}  // namespace stele::runtime::workflow
