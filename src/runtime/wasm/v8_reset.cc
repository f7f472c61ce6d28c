#include "runtime/wasm/v8_reset.h"

#include <algorithm>
#include <cstring>

namespace stele::wasm::internal {
namespace {

constexpr size_t kBlock = 4096;

v8::Local<v8::String> Key(v8::Isolate* isolate, const std::string& name) {
  return v8::String::NewFromUtf8(isolate, name.data(), v8::NewStringType::kNormal,
                                 static_cast<int>(name.size()))
      .ToLocalChecked();
}

bool Length(v8::Local<v8::Context> context, v8::Local<v8::Object> table, v8::Local<v8::String> key,
            uint32_t* length) {
  v8::Local<v8::Value> value;
  return table->Get(context, key).ToLocal(&value) && value->Uint32Value(context).To(length);
}

}  // namespace

bool ResetState::Capture(v8::Isolate* isolate, v8::Local<v8::Context> context,
                         v8::Local<v8::Object> exports, v8::Local<v8::WasmMemoryObject> memory,
                         const std::vector<std::string>& globals,
                         const std::vector<std::string>& tables, std::string* error) {
  v8::TryCatch try_catch(isolate);
  value_key_.Reset(isolate, v8::String::NewFromUtf8Literal(isolate, "value"));
  length_key_.Reset(isolate, v8::String::NewFromUtf8Literal(isolate, "length"));
  for (const std::string& name : globals) {
    v8::Local<v8::Value> global;
    v8::Local<v8::Value> value;
    if (!exports->Get(context, Key(isolate, name)).ToLocal(&global) || !global->IsObject() ||
        !global.As<v8::Object>()->Get(context, value_key_.Get(isolate)).ToLocal(&value)) {
      *error = "cannot read the reset export " + name;
      return false;
    }
    globals_.emplace_back(isolate, global.As<v8::Object>());
    global_values_.emplace_back(isolate, value);
  }
  for (const std::string& name : tables) {
    v8::Local<v8::Value> object;
    uint32_t length = 0;
    if (!exports->Get(context, Key(isolate, name)).ToLocal(&object) || !object->IsObject() ||
        !Length(context, object.As<v8::Object>(), length_key_.Get(isolate), &length)) {
      *error = "cannot read the reset export " + name;
      return false;
    }
    v8::Local<v8::Value> get;
    if (table_get_.IsEmpty()) {
      if (!object.As<v8::Object>()->Get(context, Key(isolate, "get")).ToLocal(&get) ||
          !get->IsFunction()) {
        *error = "cannot read Table.prototype.get";
        return false;
      }
      table_get_.Reset(isolate, get.As<v8::Function>());
    }
    Table table{v8::Global<v8::Object>(isolate, object.As<v8::Object>()), {}};
    table.entries.reserve(length);
    for (uint32_t i = 0; i < length; ++i) {
      v8::Local<v8::Value> argv[] = {v8::Integer::NewFromUnsigned(isolate, i)};
      v8::Local<v8::Value> entry;
      if (!table_get_.Get(isolate)->Call(context, object, 1, argv).ToLocal(&entry)) {
        *error = "cannot read entry " + std::to_string(i) + " of " + name;
        return false;
      }
      table.entries.emplace_back(isolate, entry);
    }
    tables_.push_back(std::move(table));
  }
  has_memory_ = !memory.IsEmpty();
  if (has_memory_) {
    v8::Local<v8::ArrayBuffer> buffer = memory->Buffer();
    const auto* data = static_cast<const uint8_t*>(buffer->Data());
    memory_.assign(data, data + buffer->ByteLength());
  }
  captured_ = true;
  return true;
}

bool ResetState::Restore(v8::Isolate* isolate, v8::Local<v8::Context> context,
                         v8::Local<v8::WasmMemoryObject> memory) {
  if (!captured_ || has_memory_ == memory.IsEmpty()) return false;
  v8::TryCatch try_catch(isolate);
  // Tables first: a changed table discards the instance before any copying.
  for (const Table& table : tables_) {
    v8::Local<v8::Object> object = table.object.Get(isolate);
    uint32_t length = 0;
    if (!Length(context, object, length_key_.Get(isolate), &length) ||
        length != table.entries.size()) {
      return false;
    }
    for (uint32_t i = 0; i < length; ++i) {
      v8::Local<v8::Value> argv[] = {v8::Integer::NewFromUnsigned(isolate, i)};
      v8::Local<v8::Value> entry;
      if (!table_get_.Get(isolate)->Call(context, object, 1, argv).ToLocal(&entry) ||
          !entry->StrictEquals(table.entries[i].Get(isolate))) {
        return false;
      }
    }
  }
  if (has_memory_) {
    v8::Local<v8::ArrayBuffer> buffer = memory->Buffer();
    if (buffer->ByteLength() != memory_.size()) return false;  // grown: cannot shrink
    auto* data = static_cast<uint8_t*>(buffer->Data());
    for (size_t offset = 0; offset < memory_.size(); offset += kBlock) {
      const size_t n = std::min(kBlock, memory_.size() - offset);
      if (std::memcmp(data + offset, memory_.data() + offset, n) != 0) {
        std::memcpy(data + offset, memory_.data() + offset, n);
      }
    }
  }
  for (size_t i = 0; i < globals_.size(); ++i) {
    if (!globals_[i]
             .Get(isolate)
             ->Set(context, value_key_.Get(isolate), global_values_[i].Get(isolate))
             .FromMaybe(false)) {
      return false;
    }
  }
  return true;
}

}  // namespace stele::wasm::internal
