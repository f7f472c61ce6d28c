// The cron schedules of the SQLite backend: table t_schedule (schema V3).
// Writes run on the writer thread, each one statement with RETURNING;
// reads on a read connection.
#include <string>

#include "storage/sqlite/connection.h"
#include "storage/sqlite/row_codec.h"

namespace stele::storage::sqlite::internal {
namespace {

constexpr std::string_view kScheduleColumns =
    "name, expression, time_zone, ffqn, params, overlap, catch_up, catch_up_limit, from_config, "
    "paused, created_at, updated_at, last_tick, last_execution_id";

Result<Schedule, DbErrorGeneric> ReadSchedule(const Statement& row) {
  Schedule s;
  s.definition.name = row.Text(0);
  s.definition.expression = row.Text(1);
  s.definition.time_zone = row.Text(2);
  s.definition.ffqn = row.Text(3);
  s.definition.params = row.Text(4);
  s.definition.overlap = row.Text(5);
  s.definition.catch_up = row.Text(6);
  s.definition.catch_up_limit = static_cast<uint32_t>(row.Int64(7));
  s.definition.from_config = row.Int64(8) != 0;
  s.paused = row.Int64(9) != 0;
  s.created_at = DateTimeFromMicros(row.Int64(10));
  s.updated_at = DateTimeFromMicros(row.Int64(11));
  s.last_tick = DateTimeFromMicros(row.Int64(12));
  if (auto id = row.OptionalText(13)) {
    STELE_ASSIGN_OR_RETURN(s.last_execution_id,
                           ParseColumn<core::ExecutionId>(*id, "t_schedule.last_execution_id"));
  }
  return s;
}

// Binds `d` to ?1..?9 and `at` to ?10.
void BindScheduleDefinition(Statement& stmt, const ScheduleDefinition& d, DateTime at) {
  stmt.BindText(1, d.name);
  stmt.BindText(2, d.expression);
  stmt.BindText(3, d.time_zone);
  stmt.BindText(4, d.ffqn);
  stmt.BindText(5, d.params);
  stmt.BindText(6, d.overlap);
  stmt.BindText(7, d.catch_up);
  stmt.BindInt64(8, d.catch_up_limit);
  stmt.BindInt64(9, d.from_config ? 1 : 0);
  stmt.BindInt64(10, ToMicros(at));
}

constexpr std::string_view kInsertSchedule =
    "INSERT INTO t_schedule (name, expression, time_zone, ffqn, params, overlap, catch_up, "
    "catch_up_limit, from_config, paused, created_at, updated_at, last_tick) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0, ?10, ?10, ?10) ";

}  // namespace

Result<Schedule, DbErrorWrite> SqliteConnection::CreateSchedule(
    const ScheduleDefinition& definition, DateTime at) {
  return store_->Write<Schedule, DbErrorWrite>(
      [&](WriteContext& tx) -> Result<Schedule, DbErrorWrite> {
        STELE_ASSIGN_OR_RETURN(Statement stmt,
                               tx.connection.Prepare(std::string(kInsertSchedule) +
                                                     "ON CONFLICT (name) DO NOTHING RETURNING " +
                                                     std::string(kScheduleColumns)));
        BindScheduleDefinition(stmt, definition, at);
        STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
        if (!row) {
          return Unexpected(DbErrorWriteNonRetriable::IllegalState("schedule already exists"));
        }
        STELE_ASSIGN_OR_RETURN(Schedule s, ReadSchedule(stmt));
        STELE_TRY(stmt.Run());
        return s;
      });
}

Result<Schedule, DbErrorWrite> SqliteConnection::UpsertSchedule(
    const ScheduleDefinition& definition, DateTime at) {
  return store_->Write<Schedule, DbErrorWrite>(
      [&](WriteContext& tx) -> Result<Schedule, DbErrorWrite> {
        STELE_ASSIGN_OR_RETURN(
            Statement stmt,
            tx.connection.Prepare(
                std::string(kInsertSchedule) +
                "ON CONFLICT (name) DO UPDATE SET expression = excluded.expression, "
                "time_zone = excluded.time_zone, ffqn = excluded.ffqn, params = excluded.params, "
                "overlap = excluded.overlap, catch_up = excluded.catch_up, "
                "catch_up_limit = excluded.catch_up_limit, from_config = excluded.from_config, "
                "updated_at = excluded.updated_at RETURNING " +
                std::string(kScheduleColumns)));
        BindScheduleDefinition(stmt, definition, at);
        STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
        if (!row) return Unexpected(DbErrorGeneric::Uncategorized("upsert returned no row"));
        STELE_ASSIGN_OR_RETURN(Schedule s, ReadSchedule(stmt));
        STELE_TRY(stmt.Run());
        return s;
      });
}

Result<Schedule, DbErrorRead> SqliteConnection::GetSchedule(const std::string& name) {
  return store_->Read([&](Connection& db) -> Result<Schedule, DbErrorRead> {
    STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare("SELECT " + std::string(kScheduleColumns) +
                                                      " FROM t_schedule WHERE name = ?1"));
    stmt.BindText(1, name);
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return Unexpected(DbErrorRead::NotFound());
    STELE_ASSIGN_OR_RETURN(Schedule s, ReadSchedule(stmt));
    return s;
  });
}

