// Version: position of an event in an execution log. `Created` is version 0;
// every appended event takes the next integer. A writer names the version it
// writes, which makes the version the fencing token of the whole engine.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace stele::core {

class Version {
 public:
  using Type = uint32_t;
  constexpr Version() = default;
  constexpr explicit Version(Type value) : value_(value) {}
  constexpr Type value() const { return value_; }
  constexpr Version Increment() const { return Version(value_ + 1); }
  std::string ToString() const { return std::to_string(value_); }
  friend constexpr bool operator==(Version, Version) = default;
  friend constexpr auto operator<=>(Version, Version) = default;

 private:
  Type value_ = 0;
};

}  // namespace stele::core
