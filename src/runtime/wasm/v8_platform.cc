#include "runtime/wasm/v8_platform.h"

#include <libplatform/libplatform.h>
#include <v8.h>

#include "base/check.h"

namespace stele::wasm {

v8::Platform* V8Platform() {
  static v8::Platform* platform = [] {
    // The flags are docs/wasm_engine.md's ("V8 specifics"); they must be set
    // before V8 initialises and hold for every isolate of the process.
    const char flags[] = "--no-experimental-wasm-eh --no-experimental-wasm-threads";
    v8::V8::SetFlagsFromString(flags, sizeof(flags) - 1);
    // Leaked on purpose: V8 cannot be re-initialised, and disposing it during
    // static destruction would race with threads still holding isolates.
    v8::Platform* p = v8::platform::NewDefaultPlatform().release();
    v8::V8::InitializePlatform(p);
    STELE_CHECK(v8::V8::Initialize(), "V8 initialisation failed");
    return p;
  }();
  return platform;
}

}  // namespace stele::wasm
