// The process's V8: one platform, initialised once with Stele's flags, for
// every embedder of V8 in the process (the wasm adapter here, the
// JavaScript runtime in runtime/js). V8 can be initialised only once per
// process, so every user goes through this function.
//
// Threading: thread-safe (a function-local static). Ownership: the platform
// lives until the process exits (never disposed: threads may still hold
// isolates during static destruction).
#pragma once

#include <v8-platform.h>

namespace stele::wasm {

// V8's platform, initialised (with Stele's flags) on first use.
v8::Platform* V8Platform();

}  // namespace stele::wasm
