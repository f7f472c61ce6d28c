#include "storage/sqlite/event_codec.h"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "storage/row_json.h"

namespace stele::storage::sqlite::internal {

namespace {

// Preset dictionary of format 1 (see the header: never edit it). DEFLATE
// finds matches up to 32 KiB back and codes near ones more cheaply, so the
// most frequent strings come last.
constexpr std::string_view kEventDictionaryV1 =
    R"({"history_event":{"event":{"type":"persist","value":,"kind":"random_string","min_length":)"
    R"("max_length_exclusive":"max_inclusive":"min":{"type":"schedule","schedule_at":)"
    R"("execution_id":"E_"},{"type":"send_message","target_execution_id":"channel":"body":)"
    R"({"type":"publish","key":{"type":"message_received","message_id":"Msg_"delivered":)"
    R"({"type":"join_next_try","outcome":"found":"not_found":{"type":"stub","target":)"
    R"({"type":"cancel_request","reason":"why":{"type":"terminate"{"type":"resumed"}"paused":)"
    R"({"temporarily_failed":{"reason":"detail":"backoff_expires_at":"http_client_traces":null}})"
    R"({"temporarily_timed_out":{"backoff_expires_at":"http_client_traces":null}})"
    R"({"unlocked":{"backoff_expires_at":"reason":"lock_expires_at":"execution_error")"
    R"({"type":"delay_request","delay_id":"d:","expires_at":"2026-)"
    R"({"finished":{"result":{"err":{"execution_failure":{"kind":"trap","reason":"detail":)"
    R"({"timeout":{"cancelled":"deadline":"policy":"max_attempts":"finished_version":)"
    R"({"created":{"ffqn":"","params":[],"parent":null,"scheduled_at":"2026-12-)"
    R"(,"component_id":{"component_type":"workflow_wasm","name":"activity_wasm","input_digest":)"
    R"("sha256:0000000000000000000000000000000000000000000000000000000000000000"},)"
    R"("metadata":{},"scheduled_by":null}})"
    R"({"created":{"ffqn":"","params":[],"parent":["E_",":1-step"],"scheduled_at":"2026-12-)"
    R"(,"component_id":{"component_type":"activity_native","name":"native_activities","input_digest":)"
    R"("sha256:0000000000000000000000000000000000000000000000000000000000000000"},)"
    R"("metadata":{},"scheduled_by":null}})"
    R"({"history_event":{"event":{"type":"join_set_create","join_set_id":"o:1-step"}}})"
    R"({"history_event":{"event":{"type":"join_set_request","join_set_id":"o:1-step","request":)"
    R"({"type":"child_execution_request","child_execution_id":"E_.o:1-step_1",)"
    R"("target_ffqn":"","params":[]}}}})"
    R"({"history_event":{"event":{"type":"join_next","join_set_id":"o:1-step","run_expires_at":)"
    R"("2026-12-06T20:34:47.877090Z","requested_ffqn":"","closing":false}}})"
    R"({"finished":{"result":{"ok":{"ok":1}},"http_client_traces":null}})"
    R"({"locked":{"component_id":{"component_type":"workflow_native","name":"native_workflows",)"
    R"("input_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"},)"
    R"("executor_id":"Exr_01","run_id":"Run_01","lock_expires_at":"2026-12-06T20:34:47.877090Z",)"
    R"("retry_config":{"max_retries":5,"retry_exp_backoff":{"secs":0,"nanos":100000000},)"
    R"("max_backoff":{"secs":300,"nanos":0},"jitter_percent":10}}})";

