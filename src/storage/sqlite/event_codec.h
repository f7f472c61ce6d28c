// The on-disk encoding of t_execution_log.json_value (schema V7).
//
// The API and the rest of the engine speak the event's JSON
// (core::ToJson(ExecutionRequest), storage/row_json.h); only the bytes in
// the SQLite file change. Since V7 a row is written as a BLOB:
//
//   byte 0      kEventFormatDeflateV1
//   bytes 1..   raw DEFLATE (RFC 1951) of the JSON text, compressed with
//               kEventDictionaryV1 as preset dictionary
//
// The dictionary holds the keys and recurring values of event JSON (field
// names, component types, the all-zero digest, retry defaults), which is
// most of a small event's text: W1's events shrink to about a third
// (BENCHMARKS.md, "Disk per workflow"). Rows written before V7 stay TEXT
// (plain JSON) and are read as such, so the migration does not rewrite the
// log. The format byte and the dictionary are part of the file format:
// never change them; a new dictionary is a new format byte.
//
// Threading: pure functions (each thread keeps its own zlib streams).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/result.h"
#include "core/execution_event.h"
#include "storage/db_errors.h"
#include "storage/sqlite/sqlite_handle.h"

namespace stele::storage::sqlite::internal {

inline constexpr uint8_t kEventFormatDeflateV1 = 1;

// The BLOB stored for `json`.
std::string CompressEventJson(std::string_view json);

// The JSON text of a stored value: `stored` as is when `is_blob` is false
// (a row from before V7), else decompressed. A BLOB that does not decode
// is a DbErrorGeneric naming the row.
Result<std::string, DbErrorGeneric> DecodeEventColumn(std::string_view stored, bool is_blob,
                                                      std::string_view execution_id,
                                                      int64_t version);

// The stored value of `event`: its JSON (storage/row_json.h), compressed.
Result<std::string, DbErrorWriteNonRetriable> EncodeEventRow(const core::ExecutionRequest& event);

// Event rows encoded on the calling thread before their operation reaches
// the writer. JSON and compression are a fifth of the writer's time on a
// busy server, and the writer is the one serial stage (writer.h); callers
// run in parallel. A row is filed under the address of what it is made of
// (the ExecutionRequest of an append, the CreateRequest of a Created
// event, the ChildLock of a child's Locked event), which the operation's
// caller keeps alive until the operation completes. A row not found is
// encoded on the writer, as before: this only moves work.
//
// Threading: filled by one thread, then read by the writer.
class PreEncodedEvents {
 public:
  // Encodes `event` now. An event that does not encode is left out: the
  // writer meets the same error and reports it with the operation.
  void Add(const void* source, const core::ExecutionRequest& event);
  // The row filed under `source`, or nullptr.
  const std::string* Find(const void* source) const;

 private:
  std::unordered_map<const void*, std::string> rows_;
};

// Column `column` of the current row of `stmt`, decoded as above.
Result<std::string, DbErrorGeneric> EventJsonColumn(const Statement& stmt, int column,
                                                    std::string_view execution_id, int64_t version);

}  // namespace stele::storage::sqlite::internal
