// Fuzzes the TOML config loader (server/config.h ParseConfig): the input is
// the text of a stele.toml. It must parse into a config or into errors that
// name a key and a line, never crash; `${VAR}` interpolation sees a fixed
// fake environment, relative paths resolve against /fuzz. Durations go
// through ParseDurationText as well.
#include "server/config.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stele::server;  // NOLINT(google-build-using-namespace): fuzz target
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const EnvLookup kEnv = [](const std::string& name) -> std::optional<std::string> {
    if (name == "TOKEN") return std::string("s3cret");
    if (name == "DIR") return std::string("/srv/stele");
    if (name == "EMPTY") return std::string();
    if (name == "NESTED") return std::string("${TOKEN}");
    return std::nullopt;
  };
  auto config = ParseConfig(text, "stele.toml", "/fuzz", kEnv);
  if (!config) {
    FUZZ_CHECK(!config.error().empty());
    FUZZ_CHECK(!FormatErrors(config.error()).empty());
  }
  if (size < 64) (void)ParseDurationText(text);
  return 0;
}