Result<std::vector<Schedule>, DbErrorGeneric> SqliteConnection::ListSchedules() {
  return store_->Read([&](Connection& db) -> Result<std::vector<Schedule>, DbErrorGeneric> {
    STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare("SELECT " + std::string(kScheduleColumns) +
                                                      " FROM t_schedule ORDER BY name"));
    std::vector<Schedule> out;
    while (true) {
      STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      STELE_ASSIGN_OR_RETURN(Schedule s, ReadSchedule(stmt));
      out.push_back(std::move(s));
    }
    return out;
  });
}

Result<Schedule, DbErrorWrite> SqliteConnection::SetSchedulePaused(const std::string& name,
                                                                   bool paused, DateTime at) {
  return store_->Write<Schedule, DbErrorWrite>(
      [&](WriteContext& tx) -> Result<Schedule, DbErrorWrite> {
        // SET sees the old row: a paused schedule resumed moves last_tick.
        STELE_ASSIGN_OR_RETURN(
            Statement stmt,
            tx.connection.Prepare(
                "UPDATE t_schedule SET last_tick = CASE WHEN paused = 1 AND ?2 = 0 "
                "THEN max(last_tick, ?3) ELSE last_tick END, paused = ?2, updated_at = ?3 "
                "WHERE name = ?1 RETURNING " +
                std::string(kScheduleColumns)));
        stmt.BindText(1, name);
        stmt.BindInt64(2, paused ? 1 : 0);
        stmt.BindInt64(3, ToMicros(at));
        STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
        if (!row) return Unexpected(DbErrorWrite::NotFound());
        STELE_ASSIGN_OR_RETURN(Schedule s, ReadSchedule(stmt));
        STELE_TRY(stmt.Run());
        return s;
      });
}

Result<void, DbErrorWrite> SqliteConnection::DeleteSchedule(const std::string& name) {
  return store_->Write<void, DbErrorWrite>([&](WriteContext& tx) -> Result<void, DbErrorWrite> {
    STELE_ASSIGN_OR_RETURN(
        Statement stmt,
        tx.connection.Prepare("DELETE FROM t_schedule WHERE name = ?1 RETURNING name"));
    stmt.BindText(1, name);
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return Unexpected(DbErrorWrite::NotFound());
    STELE_TRY(stmt.Run());
    return {};
  });
}

Result<void, DbErrorWrite> SqliteConnection::RecordScheduleTick(
    const std::string& name, DateTime watermark,
    const std::optional<core::ExecutionId>& execution_id) {
  return store_->Write<void, DbErrorWrite>([&](WriteContext& tx) -> Result<void, DbErrorWrite> {
    STELE_ASSIGN_OR_RETURN(
        Statement stmt,
        tx.connection.Prepare(
            "UPDATE t_schedule SET last_execution_id = CASE WHEN ?3 IS NOT NULL AND "
            "?2 >= last_tick THEN ?3 ELSE last_execution_id END, "
            "last_tick = max(last_tick, ?2) WHERE name = ?1 RETURNING name"));
    stmt.BindText(1, name);
    stmt.BindInt64(2, ToMicros(watermark));
    if (execution_id) {
      stmt.BindText(3, execution_id->ToString());
    } else {
      stmt.BindNull(3);
    }
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return Unexpected(DbErrorWrite::NotFound());
    STELE_TRY(stmt.Run());
    return {};
  });
}

}  // namespace stele::storage::sqlite::internal
