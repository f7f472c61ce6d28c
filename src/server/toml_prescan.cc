#include "server/toml_prescan.h"

#include <cstddef>

namespace stele::server {

int LineOfNonAsciiOutsideStrings(std::string_view text) {
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral } in = In::kCode;
  int line = 1;
  bool token_start = true;
  auto starts = [&](size_t i, std::string_view token) {
    return text.substr(i, token.size()) == token;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    switch (in) {
      case In::kCode:
        if (static_cast<unsigned char>(c) >= 0x80) return line;
        if (c == '#') {
          in = In::kComment;
        } else if ((c == '"' || c == '\'') && !token_start) {
          // Part of a bare value: not a string.
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
        } else if (c == '\n' || c == '=' || c == '[' || c == '{' || c == ',' || c == '.') {
          token_start = true;
        } else if (c != ' ' && c != '\t' && c != '\r') {
          token_start = false;
        }
        if (in != In::kCode) token_start = false;
        break;
      case In::kComment:
        if (c == '\n') {
          in = In::kCode;
          token_start = true;
        }
        break;
      case In::kBasic:
        if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
          ++i;
        } else if (c == '"' || c == '\n') {
          in = In::kCode;
          token_start = c == '\n';
        }
        break;
      case In::kLiteral:
        if (c == '\'' || c == '\n') {
          in = In::kCode;
          token_start = c == '\n';
        }
        break;
      case In::kMultiBasic:
        if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
          ++i;
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
  return 0;
}

}  // namespace stele::server
