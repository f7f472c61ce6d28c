// Identifiers of the execution model, with the exact text formats of
// docs/model.md §2:
//   ExecutionId (top level)  E_<ULID>
//   ExecutionIdDerived       E_<ULID>.<join-set-id>_<idx>[.<join-set-id>_<idx>...]
//   DelayId                  Delay_<root ULID>[.<js>_<idx>...].<join-set-id>_<idx>
//   ExecutorId / RunId       Exr_<ULID> / Run_<ULID>
//   JoinSetId                <kind>:<name>, kind o (one-off) | n (named) | g (generated)
//                            | m (messages of a channel),
//                            name of ASCII alphanumerics, '-' and '/'.
// Indices start at 1. Every id parses back from its string; derived ids and
// delay ids split back into (parent execution, join set) without a lookup.
//
// All types are immutable values; thread-compatible.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/ulid.h"

namespace stele::core {

// Parse errors of ids carry a human-readable reason.
struct IdParseError {
  std::string message;
  friend bool operator==(const IdParseError&, const IdParseError&) = default;
};

// kMessages: `m:<channel>`, the join set a channel's messages arrive in
// (docs/model.md §2.2); never created by an event, never closed.
enum class JoinSetKind { kOneOff, kNamed, kGenerated, kMessages };

class JoinSetId {
 public:
  // Validates the name charset (non-empty; [A-Za-z0-9/-]).
  static Result<JoinSetId, IdParseError> Create(JoinSetKind kind, std::string name);
  // Parses "<kind>:<name>".
  static Result<JoinSetId, IdParseError> Parse(std::string_view text);
  static bool IsValidName(std::string_view name);

  JoinSetKind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  std::string ToString() const;

  friend bool operator==(const JoinSetId&, const JoinSetId&) = default;
  friend auto operator<=>(const JoinSetId&, const JoinSetId&) = default;

 private:
  JoinSetId(JoinSetKind kind, std::string name) : kind_(kind), name_(std::move(name)) {}
  JoinSetKind kind_ = JoinSetKind::kOneOff;
  std::string name_;
};

// A ULID with a fixed textual prefix: "<Prefix>_<ULID>".
template <class Tag>
class PrefixedUlid {
 public:
  explicit PrefixedUlid(Ulid ulid) : ulid_(ulid) {}
  static PrefixedUlid Generate() { return PrefixedUlid(GenerateUlid()); }
  static Result<PrefixedUlid, IdParseError> Parse(std::string_view text) {
    constexpr std::string_view kPrefix = Tag::kPrefix;
    if (text.size() <= kPrefix.size() + 1 || text.substr(0, kPrefix.size()) != kPrefix ||
        text[kPrefix.size()] != '_') {
      return Unexpected(IdParseError{"expected prefix `" + std::string(kPrefix) + "_` in `" +
                                     std::string(text) + "`"});
    }
    auto ulid = Ulid::Parse(text.substr(kPrefix.size() + 1));
    if (!ulid) return Unexpected(IdParseError{"invalid ULID in `" + std::string(text) + "`"});
    return PrefixedUlid(*ulid);
  }
  const Ulid& ulid() const { return ulid_; }
  std::string ToString() const { return std::string(Tag::kPrefix) + "_" + ulid_.ToString(); }
  friend bool operator==(const PrefixedUlid&, const PrefixedUlid&) = default;
  friend auto operator<=>(const PrefixedUlid&, const PrefixedUlid&) = default;

 private:
  Ulid ulid_;
};

struct ExecutorIdTag {
  static constexpr std::string_view kPrefix = "Exr";
};
struct RunIdTag {
  static constexpr std::string_view kPrefix = "Run";
};
using ExecutorId = PrefixedUlid<ExecutorIdTag>;
using RunId = PrefixedUlid<RunIdTag>;

// One level of a derived id: the join set in the parent and the position of
// the child (or delay) in it, from 1.
struct DerivedSegment {
  JoinSetId join_set_id;
  uint64_t idx = 0;
  friend bool operator==(const DerivedSegment&, const DerivedSegment&) = default;
  friend auto operator<=>(const DerivedSegment&, const DerivedSegment&) = default;
};

class ExecutionId;

// Id of a child execution. Always has at least one segment.
class ExecutionIdDerived {
 public:
  // REQUIRES: !path.empty()
  ExecutionIdDerived(Ulid root, std::vector<DerivedSegment> path);
  static Result<ExecutionIdDerived, IdParseError> Parse(std::string_view text);

  const Ulid& root() const { return root_; }
  const std::vector<DerivedSegment>& path() const { return path_; }
  // (parent execution, join set in the parent) — routes a child's result.
  std::pair<ExecutionId, JoinSetId> SplitToParts() const;
  std::string ToString() const;

  friend bool operator==(const ExecutionIdDerived&, const ExecutionIdDerived&) = default;
  friend auto operator<=>(const ExecutionIdDerived&, const ExecutionIdDerived&) = default;

 private:
  Ulid root_;
  std::vector<DerivedSegment> path_;
};

class ExecutionId {
 public:
  // Top-level id.
  explicit ExecutionId(Ulid root) : root_(root) {}
  ExecutionId(const ExecutionIdDerived& derived)  // NOLINT: a child id is an execution id
      : root_(derived.root()), path_(derived.path()) {}
  static ExecutionId Generate() { return ExecutionId(GenerateUlid()); }
  static Result<ExecutionId, IdParseError> Parse(std::string_view text);

  bool IsTopLevel() const { return path_.empty(); }
  // nullopt for a top-level id.
  std::optional<ExecutionIdDerived> AsDerived() const;
  const Ulid& root() const { return root_; }
  const std::vector<DerivedSegment>& path() const { return path_; }
  // Id of the idx-th child of this execution in `join_set_id`.
  ExecutionIdDerived NextLevel(const JoinSetId& join_set_id, uint64_t idx) const;
  // Seed of the workflow PRNG: unique per execution, stable across replays.
  // Part of the replay contract: the function must never change (ids.cc).
  uint64_t RandomSeed() const;
  std::string ToString() const;

  friend bool operator==(const ExecutionId&, const ExecutionId&) = default;
  friend auto operator<=>(const ExecutionId&, const ExecutionId&) = default;

 private:
  Ulid root_;
  std::vector<DerivedSegment> path_;
};

// Id of a durable timer requested by `owner` in `join_set_id`.
class DelayId {
 public:
  DelayId(ExecutionId owner, JoinSetId join_set_id, uint64_t idx)
      : owner_(std::move(owner)), segment_{std::move(join_set_id), idx} {}
  static Result<DelayId, IdParseError> Parse(std::string_view text);

  const ExecutionId& owner() const { return owner_; }
  const JoinSetId& join_set_id() const { return segment_.join_set_id; }
  uint64_t idx() const { return segment_.idx; }
  std::pair<ExecutionId, JoinSetId> SplitToParts() const { return {owner_, segment_.join_set_id}; }
  std::string ToString() const;

  friend bool operator==(const DelayId&, const DelayId&) = default;
  friend auto operator<=>(const DelayId&, const DelayId&) = default;

 private:
  ExecutionId owner_;
  DerivedSegment segment_;
};

}  // namespace stele::core

template <>
struct std::hash<stele::core::ExecutionId> {
  size_t operator()(const stele::core::ExecutionId& id) const {
    return std::hash<std::string>()(id.ToString());
  }
};