// A deflate stream per thread, reset for each value (deflateInit allocates
// about 256 KiB; per value that would cost more than the compression).
struct Deflater {
  z_stream stream{};
  bool ok = false;
  Deflater() {
    // Raw DEFLATE (negative window bits): no zlib header or checksum, the
    // row is small and SQLite checks the page. This runs on the writer
    // thread, so it is tuned for time: an 8 KiB window (which holds the
    // dictionary) and a small hash table, whose reset per value is cheap.
    // Most of the cost is loading the dictionary: about 9 µs per W1 event
    // on the bench machine, against 11 µs with zlib's largest tables and
    // the same output; level 1 saves 2 µs more but leaves Created events
    // 15 % larger. The reader accepts any window size.
    ok = deflateInit2(&stream, 6, Z_DEFLATED, -13, 4, Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~Deflater() {
    if (ok) deflateEnd(&stream);
  }
};

struct Inflater {
  z_stream stream{};
  bool ok = false;
  Inflater() { ok = inflateInit2(&stream, -15) == Z_OK; }
  ~Inflater() {
    if (ok) inflateEnd(&stream);
  }
};

const Bytef* DictionaryBytes() { return reinterpret_cast<const Bytef*>(kEventDictionaryV1.data()); }

}  // namespace

std::string CompressEventJson(std::string_view json) {
  thread_local Deflater deflater;
  std::string out(1, static_cast<char>(kEventFormatDeflateV1));
  z_stream& s = deflater.stream;
  if (!deflater.ok || deflateReset(&s) != Z_OK ||
      deflateSetDictionary(&s, DictionaryBytes(), static_cast<uInt>(kEventDictionaryV1.size())) !=
          Z_OK) {
    std::abort();  // only on out-of-memory: zlib's other errors are misuse
  }
  const uLong bound = deflateBound(&s, static_cast<uLong>(json.size()));
  out.resize(1 + bound);
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(json.data()));
  s.avail_in = static_cast<uInt>(json.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data() + 1);
  s.avail_out = static_cast<uInt>(bound);
  if (deflate(&s, Z_FINISH) != Z_STREAM_END) std::abort();  // the bound always suffices
  out.resize(1 + (bound - s.avail_out));
  return out;
}

Result<std::string, DbErrorWriteNonRetriable> EncodeEventRow(const core::ExecutionRequest& event) {
  STELE_ASSIGN_OR_RETURN(std::string json, EncodeEvent(event));
  return CompressEventJson(json);
}

void PreEncodedEvents::Add(const void* source, const core::ExecutionRequest& event) {
  if (auto row = EncodeEventRow(event)) rows_.insert_or_assign(source, std::move(*row));
}

const std::string* PreEncodedEvents::Find(const void* source) const {
  auto it = rows_.find(source);
  return it == rows_.end() ? nullptr : &it->second;
}

Result<std::string, DbErrorGeneric> DecodeEventColumn(std::string_view stored, bool is_blob,
                                                      std::string_view execution_id,
                                                      int64_t version) {
  if (!is_blob) return std::string(stored);
  auto corrupt = [&](const std::string& what) {
    return Unexpected(DbErrorGeneric::Uncategorized("corrupt t_execution_log row of `" +
                                                    std::string(execution_id) + "` version " +
                                                    std::to_string(version) + ": " + what));
  };
  if (stored.empty() || static_cast<uint8_t>(stored[0]) != kEventFormatDeflateV1) {
    return corrupt("unknown event encoding");
  }
  thread_local Inflater inflater;
  z_stream& s = inflater.stream;
  if (!inflater.ok || inflateReset(&s) != Z_OK ||
      inflateSetDictionary(&s, DictionaryBytes(), static_cast<uInt>(kEventDictionaryV1.size())) !=
          Z_OK) {
    return corrupt("cannot start decompression");
  }
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(stored.data() + 1));
  s.avail_in = static_cast<uInt>(stored.size() - 1);
  std::string out;
  size_t produced = 0;
  out.resize(std::max<size_t>(stored.size() * 4, 256));
  while (true) {
    s.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    s.avail_out = static_cast<uInt>(out.size() - produced);
    const int rc = inflate(&s, Z_FINISH);
    produced = out.size() - s.avail_out;
    if (rc == Z_STREAM_END) break;
    // Z_BUF_ERROR with output space used up: grow and go on; anything
    // else (or no progress with input left) is damage.
    if ((rc != Z_BUF_ERROR && rc != Z_OK) || s.avail_out != 0) {
      return corrupt("compressed event does not decode");
    }
    out.resize(out.size() * 2);
  }
  if (s.avail_in != 0) return corrupt("trailing bytes after the compressed event");
  out.resize(produced);
  return out;
}

Result<std::string, DbErrorGeneric> EventJsonColumn(const Statement& stmt, int column,
                                                    std::string_view execution_id,
                                                    int64_t version) {
  return DecodeEventColumn(stmt.RawBytes(column), stmt.IsBlob(column), execution_id, version);
}

}  // namespace stele::storage::sqlite::internal
