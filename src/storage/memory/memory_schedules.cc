// The cron schedules of the memory model: the oracle the SQL backends'
// schedule tables are held to (conformance suite, ScheduleTest).
#include <algorithm>

#include "storage/memory/memory_connection.h"

namespace stele::storage::memory::internal {

Result<Schedule, DbErrorWrite> MemoryConnection::CreateSchedule(
    const ScheduleDefinition& definition, DateTime at) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  if (state_->schedules.count(definition.name) != 0) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("schedule already exists"));
  }
  Schedule schedule{definition, false, at, at, at, std::nullopt};
  state_->schedules.emplace(definition.name, schedule);
  return schedule;
}

Result<Schedule, DbErrorWrite> MemoryConnection::UpsertSchedule(
    const ScheduleDefinition& definition, DateTime at) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  auto it = state_->schedules.find(definition.name);
  if (it == state_->schedules.end()) {
    Schedule schedule{definition, false, at, at, at, std::nullopt};
    state_->schedules.emplace(definition.name, schedule);
    return schedule;
  }
  it->second.definition = definition;
  it->second.updated_at = at;
  return it->second;
}

Result<Schedule, DbErrorRead> MemoryConnection::GetSchedule(const std::string& name) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  auto it = state_->schedules.find(name);
  if (it == state_->schedules.end()) return Unexpected(DbErrorRead::NotFound());
  return it->second;
}

Result<std::vector<Schedule>, DbErrorGeneric> MemoryConnection::ListSchedules() {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  std::vector<Schedule> out;
  out.reserve(state_->schedules.size());
  for (const auto& [name, schedule] : state_->schedules) out.push_back(schedule);
  return out;
}

Result<Schedule, DbErrorWrite> MemoryConnection::SetSchedulePaused(const std::string& name,
                                                                   bool paused, DateTime at) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  auto it = state_->schedules.find(name);
  if (it == state_->schedules.end()) return Unexpected(DbErrorWrite::NotFound());
  Schedule& s = it->second;
  if (s.paused && !paused) s.last_tick = std::max(s.last_tick, at);
  s.paused = paused;
  s.updated_at = at;
  return s;
}

Result<void, DbErrorWrite> MemoryConnection::DeleteSchedule(const std::string& name) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  if (state_->schedules.erase(name) == 0) return Unexpected(DbErrorWrite::NotFound());
  return {};
}

Result<void, DbErrorWrite> MemoryConnection::RecordScheduleTick(
    const std::string& name, DateTime watermark,
    const std::optional<core::ExecutionId>& execution_id) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  auto it = state_->schedules.find(name);
  if (it == state_->schedules.end()) return Unexpected(DbErrorWrite::NotFound());
  Schedule& s = it->second;
  if (execution_id && watermark >= s.last_tick) s.last_execution_id = execution_id;
  s.last_tick = std::max(s.last_tick, watermark);
  return {};
}

}  // namespace stele::storage::memory::internal
