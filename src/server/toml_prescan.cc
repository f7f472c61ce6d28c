#include "server/toml_prescan.h"

#include <cstddef>
#include <string>

namespace stele::server {

namespace {

// What toml++ expects at the current point of the code (outside strings
// and comments). Only at a key or a value does a quote open a string.
enum class Expect { kKey, kValue, kOther };
// The bare token being read, if any: a bare key ends at the first
// character that cannot be in one; a bare value (numbers, booleans,
// dates) runs up to a value terminator, as toml++ scans it.
enum class Bare { kNone, kKey, kValue };

bool IsBareKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool IsSpaceOrLineBreak(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsValueTerminator(char c) {
  return IsSpaceOrLineBreak(c) || c == ']' || c == '}' || c == ',' || c == '#';
}

}  // namespace

std::optional<TomlHazard> FindTomlHazard(std::string_view text) {
  static constexpr std::string_view kInCode =
      "a non-ASCII character outside a string or a comment (keys that are not quoted must be "
      "ASCII)";
  static constexpr std::string_view kAfterBackslash =
      "a non-ASCII character after a backslash in a string (escapes are ASCII: \\n, \\u00E9, "
      "...)";
  static constexpr std::string_view kAfterLineEndingBackslash =
      "a non-ASCII character right after a line-ending backslash in a multi-line string (the "
      "TOML reader cannot take it there; write it as \\uXXXX)";
  auto is_ascii = [](char c) { return static_cast<unsigned char>(c) < 0x80; };
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral } in = In::kCode;
  int line = 1;
  Expect expect = Expect::kKey;
  Bare bare = Bare::kNone;
  std::string nesting;  // 'a' per open array, 't' per open inline table
  auto starts = [&](size_t i, std::string_view token) {
    return text.substr(i, token.size()) == token;
  };
  // A line break outside strings: arrays and inline tables may span lines;
  // at the top level a new line starts with a key.
  auto line_break = [&] {
    if (nesting.empty()) expect = Expect::kKey;
  };
  // toml++ skips a UTF-8 byte order mark at the start.
  const size_t start = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    switch (in) {
      case In::kCode:
        if (!is_ascii(c)) return TomlHazard{line, kInCode};
        if (bare == Bare::kKey && IsBareKeyChar(c)) break;
        if (bare == Bare::kValue && !IsValueTerminator(c)) break;
        bare = Bare::kNone;
        if (c == '#') {
          in = In::kComment;
        } else if ((c == '"' || c == '\'') && expect == Expect::kOther) {
          // Not where toml++ reads a string: it fails there, or reads a bare
          // value that must not hide a non-ASCII byte (`x = -a."b`).
          bare = Bare::kValue;
        } else if (starts(i, "\"\"\"")) {
          in = In::kMultiBasic;
          i += 2;
        } else if (starts(i, "\'\'\'")) {
          in = In::kMultiLiteral;
          i += 2;
        } else if (c == '"') {
          in = In::kBasic;
        } else if (c == '\'') {
          in = In::kLiteral;
        } else if (c == '\n') {
          line_break();
        } else if (c == ' ' || c == '\t' || c == '\r') {
        } else if (c == '=') {
          expect = Expect::kValue;
        } else if (c == '.') {
          expect = expect == Expect::kValue ? Expect::kOther : Expect::kKey;
        } else if (c == '[') {
          // A table header at the start of a line; an array at a value.
          if (expect == Expect::kValue) {
            nesting.push_back('a');
          } else if (expect == Expect::kOther) {
            bare = Bare::kValue;
          }
        } else if (c == '{') {
          if (expect == Expect::kValue) {
            nesting.push_back('t');
            expect = Expect::kKey;
          } else {
            bare = Bare::kValue;
          }
        } else if (c == ']' || c == '}') {
          if (!nesting.empty()) nesting.pop_back();
          expect = Expect::kOther;
        } else if (c == ',') {
          if (nesting.empty()) {
            expect = Expect::kOther;
          } else {
            expect = nesting.back() == 'a' ? Expect::kValue : Expect::kKey;
          }
        } else {
          bare = expect == Expect::kKey && IsBareKeyChar(c) ? Bare::kKey : Bare::kValue;
          expect = Expect::kOther;
        }
        if (in != In::kCode && in != In::kComment) expect = Expect::kOther;
        break;
      case In::kComment:
        if (c == '\n') {
          in = In::kCode;
          line_break();
        }
        break;
      case In::kBasic:
        if (c == '\\' && i + 1 < text.size() && !is_ascii(text[i + 1])) {
          return TomlHazard{line, kAfterBackslash};
        } else if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
          ++i;
        } else if (c == '"' || c == '\n') {
          in = In::kCode;
          if (c == '\n') line_break();
        }
        break;
      case In::kLiteral:
        if (c == '\'' || c == '\n') {
          in = In::kCode;
          if (c == '\n') line_break();
        }
        break;
      case In::kMultiBasic:
        if (c == '\\' && i + 1 < text.size()) {
          const char next = text[i + 1];
          if (!is_ascii(next)) return TomlHazard{line, kAfterBackslash};
          if (!IsSpaceOrLineBreak(next)) {
            ++i;  // an escape
            break;
          }
          // A line-ending backslash trims the whitespace and line breaks
          // that follow it; toml++ asks about each, up to the first other
          // character.
          size_t k = i + 1;
          while (k < text.size() && IsSpaceOrLineBreak(text[k])) {
            if (text[k] == '\n') ++line;
            ++k;
          }
          if (k < text.size() && !is_ascii(text[k])) {
            return TomlHazard{line, kAfterLineEndingBackslash};
          }
          i = k - 1;
        } else if (starts(i, "\"\"\"")) {
          i += 2;
          // Up to two more quotes belong to the content ("""a"""").
          while (i + 1 < text.size() && text[i + 1] == '"') ++i;
          in = In::kCode;
        }
        break;
      case In::kMultiLiteral:
        if (starts(i, "\'\'\'")) {
          i += 2;
          while (i + 1 < text.size() && text[i + 1] == '\'') ++i;
          in = In::kCode;
        }
        break;
    }
  }
  return std::nullopt;
}

}  // namespace stele::server
