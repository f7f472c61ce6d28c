#include "runtime/wasm/wasm_binary.h"

#include <algorithm>
#include <string_view>

namespace stele::wasm {
namespace {

constexpr uint8_t kMagic[] = {0x00, 0x61, 0x73, 0x6d};
constexpr uint8_t kVersion[] = {0x01, 0x00, 0x00, 0x00};

enum SectionId : uint8_t {
  kCustom = 0,
  kType = 1,
  kImport = 2,
  kFunction = 3,
  kTable = 4,
  kMemory = 5,
  kGlobal = 6,
  kExport = 7,
  kElement = 9,
  kDataCount = 12,
};

// A cursor over one span; every read checks the bounds and reports the
// absolute offset of the failure.
class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, size_t base) : bytes_(bytes), base_(base) {}

  bool done() const { return pos_ >= bytes_.size(); }
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t offset() const { return base_ + pos_; }

  Result<uint8_t, WasmError> Byte() {
    if (pos_ >= bytes_.size()) return Fail("unexpected end");
    return bytes_[pos_++];
  }
  Result<uint32_t, WasmError> U32() {
    std::optional<uint64_t> v = ReadLeb(bytes_, &pos_, 32);
    if (!v) return Fail("malformed LEB128 u32");
    return static_cast<uint32_t>(*v);
  }
  Result<uint64_t, WasmError> U64() {
    std::optional<uint64_t> v = ReadLeb(bytes_, &pos_, 64);
    if (!v) return Fail("malformed LEB128 u64");
    return *v;
  }
  Result<std::span<const uint8_t>, WasmError> Bytes(uint64_t n) {
    if (n > remaining()) return Fail("length " + std::to_string(n) + " beyond the end");
    std::span<const uint8_t> out = bytes_.subspan(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return out;
  }
  Result<std::string, WasmError> Name() {
    STELE_ASSIGN_OR_RETURN(uint32_t n, U32());
    STELE_ASSIGN_OR_RETURN(std::span<const uint8_t> b, Bytes(n));
    return std::string(b.begin(), b.end());
  }
  // A vector count, bounded by the bytes left (each element takes >= 1 byte),
  // so that a huge count cannot make the caller reserve memory.
  Result<uint32_t, WasmError> Count() {
    STELE_ASSIGN_OR_RETURN(uint32_t n, U32());
    if (n > remaining()) return Fail("count " + std::to_string(n) + " beyond the end");
    return n;
  }

  Unexpected<WasmError> Fail(const std::string& what) const {
    return Unexpected(WasmError::Make(WasmError::Kind::kInvalidModule,
                                      what + " at offset " + std::to_string(base_ + pos_)));
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t base_;
  size_t pos_ = 0;
};

std::optional<ValType> NumberType(uint8_t b) {
  switch (b) {
    case 0x7f:
      return ValType::kI32;
    case 0x7e:
      return ValType::kI64;
    case 0x7d:
      return ValType::kF32;
    case 0x7c:
      return ValType::kF64;
    default:
      return std::nullopt;
  }
}

bool IsValType(uint8_t b) {
  return NumberType(b).has_value() || b == 0x7b /*v128*/ || b == 0x70 /*funcref*/ ||
         b == 0x6f /*externref*/;
}

Result<Limits, WasmError> ReadLimits(Reader& r, bool memory) {
  STELE_ASSIGN_OR_RETURN(uint8_t flags, r.Byte());
  if (flags > (memory ? 0x07 : 0x01)) return r.Fail("bad limits flags");
  Limits l;
  l.shared = (flags & 0x02) != 0;
  l.is64 = (flags & 0x04) != 0;
  if (l.is64) {
    STELE_ASSIGN_OR_RETURN(l.initial, r.U64());
  } else {
    STELE_ASSIGN_OR_RETURN(l.initial, r.U32());
  }
  if (flags & 0x01) {
    uint64_t max = 0;
    if (l.is64) {
      STELE_ASSIGN_OR_RETURN(max, r.U64());
    } else {
      STELE_ASSIGN_OR_RETURN(max, r.U32());
    }
    l.max = max;
  }
  return l;
}

Result<void, WasmError> ParseTypes(Reader& r, ParsedModule& m) {
  STELE_ASSIGN_OR_RETURN(uint32_t n, r.Count());
  m.types.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    STELE_ASSIGN_OR_RETURN(uint8_t form, r.Byte());
    if (form != 0x60) return r.Fail("unsupported type form");
    FuncType ft;
    bool numbers_only = true;
    for (int part = 0; part < 2; ++part) {
      STELE_ASSIGN_OR_RETURN(uint32_t k, r.Count());
      for (uint32_t j = 0; j < k; ++j) {
        STELE_ASSIGN_OR_RETURN(uint8_t b, r.Byte());
        if (!IsValType(b)) return r.Fail("bad value type");
        std::optional<ValType> t = NumberType(b);
        if (!t) {
          numbers_only = false;
          continue;
        }
        (part == 0 ? ft.params : ft.results).push_back(*t);
      }
    }
    m.types.push_back(
        ParsedType{numbers_only ? std::optional<FuncType>(std::move(ft)) : std::nullopt});
  }
  return {};
}

Result<void, WasmError> ParseImports(Reader& r, ParsedModule& m) {
  STELE_ASSIGN_OR_RETURN(uint32_t n, r.Count());
  for (uint32_t i = 0; i < n; ++i) {
    ParsedImport imp;
    STELE_ASSIGN_OR_RETURN(imp.module, r.Name());
    STELE_ASSIGN_OR_RETURN(imp.name, r.Name());
    STELE_ASSIGN_OR_RETURN(uint8_t kind, r.Byte());
    switch (kind) {
      case 0x00: {
        STELE_ASSIGN_OR_RETURN(imp.type_index, r.U32());
        if (imp.type_index >= m.types.size()) return r.Fail("import type index out of range");
        m.function_types.push_back(imp.type_index);
        break;
      }
      case 0x01: {
        STELE_ASSIGN_OR_RETURN(uint8_t reftype, r.Byte());
        (void)reftype;
        STELE_TRY(ReadLimits(r, false));
        break;
      }
      case 0x02: {
        STELE_TRY(ReadLimits(r, true));
        break;
      }
      case 0x03: {
        STELE_ASSIGN_OR_RETURN(uint8_t valtype, r.Byte());
        STELE_ASSIGN_OR_RETURN(uint8_t mut, r.Byte());
        if (!IsValType(valtype) || mut > 1) return r.Fail("bad global import");
        break;
      }
      case 0x04: {
        STELE_ASSIGN_OR_RETURN(uint8_t attribute, r.Byte());
        (void)attribute;
        STELE_TRY(r.U32());
        break;
      }
      default:
        return r.Fail("bad import kind");
    }
    imp.kind = static_cast<ExternKind>(kind);
    m.imports.push_back(std::move(imp));
  }
  return {};
}

Result<void, WasmError> ParseFunctions(Reader& r, ParsedModule& m) {
  STELE_ASSIGN_OR_RETURN(uint32_t n, r.Count());
  m.function_types.reserve(m.function_types.size() + n);
  for (uint32_t i = 0; i < n; ++i) {
    STELE_ASSIGN_OR_RETURN(uint32_t t, r.U32());
    if (t >= m.types.size()) return r.Fail("function type index out of range");
    m.function_types.push_back(t);
  }
  return {};
}

Result<void, WasmError> ParseMemories(Reader& r, ParsedModule& m) {
  STELE_ASSIGN_OR_RETURN(uint32_t n, r.Count());
  for (uint32_t i = 0; i < n; ++i) {
    STELE_ASSIGN_OR_RETURN(Limits l, ReadLimits(r, true));
    m.memories.push_back(l);
  }
  return {};
}

Result<void, WasmError> ParseExports(Reader& r, ParsedModule& m) {
  STELE_ASSIGN_OR_RETURN(uint32_t n, r.Count());
  for (uint32_t i = 0; i < n; ++i) {
    ParsedExport e;
    STELE_ASSIGN_OR_RETURN(e.name, r.Name());
    STELE_ASSIGN_OR_RETURN(uint8_t kind, r.Byte());
    if (kind > 0x04) return r.Fail("bad export kind");
    e.kind = static_cast<ExternKind>(kind);
    STELE_ASSIGN_OR_RETURN(e.index, r.U32());
    m.exports.push_back(std::move(e));
  }
  return {};
}

// Skips a constant expression up to its `end`. False for an opcode this
// reader does not know (the engine validates; the caller then treats the
// module as one it cannot reason about).
bool SkipConstExpr(Reader& r) {
  auto skip_leb = [&] {
    for (int i = 0; i < 10; ++i) {
      Result<uint8_t, WasmError> b = r.Byte();
      if (!b) return false;
      if ((*b & 0x80) == 0) return true;
    }
    return false;
  };
  for (int ops = 0; ops < 1024; ++ops) {
    Result<uint8_t, WasmError> op = r.Byte();
    if (!op) return false;
    switch (*op) {
      case 0x0b:  // end
        return true;
      case 0x41:  // i32.const
      case 0x42:  // i64.const
      case 0x23:  // global.get
      case 0xd2:  // ref.func
        if (!skip_leb()) return false;
        break;
      case 0x43:  // f32.const
        if (!r.Bytes(4)) return false;
        break;
      case 0x44:  // f64.const
        if (!r.Bytes(8)) return false;
        break;
      case 0xd0:  // ref.null t
        if (!r.Byte()) return false;
        break;
      case 0x6a:  // extended constants: i32.add/sub/mul, i64.add/sub/mul
      case 0x6b:
      case 0x6c:
      case 0x7c:
      case 0x7d:
      case 0x7e:
        break;
      default:
        return false;
    }
  }
  return false;
}

// Globals and element segments matter only for resetting instances: what
// this reader cannot decode marks the module as not resettable rather than
// failing it.
void ParseGlobals(Reader r, ParsedModule& m) {
  Result<uint32_t, WasmError> n = r.Count();
  if (!n) return void(m.has_droppable_segments = true);
  for (uint32_t i = 0; i < *n; ++i) {
    Result<uint8_t, WasmError> type = r.Byte();
    Result<uint8_t, WasmError> mut = type ? r.Byte() : Unexpected(type.error());
    if (!mut || *mut > 1 || !SkipConstExpr(r)) return void(m.has_droppable_segments = true);
    m.globals.push_back(ParsedGlobal{*type, *mut == 1});
  }
}

void ParseElements(Reader r, ParsedModule& m) {
  Result<uint32_t, WasmError> n = r.Count();
  if (!n) return void(m.has_droppable_segments = true);
  for (uint32_t i = 0; i < *n; ++i) {
    Result<uint32_t, WasmError> flags = r.U32();
    // Passive (1, 5) segments stay droppable after instantiation.
    if (!flags || *flags > 7 || (*flags & 3) == 1) return void(m.has_droppable_segments = true);
    bool ok = true;
    if (*flags == 2 || *flags == 6) ok = r.U32().has_value();         // table index
    if (ok && (*flags & 1) == 0) ok = SkipConstExpr(r);               // offset
    if (ok && *flags != 0 && *flags != 4) ok = r.Byte().has_value();  // elemkind / reftype
    Result<uint32_t, WasmError> count = ok ? r.Count() : Unexpected(WasmError{});
    ok = count.has_value();
    for (uint32_t j = 0; ok && j < *count; ++j) {
      ok = (*flags & 4) != 0 ? SkipConstExpr(r) : r.U32().has_value();
    }
    if (!ok) return void(m.has_droppable_segments = true);
  }
}

// The `name` section is advisory (the spec says a malformed one is ignored):
// any error leaves the names read so far.
void ParseNames(std::span<const uint8_t> payload, ParsedModule& m) {
  Reader r(payload, 0);
  while (!r.done()) {
    Result<uint8_t, WasmError> id = r.Byte();
    Result<uint32_t, WasmError> size = id ? r.U32() : Unexpected(id.error());
    if (!size) return;
    Result<std::span<const uint8_t>, WasmError> sub = r.Bytes(*size);
    if (!sub) return;
    if (*id != 1) continue;
    Reader s(*sub, 0);
    Result<uint32_t, WasmError> n = s.Count();
    if (!n) return;
    for (uint32_t i = 0; i < *n; ++i) {
      Result<uint32_t, WasmError> index = s.U32();
      if (!index) return;
      Result<std::string, WasmError> name = s.Name();
      if (!name) return;
      m.function_names[*index] = std::move(*name);
    }
  }
}

}  // namespace

