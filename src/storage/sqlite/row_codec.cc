#include "storage/sqlite/row_codec.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "core/backtrace.h"
#include "core/json_codec.h"
#include "core/return_value.h"
#include "storage/sqlite/event_codec.h"

namespace stele::storage::sqlite::internal {

Result<core::InputContentDigest, DbErrorGeneric> DecodeDigest(const std::vector<uint8_t>& blob,
                                                              std::string_view execution_id) {
  core::InputContentDigest::Bytes bytes{};
  if (blob.size() != bytes.size()) {
    return Unexpected(CorruptRow("t_state", execution_id,
                                 "component digest of " + std::to_string(blob.size()) + " bytes"));
  }
  std::copy(blob.begin(), blob.end(), bytes.begin());
  return core::InputContentDigest(bytes);
}

Result<ExecutionState, DbErrorGeneric> DecodeStateRow(const Statement& stmt) {
  StateColumns c;
  c.execution_id = stmt.Text(0);
  STELE_ASSIGN_OR_RETURN(c.digest, DecodeDigest(stmt.Blob(3), c.execution_id));
  c.state = stmt.Text(1);
  c.pending_expires_finished = stmt.Int64(2);
  c.corresponding_version = stmt.Int64(4);
  c.last_lock_version = stmt.OptionalInt64(5);
  c.executor_id = stmt.OptionalText(6);
  c.run_id = stmt.OptionalText(7);
  c.join_set_id = stmt.OptionalText(8);
  if (auto closing = stmt.OptionalInt64(9)) c.join_set_closing = *closing != 0;
  c.result_kind = stmt.OptionalText(10);
  c.intermittent_event_count = stmt.Int64(11);
  c.ffqn = stmt.Text(12);
  c.max_retries = stmt.OptionalInt64(13);
  c.retry_exp_backoff = stmt.OptionalText(14);
  c.created_at = stmt.Int64(15);
  c.first_scheduled_at = stmt.Int64(16);
  c.paused = stmt.Int64(17) != 0;
  c.cancelling = stmt.Int64(18) != 0;
  c.updated_at = stmt.Int64(19);
  return DecodeState(c);
}

Result<ResponseWithCursor, DbErrorGeneric> DecodeResponseRow(const Statement& stmt,
                                                             std::string_view execution_id) {
  ResponseColumns c;
  c.idx = stmt.Int64(0);
  c.created_at = stmt.Int64(1);
  c.join_set_id = stmt.Text(2);
  c.delay_id = stmt.OptionalText(3);
  if (auto ok = stmt.OptionalInt64(4)) c.delay_success = *ok != 0;
  c.child_execution_id = stmt.OptionalText(5);
  c.finished_version = stmt.OptionalInt64(6);
  c.child_result = stmt.OptionalText(7);
  if (!stmt.IsNull(8)) {
    STELE_ASSIGN_OR_RETURN(c.finished_event,
                           EventJsonColumn(stmt, 8, c.child_execution_id.value_or(""),
                                           c.finished_version.value_or(0)));
  }
  c.message_id = stmt.OptionalText(9);
  c.message_body = stmt.OptionalText(10);
  return DecodeResponse(c, execution_id);
}

}  // namespace stele::storage::sqlite::internal
