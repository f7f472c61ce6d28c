// Fuzzes the id and ffqn parsers (core/ids.h, core/function_fqn.h,
// core/component_id.h) with the whole input as text. Each parser must
// reject or accept without crashing, and an accepted id must print back to
// text that parses to an equal id (the ids' round-trip contract).
#include "core/ids.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/component_id.h"
#include "core/function_fqn.h"
#include "fuzz_check.h"

namespace {

using namespace stele::core;  // NOLINT(google-build-using-namespace): fuzz target

template <class T>
void RoundTrip(std::string_view text) {
  auto parsed = T::Parse(text);
  if (!parsed) {
    FUZZ_CHECK(!parsed.error().message.empty());
    return;
  }
  const std::string printed = parsed->ToString();
  auto again = T::Parse(printed);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *parsed);
  FUZZ_CHECK(again->ToString() == printed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  RoundTrip<ExecutionId>(text);
  RoundTrip<ExecutionIdDerived>(text);
  RoundTrip<DelayId>(text);
  RoundTrip<JoinSetId>(text);
  RoundTrip<FunctionFqn>(text);
  RoundTrip<ExecutorId>(text);
  RoundTrip<RunId>(text);
  RoundTrip<InputContentDigest>(text);

  if (auto id = ExecutionId::Parse(text); id && !id->IsTopLevel()) {
    auto derived = id->AsDerived();
    FUZZ_CHECK(derived.has_value());
    auto [parent, join_set] = derived->SplitToParts();
    FUZZ_CHECK(parent.NextLevel(join_set, derived->path().back().idx) == *derived);
    (void)id->RandomSeed();
  }
  if (auto delay = DelayId::Parse(text)) {
    auto [owner, join_set] = delay->SplitToParts();
    FUZZ_CHECK(join_set == delay->join_set_id());
    FUZZ_CHECK(owner == delay->owner());
  }
  return 0;
}
