#include "core/ids.h"

#include <charconv>
#include <string>
#include <system_error>

#include "base/check.h"

namespace stele::core {
namespace {

constexpr std::string_view kExecutionIdPrefix = "E_";
constexpr std::string_view kDelayIdPrefix = "Delay_";

Unexpected<IdParseError> ParseError(std::string message) {
  return Unexpected(IdParseError{std::move(message)});
}

char KindCode(JoinSetKind kind) {
  switch (kind) {
    case JoinSetKind::kOneOff:
      return 'o';
    case JoinSetKind::kNamed:
      return 'n';
    case JoinSetKind::kGenerated:
      return 'g';
    case JoinSetKind::kMessages:
      return 'm';
  }
  STELE_CHECK(false, "unknown JoinSetKind");
  return '?';
}

// Indices are written by ToString only, so only their canonical form is
// accepted: decimal digits, no sign, no leading zero, at least 1, within u64.
// Accepting "+1" or "01" would make two strings name the same child, and ids
// are compared as strings by the storage backends.
Result<uint64_t, IdParseError> ParseIdx(std::string_view text) {
  if (text.empty()) return ParseError("empty index");
  for (char c : text) {
    if (c < '0' || c > '9') return ParseError("index `" + std::string(text) + "` is not a number");
  }
  if (text[0] == '0') return ParseError("index `" + std::string(text) + "` must start at 1");
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return ParseError("index `" + std::string(text) + "` is out of range");
  }
  return value;
}

// One `<kind>:<name>_<idx>` segment. Names cannot contain '_', so the first
// '_' is the separator.
Result<DerivedSegment, IdParseError> ParseSegment(std::string_view text) {
  if (text.empty()) return ParseError("empty segment");
  const size_t underscore = text.find('_');
  if (underscore == std::string_view::npos) {
    return ParseError("segment `" + std::string(text) + "` lacks `_<idx>`");
  }
  STELE_ASSIGN_OR_RETURN(JoinSetId join_set_id, JoinSetId::Parse(text.substr(0, underscore)));
  STELE_ASSIGN_OR_RETURN(uint64_t idx, ParseIdx(text.substr(underscore + 1)));
  return DerivedSegment{std::move(join_set_id), idx};
}

struct ParsedPath {
  Ulid root;
  std::vector<DerivedSegment> path;
};

// Parses "<prefix><ULID>[.<segment>]*", the common shape of execution and
// delay ids.
Result<ParsedPath, IdParseError> ParsePrefixedPath(std::string_view text, std::string_view prefix,
                                                   std::string_view what) {
  if (text.substr(0, prefix.size()) != prefix) {
    return ParseError("invalid " + std::string(what) + " `" + std::string(text) +
                      "`: expected prefix `" + std::string(prefix) + "`");
  }
  std::string_view rest = text.substr(prefix.size());
  const size_t dot = rest.find('.');
  const std::optional<Ulid> root = Ulid::Parse(rest.substr(0, dot));
  if (!root) {
    return ParseError("invalid " + std::string(what) + " `" + std::string(text) +
                      "`: invalid ULID");
  }
  ParsedPath parsed{*root, {}};
  if (dot == std::string_view::npos) return parsed;
  rest = rest.substr(dot + 1);
  while (true) {
    const size_t next = rest.find('.');
    auto segment = ParseSegment(rest.substr(0, next));
    if (!segment) {
      return ParseError("invalid " + std::string(what) + " `" + std::string(text) +
                        "`: " + segment.error().message);
    }
    parsed.path.push_back(*std::move(segment));
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
  }
  return parsed;
}

void AppendSegment(std::string& out, const DerivedSegment& segment) {
  out.push_back('.');
  out += segment.join_set_id.ToString();
  out.push_back('_');
  out += std::to_string(segment.idx);
}

std::string FormatPath(std::string_view prefix, const Ulid& root,
                       const std::vector<DerivedSegment>& path) {
  std::string out(prefix);
  out += root.ToString();
  for (const DerivedSegment& segment : path) AppendSegment(out, segment);
  return out;
}

// ExecutionId made of `root` and the first `levels` segments of `path`.
ExecutionId Ancestor(const Ulid& root, const std::vector<DerivedSegment>& path, size_t levels) {
  if (levels == 0) return ExecutionId(root);
  return ExecutionIdDerived(root, std::vector<DerivedSegment>(path.begin(), path.begin() + levels));
}

// FNV-1a over bytes, then a splitmix64 finalizer so that ids differing only
// in the last bits still give unrelated seeds.
class SeedHasher {
 public:
  void AddU64(uint64_t value) {
    for (int shift = 56; shift >= 0; shift -= 8) AddByte(static_cast<uint8_t>(value >> shift));
  }
  void AddBytes(std::string_view bytes) {
    for (char c : bytes) AddByte(static_cast<uint8_t>(c));
  }
  void AddByte(uint8_t byte) {
    state_ ^= byte;
    state_ *= 0x100000001b3ULL;
  }
  uint64_t Finish() const {
    uint64_t z = state_ + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_ = 0xcbf29ce484222325ULL;
};

}  // namespace

// --- JoinSetId ---------------------------------------------------------------

bool JoinSetId::IsValidName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '/';
    if (!ok) return false;
  }
  return true;
}

