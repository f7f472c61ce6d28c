// The cron schedule use cases of ExecutionService (docs/api.md,
// "Schedules"): validation of a face's definition, the storage calls, and
// the ticker's wake-ups.
#include <set>

#include "core/json_codec.h"
#include "service/cron/cron_expression.h"
#include "service/cron/tick_plan.h"
#include "service/cron_ticker.h"
#include "service/execution_service.h"

namespace stele::service {
namespace {

constexpr size_t kMaxScheduleNameBytes = 128;

Result<void, ServiceError> CheckScheduleName(std::string_view name) {
  if (name.empty()) return Unexpected(ServiceError::InvalidArgument("schedule name is empty"));
  if (name.size() > kMaxScheduleNameBytes) {
    return Unexpected(ServiceError::InvalidArgument(
        "schedule name is longer than " + std::to_string(kMaxScheduleNameBytes) + " bytes"));
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) {
      // The name is not echoed whole: it may hold anything.
      return Unexpected(ServiceError::InvalidArgument(
          "invalid schedule name: only letters, digits, '_' and '-' are allowed"));
    }
  }
  return {};
}

ServiceError NotFoundSchedule(std::string_view name) {
  return ServiceError::NotFound("no schedule `" + std::string(name) + "`");
}

}  // namespace

Result<storage::ScheduleDefinition, ServiceError> ExecutionService::ValidateSchedule(
    const ScheduleSpec& spec, bool from_config) const {
  STELE_TRY(CheckScheduleName(spec.name));
  auto expr = cron::CronExpression::Parse(spec.expression, spec.time_zone);
  if (!expr) return Unexpected(ServiceError::InvalidArgument(expr.error()));
  STELE_TRY(CheckCall(spec.ffqn, spec.params));
  if (!cron::ParseOverlapPolicy(spec.overlap)) {
    return Unexpected(
        ServiceError::InvalidArgument("overlap must be \"skip\", \"allow\" or \"buffer_one\""));
  }
  if (!cron::ParseCatchUpPolicy(spec.catch_up)) {
    return Unexpected(
        ServiceError::InvalidArgument("catch_up must be \"skip\", \"last\" or \"all\""));
  }
  if (spec.catch_up_limit < 1 || spec.catch_up_limit > cron::kMaxCatchUpLimit) {
    return Unexpected(ServiceError::InvalidArgument("catch_up_limit must be in 1.." +
                                                    std::to_string(cron::kMaxCatchUpLimit)));
  }
  storage::ScheduleDefinition def;
  def.name = spec.name;
  def.expression = spec.expression;
  def.time_zone = spec.time_zone;
  def.ffqn = spec.ffqn;
  def.params = core::SerializeJson(spec.params);
  def.overlap = spec.overlap;
  def.catch_up = spec.catch_up;
  def.catch_up_limit = spec.catch_up_limit;
  def.from_config = from_config;
  return def;
}

ScheduleInfo ExecutionService::ToInfo(storage::Schedule schedule) const {
  ScheduleInfo info{std::move(schedule), std::nullopt};
  if (!info.schedule.paused) {
    auto expr = cron::CronExpression::Parse(info.schedule.definition.expression,
                                            info.schedule.definition.time_zone);
    if (expr) info.next_tick = expr->NextAfter(info.schedule.last_tick);
  }
  return info;
}

Result<ScheduleInfo, ServiceError> ExecutionService::CreateSchedule(const ScheduleSpec& spec) {
  STELE_ASSIGN_OR_RETURN(storage::ScheduleDefinition def, ValidateSchedule(spec, false));
  auto created = api_->CreateSchedule(def, options_.clock->Now());
  if (!created) {
    if (created.error().IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kIllegalState)) {
      return Unexpected(ServiceError::Conflict("schedule `" + spec.name + "` exists already"));
    }
    return Unexpected(FromWrite(created.error(), "create schedule"));
  }
  if (cron_) cron_->Wake();
  return ToInfo(std::move(*created));
}

