#include "core/list_key.h"

#include <string_view>

#include "base/check.h"

namespace stele::core {
namespace {

char KindLetter(JoinSetKind kind) {
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

// A digit string without leading zeros, so that numbers compare by value as
// text: the count of digits of its length, its length, the digits
// (2 -> "112", 10 -> "1210"). Self-delimiting.
void AppendNumber(std::string& out, std::string_view digits) {
  const std::string length = std::to_string(digits.size());
  out += std::to_string(length.size());
  out += length;
  out += digits;
}

// A join set name with each digit run that does not start with '0' as
// AppendNumber writes it; other characters (and runs with a leading zero,
// kept as they are so that distinct names stay distinct) unchanged. Then
// '!', below every name character: a name sorts before its extensions.
void AppendNaturalName(std::string& out, std::string_view name) {
  size_t i = 0;
  while (i < name.size()) {
    size_t end = i;
    while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
    if (end == i) {
      out.push_back(name[i++]);
    } else if (name[i] == '0') {
      out.append(name.substr(i, end - i));
      i = end;
    } else {
      AppendNumber(out, name.substr(i, end - i));
      i = end;
    }
  }
  out.push_back('!');
}

}  // namespace

std::string ListKey(const ExecutionId& id) {
  std::string out("E_");  // as ExecutionId::ToString
  out += id.root().ToString();
  for (const DerivedSegment& segment : id.path()) {
    out.push_back('.');
    out.push_back(KindLetter(segment.join_set_id.kind()));
    AppendNaturalName(out, segment.join_set_id.name());
    AppendNumber(out, std::to_string(segment.idx));
  }
  return out;
}

}  // namespace stele::core
