// Cron schedules as the storage contract keeps them
// (docs/storage_contract.md, "Schedules"). Storage interprets none of the
// definition's text — the service (service/cron) parses and validates it
// before writing — only the instants and the name, the key.
//
// Threading: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/clock.h"
#include "core/ids.h"

namespace stele::storage {

// What a user declares: in stele.toml ([[cron]]) or through the API.
struct ScheduleDefinition {
  std::string name;        // the key: unique
  std::string expression;  // cron text, six fields (service/cron/cron_expression.h)
  std::string time_zone;   // IANA name
  std::string ffqn;        // the function each tick submits
  std::string params;      // its params: a JSON array, as text
  std::string overlap;     // "skip" | "allow" | "buffer_one"
  std::string catch_up;    // "skip" | "last" | "all"
  uint32_t catch_up_limit = 0;
  bool from_config = false;  // declared in stele.toml (upserted at start)
  friend bool operator==(const ScheduleDefinition&, const ScheduleDefinition&) = default;
};

struct Schedule {
  ScheduleDefinition definition;
  bool paused = false;
  DateTime created_at;
  DateTime updated_at;  // the last change of definition or paused
  // Watermark: every tick at or before it was fired or skipped. Starts at
  // created_at (a schedule never fires ticks from before it existed);
  // resuming a paused schedule moves it to the resume instant.
  DateTime last_tick;
  // The execution of the last tick fired (overlap policies look at it).
  std::optional<core::ExecutionId> last_execution_id;
  friend bool operator==(const Schedule&, const Schedule&) = default;
};

}  // namespace stele::storage
