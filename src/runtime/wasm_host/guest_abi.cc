#include "runtime/wasm_host/guest_abi.h"

#include <set>
#include <utility>

#include "core/json.h"

namespace stele::runtime::wasm_host {

namespace {

using wasm::ValType;
using wasm::WasmError;

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r'))
    --e;
  return std::string(s.substr(b, e - b));
}

Result<std::string, std::string> StringMember(const core::Json& entry, const char* key,
                                              const std::string& where) {
  auto it = entry.find(key);
  if (it == entry.end() || !it->is_string()) {
    return Unexpected(where + ": member \"" + key + "\" must be a string");
  }
  return it->get<std::string>();
}

Result<DeclaredFunction, std::string> ParseEntry(std::string_view line, size_t index) {
  std::string where = "stele:functions entry " + std::to_string(index);
  core::Json entry = core::Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (entry.is_discarded() || !entry.is_object()) {
    return Unexpected(where + ": not a JSON object: `" + std::string(line.substr(0, 200)) + "`");
  }
  STELE_ASSIGN_OR_RETURN(std::string kind_text, StringMember(entry, "kind", where));
  GuestKind kind;
  if (kind_text == "workflow") {
    kind = GuestKind::kWorkflow;
  } else if (kind_text == "activity") {
    kind = GuestKind::kActivity;
  } else {
    return Unexpected(where + ": kind must be \"workflow\" or \"activity\", got \"" + kind_text +
                      "\"");
  }
  STELE_ASSIGN_OR_RETURN(std::string ffqn_text, StringMember(entry, "ffqn", where));
  auto ffqn = core::FunctionFqn::Parse(ffqn_text);
  if (!ffqn) {
    return Unexpected(where + ": invalid ffqn `" + ffqn_text +
                      "` (expected ns:pkg/ifc.fn): " + ffqn.error().message);
  }
  STELE_ASSIGN_OR_RETURN(std::string export_name, StringMember(entry, "export", where));
  STELE_ASSIGN_OR_RETURN(std::string params, StringMember(entry, "params", where));
  STELE_ASSIGN_OR_RETURN(std::string return_type, StringMember(entry, "return", where));
  auto param_list = ParseParamList(params);
  if (!param_list) return Unexpected(where + " (" + ffqn_text + "): " + param_list.error());
  return DeclaredFunction{kind,
                          std::move(*ffqn),
                          std::move(export_name),
                          std::move(params),
                          std::move(return_type),
                          std::move(*param_list)};
}

}  // namespace

wasm::FuncType ExportFuncType() {
  return wasm::FuncType{{ValType::kI32, ValType::kI32}, {ValType::kI64}};
}

