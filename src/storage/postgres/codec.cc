#include "storage/postgres/codec.h"

#include <utility>
#include <variant>

#include "core/backtrace.h"
#include "core/json_codec.h"
#include "core/return_value.h"

namespace stele::storage::postgres::internal {

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string DigestParam(const core::InputContentDigest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\\x";
  for (uint8_t byte : digest.bytes()) {
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 0xf]);
  }
  return out;
}

Result<core::InputContentDigest, DbErrorGeneric> DecodeDigest(std::string_view text,
                                                              std::string_view execution_id) {
  core::InputContentDigest::Bytes bytes{};
  if (text.size() != 2 + 2 * bytes.size() || text.substr(0, 2) != "\\x") {
    return Unexpected(CorruptRow("t_state", execution_id, "malformed component digest"));
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int hi = HexValue(text[2 + 2 * i]);
    const int lo = HexValue(text[3 + 2 * i]);
    if (hi < 0 || lo < 0) {
      return Unexpected(CorruptRow("t_state", execution_id, "malformed component digest"));
    }
    bytes[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return core::InputContentDigest(bytes);
}

Result<ExecutionState, DbErrorGeneric> DecodeStateRow(const PgResult& res, int row, int c) {
  StateColumns s;
  s.execution_id = res.Str(row, c + 0);
  STELE_ASSIGN_OR_RETURN(s.digest, DecodeDigest(res.Text(row, c + 3), s.execution_id));
  s.state = res.Str(row, c + 1);
  s.pending_expires_finished = res.Int(row, c + 2);
  s.corresponding_version = res.Int(row, c + 4);
  s.last_lock_version = res.OptInt(row, c + 5);
  s.executor_id = res.OptStr(row, c + 6);
  s.run_id = res.OptStr(row, c + 7);
  s.join_set_id = res.OptStr(row, c + 8);
  if (!res.IsNull(row, c + 9)) s.join_set_closing = res.Bool(row, c + 9);
  s.result_kind = res.OptStr(row, c + 10);
  s.intermittent_event_count = res.Int(row, c + 11);
  s.ffqn = res.Str(row, c + 12);
  s.max_retries = res.OptInt(row, c + 13);
  s.retry_exp_backoff = res.OptStr(row, c + 14);
  s.created_at = res.Int(row, c + 15);
  s.first_scheduled_at = res.Int(row, c + 16);
  s.response_count = res.Int(row, c + 17);
  s.updated_at = res.Int(row, c + 18);
  s.paused = res.Bool(row, c + 19);
  s.cancelling = res.Bool(row, c + 20);
  return DecodeState(s);
}

Result<ResponseWithCursor, DbErrorGeneric> DecodeResponseRow(const PgResult& res, int row,
                                                             std::string_view execution_id, int c) {
  ResponseColumns r;
  r.idx = res.Int(row, c + 0);
  r.created_at = res.Int(row, c + 1);
  r.join_set_id = res.Str(row, c + 2);
  r.delay_id = res.OptStr(row, c + 3);
  if (!res.IsNull(row, c + 4)) r.delay_success = res.Bool(row, c + 4);
  r.child_execution_id = res.OptStr(row, c + 5);
  r.finished_version = res.OptInt(row, c + 6);
  r.child_result = res.OptStr(row, c + 7);
  r.finished_event = res.OptStr(row, c + 8);
  r.message_id = res.OptStr(row, c + 9);
  r.message_body = res.OptStr(row, c + 10);
  return DecodeResponse(r, execution_id);
}

}  // namespace stele::storage::postgres::internal