std::optional<uint64_t> ReadLeb(std::span<const uint8_t> bytes, size_t* pos, int bits) {
  uint64_t result = 0;
  int shift = 0;
  const int max_bytes = (bits + 6) / 7;
  for (int i = 0; i < max_bytes; ++i) {
    if (*pos >= bytes.size()) return std::nullopt;
    uint8_t b = bytes[(*pos)++];
    uint64_t payload = b & 0x7f;
    if (i == max_bytes - 1) {
      // The last byte may only carry the bits that remain.
      const int left = bits - shift;
      if ((b & 0x80) != 0 || (left < 7 && (payload >> left) != 0)) return std::nullopt;
    }
    result |= payload << shift;
    shift += 7;
    if ((b & 0x80) == 0) return result;
  }
  return std::nullopt;
}

void AppendLeb(std::vector<uint8_t>* out, uint64_t value) {
  do {
    uint8_t b = value & 0x7f;
    value >>= 7;
    if (value != 0) b |= 0x80;
    out->push_back(b);
  } while (value != 0);
}

std::optional<FuncType> ParsedModule::FunctionType(uint32_t index) const {
  if (index >= function_types.size()) return std::nullopt;
  uint32_t t = function_types[index];
  if (t >= types.size()) return std::nullopt;
  return types[t].type;
}