Result<std::vector<std::pair<std::string, std::string>>, std::string> ParseParamList(
    std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  if (Trim(text).empty()) return out;
  int depth = 0;
  size_t start = 0;
  auto add = [&](std::string_view part) -> Result<void, std::string> {
    size_t colon = part.find(':');
    if (colon == std::string_view::npos) {
      return Unexpected("parameter `" + Trim(part) + "` must be `name: type`");
    }
    std::string name = Trim(part.substr(0, colon));
    std::string type = Trim(part.substr(colon + 1));
    if (name.empty() || type.empty()) {
      return Unexpected("parameter `" + Trim(part) + "` must be `name: type`");
    }
    out.emplace_back(std::move(name), std::move(type));
    return {};
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') {
      if (--depth < 0)
        return Unexpected("unbalanced `" + std::string(1, c) + "` in `" + std::string(text) + "`");
    }
    if (c == ',' && depth == 0) {
      STELE_TRY(add(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (depth != 0) return Unexpected("unbalanced `<` in `" + std::string(text) + "`");
  STELE_TRY(add(text.substr(start)));
  return out;
}

Result<std::vector<DeclaredFunction>, std::string> ParseDeclarations(
    const std::vector<std::string_view>& payloads,
    const std::vector<wasm::ExportedFunction>& exports) {
  std::vector<DeclaredFunction> out;
  std::set<std::string> seen;
  size_t index = 0;
  for (std::string_view payload : payloads) {
    size_t pos = 0;
    while (pos <= payload.size()) {
      size_t end = payload.find_first_of(std::string_view("\n\0", 2), pos);
      if (end == std::string_view::npos) end = payload.size();
      std::string line = Trim(payload.substr(pos, end - pos));
      pos = end + 1;
      if (line.empty()) continue;
      STELE_ASSIGN_OR_RETURN(DeclaredFunction fn, ParseEntry(line, index++));
      if (!seen.insert(fn.ffqn.ToString()).second) {
        return Unexpected("function " + fn.ffqn.ToString() + " is declared twice");
      }
      const wasm::ExportedFunction* found = nullptr;
      for (const auto& e : exports) {
        if (e.name == fn.export_name) found = &e;
      }
      if (found == nullptr) {
        return Unexpected("function " + fn.ffqn.ToString() + " declares export `" + fn.export_name +
                          "`, which the module does not export");
      }
      if (!(found->type == ExportFuncType())) {
        return Unexpected("export `" + fn.export_name + "` has type " + found->type.ToString() +
                          ", expected " + ExportFuncType().ToString());
      }
      out.push_back(std::move(fn));
    }
  }
  return out;
}

Result<core::SupportedFunctionReturnValue, std::string> ParseExportResult(std::string_view text,
                                                                          bool* non_retryable) {
  core::Json json = core::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return Unexpected("the result is not JSON: `" + std::string(text.substr(0, 200)) + "`");
  }
  const bool marked = json.is_object() && json.size() == 2 && json.contains("err") &&
                      json.contains("retryable") && json["retryable"].is_boolean();
  if (marked) {
    if (non_retryable != nullptr) *non_retryable = !json["retryable"].get<bool>();
    json.erase("retryable");
  }
  if (!json.is_object() || json.size() != 1 || (!json.contains("ok") && !json.contains("err"))) {
    return Unexpected("the result must be {\"ok\": value} or {\"err\": value}, got `" +
                      std::string(text.substr(0, 200)) + "`");
  }
  auto value = [](core::Json v) -> std::optional<core::Json> {
    if (v.is_null()) return std::nullopt;
    return v;
  };
  if (json.contains("ok")) return core::ReturnValueOk{value(json["ok"])};
  return core::ReturnValueErr{value(json["err"])};
}

std::pair<Status, std::string> ResultPayload(const core::SupportedFunctionReturnValue& value) {
  if (const auto* ok = std::get_if<core::ReturnValueOk>(&value)) {
    return {Status::kOk, ok->ok ? ok->ok->dump() : "null"};
  }
  if (const auto* err = std::get_if<core::ReturnValueErr>(&value)) {
    return {Status::kErr, err->err ? err->err->dump() : "null"};
  }
  const auto& failed = std::get<core::FinishedExecutionError>(value);
  core::Json j = core::Json::object();
  j["kind"] = std::string(core::ExecutionFailureKindName(failed.kind));
  j["reason"] = failed.reason ? core::Json(*failed.reason) : core::Json(nullptr);
  j["detail"] = failed.detail ? core::Json(*failed.detail) : core::Json(nullptr);
  return {Status::kFailed, j.dump()};
}

Result<core::SupportedFunctionReturnValue, std::string> StubValue(int32_t status,
                                                                  std::string_view payload) {
  std::optional<core::Json> value;
  if (!Trim(payload).empty()) {
    core::Json json = core::Json::parse(payload, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) {
      return Unexpected("stub value is not JSON: `" + std::string(payload.substr(0, 200)) + "`");
    }
    if (!json.is_null()) value = std::move(json);
  }
  if (status == static_cast<int32_t>(Status::kOk)) return core::ReturnValueOk{std::move(value)};
  if (status == static_cast<int32_t>(Status::kErr)) return core::ReturnValueErr{std::move(value)};
  return Unexpected("stub status must be 0 (ok) or 1 (err), got " + std::to_string(status));
}

namespace {

template <class Target>
Result<uint32_t, WasmError> Place(Target& target, std::string_view bytes) {
  if (bytes.size() > 0x7fffffffu) {
    return Unexpected(WasmError::Make(WasmError::Kind::kTrap, "payload too large for the guest"));
  }
  const uint32_t size = static_cast<uint32_t>(bytes.size());
  const wasm::Value args[] = {wasm::Value::I32(static_cast<int32_t>(size))};
  auto result = target.CallExport(kAllocExport, args);
  if (!result) return Unexpected(std::move(result.error()));
  if (result->size() != 1 || (*result)[0].type != ValType::kI32) {
    return Unexpected(WasmError::Make(WasmError::Kind::kTrap, "stele_alloc must return one i32"));
  }
  const uint32_t ptr = static_cast<uint32_t>((*result)[0].AsI32());
  if (ptr == 0) {
    return Unexpected(WasmError::Make(
        WasmError::Kind::kTrap,
        "guest out of memory: stele_alloc(" + std::to_string(size) + ") returned 0"));
  }
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  STELE_TRY(target.WriteBytes(ptr, std::span<const uint8_t>(data, bytes.size())));
  return ptr;
}

// WasmInstance has Call, not CallExport; one adapter keeps Place generic.
struct InstanceTarget {
  wasm::WasmInstance& instance;
  Result<std::vector<wasm::Value>, WasmError> CallExport(std::string_view name,
                                                         std::span<const wasm::Value> args) {
    return instance.Call(name, args);
  }
  Result<void, WasmError> WriteBytes(uint32_t ptr, std::span<const uint8_t> bytes) {
    return instance.WriteBytes(ptr, bytes);
  }
};

}  // namespace

Result<uint32_t, WasmError> PlaceInGuest(wasm::HostCall& call, std::string_view bytes) {
  return Place(call, bytes);
}

Result<uint32_t, WasmError> PlaceInGuest(wasm::WasmInstance& instance, std::string_view bytes) {
  InstanceTarget target{instance};
  return Place(target, bytes);
}

Result<void, WasmError> WriteOut(wasm::HostCall& call, uint32_t out_ptr, std::string_view bytes) {
  if (out_ptr == 0) return {};
  STELE_ASSIGN_OR_RETURN(uint32_t ptr, PlaceInGuest(call, bytes));
  const uint32_t len = static_cast<uint32_t>(bytes.size());
  uint8_t slot[8];
  for (int i = 0; i < 4; ++i) {
    slot[i] = static_cast<uint8_t>(ptr >> (8 * i));
    slot[4 + i] = static_cast<uint8_t>(len >> (8 * i));
  }
  return call.WriteBytes(out_ptr, slot);
}

}  // namespace stele::runtime::wasm_host
