// The saved state of a V8 wasm instance (WasmInstance::Checkpoint/Restore in
// v8_engine.cc): a copy of linear memory, the values of the mutable globals
// and the entries of the tables, read through the reserved exports that
// module_check.cc adds (kResetExportPrefix).
//
// Restoring compares memory in 4 KiB blocks and copies back only the blocks
// that differ: a run touches a few blocks, and blocks never touched stay
// unbacked (no resident memory for untouched pages). Globals are written
// back; tables are compared entry by entry and never written: a changed
// table makes Restore fail (the instance is discarded).
//
// Threading: used with the instance's isolate entered (Entered).
// Ownership: holds v8::Globals of the instance's objects; destroy it with
// the isolate entered, before the instance's isolate goes away.
// Internal to src/runtime/wasm.
#pragma once

#include <v8.h>

#include <cstdint>
#include <string>
#include <vector>

namespace stele::wasm::internal {

class ResetState {
 public:
  // Saves the state of the instance whose exports object is `exports` and
  // memory `memory` (may be empty). False (message in *error) when an
  // export is missing or V8 fails.
  bool Capture(v8::Isolate* isolate, v8::Local<v8::Context> context, v8::Local<v8::Object> exports,
               v8::Local<v8::WasmMemoryObject> memory, const std::vector<std::string>& globals,
               const std::vector<std::string>& tables, std::string* error);
  // Puts the saved state back. False when it cannot (memory size or a table
  // changed, or V8 failed): the instance must be discarded.
  bool Restore(v8::Isolate* isolate, v8::Local<v8::Context> context,
               v8::Local<v8::WasmMemoryObject> memory);
  bool captured() const { return captured_; }

 private:
  struct Table {
    v8::Global<v8::Object> object;
    std::vector<v8::Global<v8::Value>> entries;
  };
  bool captured_ = false;
  bool has_memory_ = false;
  std::vector<uint8_t> memory_;
  std::vector<v8::Global<v8::Object>> globals_;
  std::vector<v8::Global<v8::Value>> global_values_;
  std::vector<Table> tables_;
  v8::Global<v8::String> value_key_;
  v8::Global<v8::String> length_key_;
  v8::Global<v8::Function> table_get_;
};

}  // namespace stele::wasm::internal
