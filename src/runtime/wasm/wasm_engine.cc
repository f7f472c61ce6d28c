#include "runtime/wasm/wasm_engine.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/check.h"
#include "runtime/wasm/module_check.h"

namespace stele::wasm {

std::string_view ValTypeName(ValType type) {
  switch (type) {
    case ValType::kI32:
      return "i32";
    case ValType::kI64:
      return "i64";
    case ValType::kF32:
      return "f32";
    case ValType::kF64:
      return "f64";
  }
  return "?";
}

std::string FuncType::ToString() const {
  auto list = [](const std::vector<ValType>& types) {
    std::string s = "(";
    for (size_t i = 0; i < types.size(); ++i) {
      if (i > 0) s += ", ";
      s += ValTypeName(types[i]);
    }
    return s + ")";
  };
  return list(params) + " -> " + list(results);
}

Value Value::I32(int32_t v) { return {ValType::kI32, static_cast<uint32_t>(v)}; }
Value Value::I64(int64_t v) { return {ValType::kI64, static_cast<uint64_t>(v)}; }
Value Value::F32(float v) { return {ValType::kF32, std::bit_cast<uint32_t>(v)}; }
Value Value::F64(double v) { return {ValType::kF64, std::bit_cast<uint64_t>(v)}; }

int32_t Value::AsI32() const {
  STELE_CHECK(type == ValType::kI32, "Value::AsI32 on a non-i32 value");
  return static_cast<int32_t>(static_cast<uint32_t>(bits));
}
int64_t Value::AsI64() const {
  STELE_CHECK(type == ValType::kI64, "Value::AsI64 on a non-i64 value");
  return static_cast<int64_t>(bits);
}
float Value::AsF32() const {
  STELE_CHECK(type == ValType::kF32, "Value::AsF32 on a non-f32 value");
  return std::bit_cast<float>(static_cast<uint32_t>(bits));
}
double Value::AsF64() const {
  STELE_CHECK(type == ValType::kF64, "Value::AsF64 on a non-f64 value");
  return std::bit_cast<double>(bits);
}

std::string Value::ToString() const {
  std::string s(ValTypeName(type));
  switch (type) {
    case ValType::kI32:
      return s + ":" + std::to_string(AsI32());
    case ValType::kI64:
      return s + ":" + std::to_string(AsI64());
    case ValType::kF32:
      return s + ":" + std::to_string(AsF32());
    case ValType::kF64:
      return s + ":" + std::to_string(AsF64());
  }
  return s;
}

std::string_view WasmErrorKindName(WasmError::Kind kind) {
  using Kind = WasmError::Kind;
  switch (kind) {
    case Kind::kInvalidModule:
      return "invalid module";
    case Kind::kDisallowedImport:
      return "disallowed import";
    case Kind::kDisallowedFeature:
      return "disallowed feature";
    case Kind::kLinkError:
      return "link error";
    case Kind::kMemoryLimit:
      return "memory limit";
    case Kind::kTrap:
      return "trap";
    case Kind::kInterrupted:
      return "interrupted";
    case Kind::kStackOverflow:
      return "stack overflow";
    case Kind::kHostError:
      return "host error";
    case Kind::kHostStop:
      return "stopped by the host";
    case Kind::kOutOfResources:
      return "out of resources";
    case Kind::kNoSuchExport:
      return "no such export";
    case Kind::kBadArguments:
      return "bad arguments";
    case Kind::kPoisoned:
      return "poisoned instance";
  }
  return "unknown";
}

std::string WasmError::ToString() const {
  std::string s(WasmErrorKindName(kind));
  s += ": ";
  s += message;
  for (const std::string& frame : backtrace) s += "\n  at " + frame;
  return s;
}

const ExportedFunction* WasmModule::FindExport(std::string_view name) const {
  auto it = std::find_if(exports_.begin(), exports_.end(),
                         [&](const ExportedFunction& e) { return e.name == name; });
  return it == exports_.end() ? nullptr : &*it;
}

std::vector<std::string_view> WasmModule::CustomSections(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const auto& [n, payload] : custom_sections_) {
    if (n == name) out.push_back(payload);
  }
  return out;
}

void WasmModule::Describe(CheckedModule&& checked) {
  digest_ = std::move(checked.digest);
  exports_ = std::move(checked.exports);
  imports_ = std::move(checked.imports);
  custom_sections_ = std::move(checked.custom_sections);
  function_names_ = std::move(checked.function_names);
  memory_initial_pages_ = checked.memory_initial_pages;
  memory_max_pages_ = checked.memory_max_pages;
  reset_blocker_ = std::move(checked.reset_blocker);
  reset_globals_ = std::move(checked.reset_globals);
  reset_tables_ = std::move(checked.reset_tables);
}

Result<std::string, WasmError> HostCall::ReadString(uint32_t ptr, uint32_t len) {
  STELE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadBytes(ptr, len));
  return std::string(bytes.begin(), bytes.end());
}

Result<void, WasmError> HostCall::WriteString(uint32_t ptr, std::string_view s) {
  return WriteBytes(ptr,
                    std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

const HostFunction* ImportTable::Find(std::string_view module, std::string_view name) const {
  auto it = functions.find(std::make_pair(std::string(module), std::string(name)));
  return it == functions.end() ? nullptr : &it->second;
}

ModuleLimits ImportTable::AsLimits(uint32_t max_memory_pages) const {
  ModuleLimits limits;
  limits.max_memory_pages = max_memory_pages;
  for (const auto& [key, fn] : functions) limits.Allow(key.first, key.second, fn.type);
  return limits;
}

}  // namespace stele::wasm
