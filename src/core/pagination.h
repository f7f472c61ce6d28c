// Cursor pagination in both directions (Obelisk's `Pagination<T>`).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

#include "base/time.h"
#include "core/ids.h"

namespace stele::core {

template <class T>
struct Pagination {
  enum class Direction { kNewerThan, kOlderThan };
  Direction direction = Direction::kOlderThan;
  uint16_t length = 20;
  T cursor{};
  bool including_cursor = false;

  static Pagination NewerThan(uint16_t length, T cursor, bool including_cursor) {
    return {Direction::kNewerThan, length, std::move(cursor), including_cursor};
  }
  static Pagination OlderThan(uint16_t length, T cursor, bool including_cursor) {
    return {Direction::kOlderThan, length, std::move(cursor), including_cursor};
  }
  // SQL comparison operator for the cursor column: ">", ">=", "<", "<=".
  std::string_view Rel() const {
    if (direction == Direction::kNewerThan) return including_cursor ? ">=" : ">";
    return including_cursor ? "<=" : "<";
  }
  bool IsDesc() const { return direction == Direction::kOlderThan; }
};

// Executions are listed by creation time or by id; default: 20 newest.
using ExecutionListPagination =
    std::variant<Pagination<std::optional<DateTime>>, Pagination<std::optional<ExecutionId>>>;

}  // namespace stele::core
