// The cron schedules of the PostgreSQL backend: table t_schedule (schema
// V4). Every operation is one statement (RETURNING the row), so each is
// atomic under READ COMMITTED whatever other nodes do concurrently.
#include <string>

#include "storage/postgres/codec.h"
#include "storage/postgres/connection.h"

namespace stele::storage::postgres::internal {
namespace {

constexpr std::string_view kPgScheduleColumns =
    "name, expression, time_zone, ffqn, params, overlap, catch_up, catch_up_limit, from_config, "
    "paused, created_at, updated_at, last_tick, last_execution_id";

Result<Schedule, DbErrorGeneric> PgReadSchedule(const PgResult& res, int row) {
  Schedule s;
  s.definition.name = res.Str(row, 0);
  s.definition.expression = res.Str(row, 1);
  s.definition.time_zone = res.Str(row, 2);
  s.definition.ffqn = res.Str(row, 3);
  s.definition.params = res.Str(row, 4);
  s.definition.overlap = res.Str(row, 5);
  s.definition.catch_up = res.Str(row, 6);
  s.definition.catch_up_limit = static_cast<uint32_t>(res.Int(row, 7));
  s.definition.from_config = res.Bool(row, 8);
  s.paused = res.Bool(row, 9);
  s.created_at = DateTimeFromMicros(res.Int(row, 10));
  s.updated_at = DateTimeFromMicros(res.Int(row, 11));
  s.last_tick = DateTimeFromMicros(res.Int(row, 12));
  if (auto id = res.OptStr(row, 13)) {
    STELE_ASSIGN_OR_RETURN(s.last_execution_id,
                           ParseColumn<core::ExecutionId>(*id, "t_schedule.last_execution_id"));
  }
  return s;
}

Params PgScheduleParams(const ScheduleDefinition& d, DateTime at) {
  return Params()
      .Text(d.name)
      .Text(d.expression)
      .Text(d.time_zone)
      .Text(d.ffqn)
      .Text(d.params)
      .Text(d.overlap)
      .Text(d.catch_up)
      .Int(d.catch_up_limit)
      .Bool(d.from_config)
      .Int(ToMicros(at));
}

const std::string kPgInsertSchedule =
    "INSERT INTO t_schedule (name, expression, time_zone, ffqn, params, overlap, catch_up, "
    "catch_up_limit, from_config, paused, created_at, updated_at, last_tick) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, false, $10, $10, $10) ";

}  // namespace

Result<Schedule, DbErrorWrite> PostgresConnection::CreateSchedule(
    const ScheduleDefinition& definition, DateTime at) {
  return store_->Write<Schedule, DbErrorWrite>([&](Tx& tx) -> Result<Schedule, DbErrorWrite> {
    STELE_ASSIGN_OR_RETURN(const PgResult* res,
                           tx.Q(kPgInsertSchedule + "ON CONFLICT (name) DO NOTHING RETURNING " +
                                    std::string(kPgScheduleColumns),
                                PgScheduleParams(definition, at)));
    if (res->rows() == 0) {
      return Unexpected(DbErrorWriteNonRetriable::IllegalState("schedule already exists"));
    }
    STELE_ASSIGN_OR_RETURN(Schedule s, PgReadSchedule(*res, 0));
    return s;
  });
}

Result<Schedule, DbErrorWrite> PostgresConnection::UpsertSchedule(
    const ScheduleDefinition& definition, DateTime at) {
  return store_->Write<Schedule, DbErrorWrite>([&](Tx& tx) -> Result<Schedule, DbErrorWrite> {
    STELE_ASSIGN_OR_RETURN(
        const PgResult* res,
        tx.Q(kPgInsertSchedule +
                 "ON CONFLICT (name) DO UPDATE SET expression = EXCLUDED.expression, "
                 "time_zone = EXCLUDED.time_zone, ffqn = EXCLUDED.ffqn, "
                 "params = EXCLUDED.params, overlap = EXCLUDED.overlap, "
                 "catch_up = EXCLUDED.catch_up, catch_up_limit = EXCLUDED.catch_up_limit, "
                 "from_config = EXCLUDED.from_config, updated_at = EXCLUDED.updated_at "
                 "RETURNING " +
                 std::string(kPgScheduleColumns),
             PgScheduleParams(definition, at)));
    if (res->rows() != 1)
      return Unexpected(DbErrorGeneric::Uncategorized("upsert returned no row"));
    STELE_ASSIGN_OR_RETURN(Schedule s, PgReadSchedule(*res, 0));
    return s;
  });
}

Result<Schedule, DbErrorRead> PostgresConnection::GetSchedule(const std::string& name) {
  return store_->Read<Schedule, DbErrorRead>([&](PgConn& db) -> Result<Schedule, DbErrorRead> {
    auto res =
        db.Exec("SELECT " + std::string(kPgScheduleColumns) + " FROM t_schedule WHERE name = $1",
                Params().Text(name));
    if (!res) return Unexpected(DbErrorRead(res.error().ToGeneric()));
    if (res->rows() == 0) return Unexpected(DbErrorRead::NotFound());
    STELE_ASSIGN_OR_RETURN(Schedule s, PgReadSchedule(*res, 0));
    return s;
  });
}

Result<std::vector<Schedule>, DbErrorGeneric> PostgresConnection::ListSchedules() {
  return store_->Read<std::vector<Schedule>, DbErrorGeneric>(
      [&](PgConn& db) -> Result<std::vector<Schedule>, DbErrorGeneric> {
        auto res =
            db.Exec("SELECT " + std::string(kPgScheduleColumns) + " FROM t_schedule ORDER BY name",
                    Params());
        if (!res) return Unexpected(res.error().ToGeneric());
        std::vector<Schedule> out;
        for (int row = 0; row < res->rows(); ++row) {
          STELE_ASSIGN_OR_RETURN(Schedule s, PgReadSchedule(*res, row));
          out.push_back(std::move(s));
        }
        return out;
      });
}

Result<Schedule, DbErrorWrite> PostgresConnection::SetSchedulePaused(const std::string& name,
                                                                     bool paused, DateTime at) {
  return store_->Write<Schedule, DbErrorWrite>([&](Tx& tx) -> Result<Schedule, DbErrorWrite> {
    // SET sees the old row: a paused schedule resumed moves last_tick.
    STELE_ASSIGN_OR_RETURN(
        const PgResult* res,
        tx.Q("UPDATE t_schedule SET last_tick = CASE WHEN paused AND NOT $2::boolean "
             "THEN GREATEST(last_tick, $3::bigint) ELSE last_tick END, paused = $2::boolean, "
             "updated_at = $3::bigint WHERE name = $1 RETURNING " +
                 std::string(kPgScheduleColumns),
             Params().Text(name).Bool(paused).Int(ToMicros(at))));
    if (res->rows() == 0) return Unexpected(DbErrorWrite::NotFound());
    STELE_ASSIGN_OR_RETURN(Schedule s, PgReadSchedule(*res, 0));
    return s;
  });
}

Result<void, DbErrorWrite> PostgresConnection::DeleteSchedule(const std::string& name) {
  return store_->Write<void, DbErrorWrite>([&](Tx& tx) -> Result<void, DbErrorWrite> {
    STELE_ASSIGN_OR_RETURN(
        const PgResult* res,
        tx.Q("DELETE FROM t_schedule WHERE name = $1 RETURNING name", Params().Text(name)));
    if (res->rows() == 0) return Unexpected(DbErrorWrite::NotFound());
    return {};
  });
}

Result<void, DbErrorWrite> PostgresConnection::RecordScheduleTick(
    const std::string& name, DateTime watermark,
    const std::optional<core::ExecutionId>& execution_id) {
  return store_->Write<void, DbErrorWrite>([&](Tx& tx) -> Result<void, DbErrorWrite> {
    STELE_ASSIGN_OR_RETURN(
        const PgResult* res,
        tx.Q("UPDATE t_schedule SET last_execution_id = CASE WHEN $3::text IS NOT NULL AND "
             "$2::bigint >= last_tick THEN $3::text ELSE last_execution_id END, "
             "last_tick = GREATEST(last_tick, $2::bigint) WHERE name = $1 RETURNING name",
             Params()
                 .Text(name)
                 .Int(ToMicros(watermark))
                 .OptText(execution_id ? std::optional<std::string>(execution_id->ToString())
                                       : std::nullopt)));
    if (res->rows() == 0) return Unexpected(DbErrorWrite::NotFound());
    return {};
  });
}

}  // namespace stele::storage::postgres::internal