Result<void, ServiceError> ExecutionService::DeclareSchedules(
    const std::vector<ScheduleSpec>& specs) {
  std::vector<storage::ScheduleDefinition> defs;
  std::set<std::string> names;
  for (const ScheduleSpec& spec : specs) {
    auto def = ValidateSchedule(spec, true);
    if (!def) {
      return Unexpected(
          ServiceError{def.error().kind, "schedule `" + spec.name + "`: " + def.error().message});
    }
    if (!names.insert(spec.name).second) {
      return Unexpected(
          ServiceError::InvalidArgument("schedule `" + spec.name + "` is declared twice"));
    }
    defs.push_back(std::move(*def));
  }
  const DateTime now = options_.clock->Now();
  auto stored = api_->ListSchedules();
  if (!stored) return Unexpected(FromGeneric(stored.error(), "list schedules"));
  for (const storage::Schedule& s : *stored) {
    if (!s.definition.from_config || names.contains(s.definition.name)) continue;
    auto deleted = api_->DeleteSchedule(s.definition.name);
    if (!deleted && !deleted.error().IsNotFound()) {
      return Unexpected(FromWrite(deleted.error(), "delete schedule " + s.definition.name));
    }
  }
  for (const storage::ScheduleDefinition& def : defs) {
    auto upserted = api_->UpsertSchedule(def, now);
    if (!upserted) return Unexpected(FromWrite(upserted.error(), "declare schedule " + def.name));
  }
  if (cron_) cron_->Wake();
  return {};
}

Result<std::vector<ScheduleInfo>, ServiceError> ExecutionService::ListSchedules() {
  auto stored = api_->ListSchedules();
  if (!stored) return Unexpected(FromGeneric(stored.error(), "list schedules"));
  std::vector<ScheduleInfo> out;
  out.reserve(stored->size());
  for (storage::Schedule& s : *stored) out.push_back(ToInfo(std::move(s)));
  return out;
}

Result<ScheduleInfo, ServiceError> ExecutionService::GetSchedule(std::string_view name) {
  STELE_TRY(CheckScheduleName(name));
  auto stored = api_->GetSchedule(std::string(name));
  if (!stored) {
    if (stored.error().IsNotFound()) return Unexpected(NotFoundSchedule(name));
    return Unexpected(FromRead(stored.error(), "get schedule"));
  }
  return ToInfo(std::move(*stored));
}

Result<ScheduleInfo, ServiceError> ExecutionService::PauseSchedule(std::string_view name) {
  STELE_TRY(CheckScheduleName(name));
  auto stored = api_->SetSchedulePaused(std::string(name), true, options_.clock->Now());
  if (!stored) {
    if (stored.error().IsNotFound()) return Unexpected(NotFoundSchedule(name));
    return Unexpected(FromWrite(stored.error(), "pause schedule"));
  }
  return ToInfo(std::move(*stored));
}

Result<ScheduleInfo, ServiceError> ExecutionService::ResumeSchedule(std::string_view name) {
  STELE_TRY(CheckScheduleName(name));
  auto stored = api_->SetSchedulePaused(std::string(name), false, options_.clock->Now());
  if (!stored) {
    if (stored.error().IsNotFound()) return Unexpected(NotFoundSchedule(name));
    return Unexpected(FromWrite(stored.error(), "resume schedule"));
  }
  if (cron_) cron_->Wake();
  return ToInfo(std::move(*stored));
}

Result<void, ServiceError> ExecutionService::DeleteSchedule(std::string_view name) {
  STELE_TRY(CheckScheduleName(name));
  auto deleted = api_->DeleteSchedule(std::string(name));
  if (!deleted) {
    if (deleted.error().IsNotFound()) return Unexpected(NotFoundSchedule(name));
    return Unexpected(FromWrite(deleted.error(), "delete schedule"));
  }
  return {};
}

Result<Submitted, ServiceError> ExecutionService::TriggerSchedule(std::string_view name) {
  STELE_ASSIGN_OR_RETURN(ScheduleInfo info, GetSchedule(name));
  auto params = core::ParseJson(info.schedule.definition.params);
  if (!params) {
    return Unexpected(ServiceError::InvalidArgument("schedule `" + std::string(name) +
                                                    "` has stored params that are not JSON"));
  }
  return Submit(SubmitRequest{info.schedule.definition.ffqn, *params, std::nullopt, std::nullopt});
}

Result<void, ServiceError> ExecutionService::RunCronPassForTest(DateTime at) {
  STELE_TRY(cron_->Pass(at));
  return {};
}

CronCounts ExecutionService::cron_counts() const { return cron_->counts(); }

}  // namespace stele::service
