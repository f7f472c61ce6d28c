// Names for Stele's threads, as `top -H`, `ps -L`, perf and gdb show them.
//
// A server runs a dozen kinds of threads (the SQLite writer, the HTTP I/O
// loop, workflow and activity runs, timers); named, an operator can see
// which of them uses the CPU, and a profile can be read by kind.
//
// Threading: each call names the calling thread only.
#pragma once

#include <string_view>

namespace stele {

// Names the calling thread. Linux keeps 15 bytes; longer names are cut.
// Best effort: a platform without thread names ignores it.
void NameThisThread(std::string_view name);

}  // namespace stele