Result<JoinSetId, IdParseError> JoinSetId::Create(JoinSetKind kind, std::string name) {
  if (!IsValidName(name)) {
    return ParseError("invalid join set name `" + name +
                      "`: must be non-empty ASCII alphanumerics, `-` or `/`");
  }
  return JoinSetId(kind, std::move(name));
}

Result<JoinSetId, IdParseError> JoinSetId::Parse(std::string_view text) {
  if (text.size() < 2 || text[1] != ':') {
    return ParseError("invalid join set id `" + std::string(text) + "`: expected `<kind>:<name>`");
  }
  JoinSetKind kind;
  switch (text[0]) {
    case 'o':
      kind = JoinSetKind::kOneOff;
      break;
    case 'n':
      kind = JoinSetKind::kNamed;
      break;
    case 'g':
      kind = JoinSetKind::kGenerated;
      break;
    case 'm':
      kind = JoinSetKind::kMessages;
      break;
    default:
      return ParseError("invalid join set id `" + std::string(text) +
                        "`: unknown kind, expected `o`, `n`, `g` or `m`");
  }
  return Create(kind, std::string(text.substr(2)));
}

std::string JoinSetId::ToString() const {
  std::string out;
  out.reserve(name_.size() + 2);
  out.push_back(KindCode(kind_));
  out.push_back(':');
  out += name_;
  return out;
}

// --- ExecutionIdDerived ----------------------------------------------------

ExecutionIdDerived::ExecutionIdDerived(Ulid root, std::vector<DerivedSegment> path)
    : root_(root), path_(std::move(path)) {
  STELE_CHECK(!path_.empty(), "a derived execution id needs at least one segment");
}

Result<ExecutionIdDerived, IdParseError> ExecutionIdDerived::Parse(std::string_view text) {
  STELE_ASSIGN_OR_RETURN(ParsedPath parsed,
                         ParsePrefixedPath(text, kExecutionIdPrefix, "execution id"));
  if (parsed.path.empty()) {
    return ParseError("invalid derived execution id `" + std::string(text) +
                      "`: top-level id has no join set segment");
  }
  return ExecutionIdDerived(parsed.root, std::move(parsed.path));
}

std::pair<ExecutionId, JoinSetId> ExecutionIdDerived::SplitToParts() const {
  return {Ancestor(root_, path_, path_.size() - 1), path_.back().join_set_id};
}

std::string ExecutionIdDerived::ToString() const {
  return FormatPath(kExecutionIdPrefix, root_, path_);
}

// --- ExecutionId -------------------------------------------------------------

Result<ExecutionId, IdParseError> ExecutionId::Parse(std::string_view text) {
  STELE_ASSIGN_OR_RETURN(ParsedPath parsed,
                         ParsePrefixedPath(text, kExecutionIdPrefix, "execution id"));
  if (parsed.path.empty()) return ExecutionId(parsed.root);
  return ExecutionId(ExecutionIdDerived(parsed.root, std::move(parsed.path)));
}

std::optional<ExecutionIdDerived> ExecutionId::AsDerived() const {
  if (path_.empty()) return std::nullopt;
  return ExecutionIdDerived(root_, path_);
}

ExecutionIdDerived ExecutionId::NextLevel(const JoinSetId& join_set_id, uint64_t idx) const {
  std::vector<DerivedSegment> path = path_;
  path.push_back(DerivedSegment{join_set_id, idx});
  return ExecutionIdDerived(root_, std::move(path));
}

// Part of the replay contract: the seed determines every random value a
// workflow draws, and replays compare those values against the persisted
// ones. Changing this function (the byte layout, the constants or the
// finalizer) makes every in-flight workflow fail with nondeterminism.
// Layout: root hi, root lo, then per segment kind code, name length, name
// bytes and idx; integers as 8 big-endian bytes.
uint64_t ExecutionId::RandomSeed() const {
  SeedHasher hasher;
  hasher.AddU64(root_.hi());
  hasher.AddU64(root_.lo());
  for (const DerivedSegment& segment : path_) {
    hasher.AddByte(static_cast<uint8_t>(KindCode(segment.join_set_id.kind())));
    hasher.AddU64(segment.join_set_id.name().size());
    hasher.AddBytes(segment.join_set_id.name());
    hasher.AddU64(segment.idx);
  }
  return hasher.Finish();
}

std::string ExecutionId::ToString() const { return FormatPath(kExecutionIdPrefix, root_, path_); }

// --- DelayId -----------------------------------------------------------------

Result<DelayId, IdParseError> DelayId::Parse(std::string_view text) {
  STELE_ASSIGN_OR_RETURN(ParsedPath parsed, ParsePrefixedPath(text, kDelayIdPrefix, "delay id"));
  if (parsed.path.empty()) {
    return ParseError("invalid delay id `" + std::string(text) + "`: missing `.<join set>_<idx>`");
  }
  DerivedSegment last = parsed.path.back();
  ExecutionId owner = Ancestor(parsed.root, parsed.path, parsed.path.size() - 1);
  return DelayId(std::move(owner), std::move(last.join_set_id), last.idx);
}

std::string DelayId::ToString() const {
  std::string out = FormatPath(kDelayIdPrefix, owner_.root(), owner_.path());
  AppendSegment(out, segment_);
  return out;
}

}  // namespace stele::core