Result<ParsedModule, WasmError> ParseModule(std::span<const uint8_t> bytes) {
  Reader header(bytes, 0);
  STELE_ASSIGN_OR_RETURN(std::span<const uint8_t> magic, header.Bytes(4));
  if (!std::equal(magic.begin(), magic.end(), kMagic))
    return header.Fail("not a wasm module (magic)");
  STELE_ASSIGN_OR_RETURN(std::span<const uint8_t> version, header.Bytes(4));
  if (!std::equal(version.begin(), version.end(), kVersion)) {
    return header.Fail("unsupported wasm version (a component, or not wasm)");
  }

  ParsedModule m;
  size_t pos = 8;
  int last_known = 0;
  while (pos < bytes.size()) {
    const size_t section_begin = pos;
    Reader r(bytes.subspan(pos), pos);
    STELE_ASSIGN_OR_RETURN(uint8_t id, r.Byte());
    STELE_ASSIGN_OR_RETURN(uint32_t size, r.U32());
    const size_t payload_begin = r.offset();
    STELE_ASSIGN_OR_RETURN(std::span<const uint8_t> payload, r.Bytes(size));
    pos = r.offset();
    Reader p(payload, payload_begin);
    if (id > 13) return r.Fail("unknown section id " + std::to_string(id));
    if (id != kCustom) {
      // Order matters for the function index space. The data-count (12) and
      // tag (13) sections sit out of numeric order; the engine checks them.
      if (id <= kExport && id <= last_known) return r.Fail("section out of order or repeated");
      if (id <= kExport) last_known = id;
    }
    switch (id) {
      case kCustom: {
        STELE_ASSIGN_OR_RETURN(std::string name, p.Name());
        std::span<const uint8_t> rest = payload.subspan(payload.size() - p.remaining());
        if (name == "name") ParseNames(rest, m);
        m.custom_sections.emplace_back(std::move(name), std::string(rest.begin(), rest.end()));
        continue;  // the payload is the rest by definition
      }
      case kType:
        STELE_TRY(ParseTypes(p, m));
        break;
      case kImport:
        STELE_TRY(ParseImports(p, m));
        break;
      case kFunction:
        STELE_TRY(ParseFunctions(p, m));
        break;
      case kMemory:
        STELE_TRY(ParseMemories(p, m));
        m.memory_section = std::make_pair(section_begin, pos);
        break;
      case kExport: {
        Reader count = p;
        STELE_TRY(count.U32());
        m.export_entries_begin = count.offset();
        STELE_TRY(ParseExports(p, m));
        m.export_section = std::make_pair(section_begin, pos);
        break;
      }
      case kTable: {
        Reader t = p;
        if (auto n = t.Count()) m.tables = *n;
        continue;
      }
      case kGlobal:
        ParseGlobals(p, m);
        continue;
      case kElement:
        ParseElements(p, m);
        continue;
      case kDataCount:
        m.has_droppable_segments = true;
        continue;
      default:
        continue;  // tables, globals, code ...: the engine validates them
    }
    if (!p.done()) return p.Fail("section size mismatch");
  }
  return m;
}

