#include "storage/sqlite/queries.h"

#include <string>
#include <utility>

#include "storage/sqlite/event_codec.h"

namespace stele::storage::sqlite::internal {

namespace {

Result<core::ExecutionEvent, DbErrorGeneric> DecodeEventRow(const Statement& stmt,
                                                            std::string_view execution_id) {
  // Columns: version, created_at, json_value.
  const int64_t version = stmt.Int64(0);
  if (version < 0 || version > int64_t{UINT32_MAX}) {
    return Unexpected(DbErrorGeneric::Uncategorized("corrupt t_execution_log row of `" +
                                                    std::string(execution_id) +
                                                    "`: version out of range"));
  }
  STELE_ASSIGN_OR_RETURN(std::string json, EventJsonColumn(stmt, 2, execution_id, version));
  STELE_ASSIGN_OR_RETURN(auto event, DecodeEvent(json, execution_id, version));
  return core::ExecutionEvent{TimeFromColumn(stmt.Int64(1)), std::move(event), std::nullopt,
                              Version(static_cast<Version::Type>(version))};
}

}  // namespace

Result<std::optional<ExecutionState>, DbErrorGeneric> LoadState(Connection& db,
                                                                std::string_view execution_id) {
  static const std::string kSql =
      "SELECT " + std::string(kStateColumns) + " FROM t_state WHERE execution_id = ?";
  STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(kSql));
  stmt.BindText(1, execution_id);
  STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<ExecutionState>();
  STELE_ASSIGN_OR_RETURN(ExecutionState state, DecodeStateRow(stmt));
  return std::optional<ExecutionState>(std::move(state));
}

Result<std::vector<core::ExecutionEvent>, DbErrorGeneric> LoadEvents(
    Connection& db, std::string_view execution_id) {
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT version, created_at, json_value FROM t_execution_log "
                 "WHERE exec_key = (SELECT exec_key FROM t_state WHERE execution_id = ?) "
                 "ORDER BY version"));
  stmt.BindText(1, execution_id);
  std::vector<core::ExecutionEvent> events;
  while (true) {
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return events;
    STELE_ASSIGN_OR_RETURN(auto event, DecodeEventRow(stmt, execution_id));
    events.push_back(std::move(event));
  }
}

Result<std::optional<core::ExecutionEvent>, DbErrorGeneric> LoadEvent(Connection& db,
                                                                      std::string_view execution_id,
                                                                      Version version) {
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT version, created_at, json_value FROM t_execution_log "
                 "WHERE exec_key = (SELECT exec_key FROM t_state WHERE execution_id = ?) "
                 "AND version = ?"));
  stmt.BindText(1, execution_id);
  stmt.BindInt64(2, version.value());
  STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<core::ExecutionEvent>();
  STELE_ASSIGN_OR_RETURN(auto event, DecodeEventRow(stmt, execution_id));
  return std::optional<core::ExecutionEvent>(std::move(event));
}

Result<std::vector<ResponseWithCursor>, DbErrorGeneric> LoadResponses(Connection& db,
                                                                      std::string_view execution_id,
                                                                      uint32_t from_cursor) {
  static const std::string kSql =
      std::string(kResponseSelect) +
      "WHERE r.exec_key = (SELECT exec_key FROM t_state WHERE execution_id = ?) AND r.idx >= ? "
      "ORDER BY r.idx";
  STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(kSql));
  stmt.BindText(1, execution_id);
  stmt.BindInt64(2, from_cursor);
  std::vector<ResponseWithCursor> responses;
  while (true) {
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return responses;
    STELE_ASSIGN_OR_RETURN(auto response, DecodeResponseRow(stmt, execution_id));
    responses.push_back(std::move(response));
  }
}

Result<std::optional<ExecutionLog>, DbErrorGeneric> LoadLog(Connection& db,
                                                            const ExecutionId& execution_id) {
  const std::string id = execution_id.ToString();
  STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, id));
  if (!state) return std::optional<ExecutionLog>();
  STELE_ASSIGN_OR_RETURN(auto events, LoadEvents(db, id));
  STELE_ASSIGN_OR_RETURN(auto responses, LoadResponses(db, id, 0));
  ExecutionLog log{
      execution_id, std::move(events), {}, state->NextVersion(), std::move(state->pending_state)};
  log.responses.reserve(responses.size());
  for (auto& response : responses) log.responses.push_back(std::move(response.event));
  return std::optional<ExecutionLog>(std::move(log));
}

}  // namespace stele::storage::sqlite::internal