std::vector<uint8_t> RewriteMemorySection(std::span<const uint8_t> bytes,
                                          const ParsedModule& parsed, const Limits& memory) {
  STELE_CHECK(parsed.memory_section.has_value(), "RewriteMemorySection: no memory section");
  const auto [begin, end] = *parsed.memory_section;
  std::vector<uint8_t> content;
  content.push_back(1);  // one memory
  content.push_back(memory.max ? 0x01 : 0x00);
  AppendLeb(&content, memory.initial);
  if (memory.max) AppendLeb(&content, *memory.max);

  std::vector<uint8_t> out;
  out.reserve(bytes.size() + 16);
  out.insert(out.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(begin));
  out.push_back(kMemory);
  AppendLeb(&out, content.size());
  out.insert(out.end(), content.begin(), content.end());
  out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(end), bytes.end());
  return out;
}

std::vector<uint8_t> AppendExports(std::span<const uint8_t> bytes, const ParsedModule& parsed,
                                   const std::vector<ParsedExport>& extra) {
  STELE_CHECK(parsed.export_section.has_value(), "AppendExports: no export section");
  const auto [begin, end] = *parsed.export_section;
  std::vector<uint8_t> content;
  AppendLeb(&content, parsed.exports.size() + extra.size());
  content.insert(content.end(),
                 bytes.begin() + static_cast<std::ptrdiff_t>(parsed.export_entries_begin),
                 bytes.begin() + static_cast<std::ptrdiff_t>(end));
  for (const ParsedExport& e : extra) {
    AppendLeb(&content, e.name.size());
    content.insert(content.end(), e.name.begin(), e.name.end());
    content.push_back(static_cast<uint8_t>(e.kind));
    AppendLeb(&content, e.index);
  }
  std::vector<uint8_t> out;
  out.reserve(bytes.size() + content.size());
  out.insert(out.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(begin));
  out.push_back(kExport);
  AppendLeb(&out, content.size());
  out.insert(out.end(), content.begin(), content.end());
  out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(end), bytes.end());
  return out;
}

}  // namespace stele::wasm
