// Clock, SystemClock, ManualClock and SharedClock are part of libstele's
// public API (include/stele/clock.h); code inside Stele includes them
// through this header, with DateTime's helpers (base/time.h).
#pragma once

#include "base/time.h"
#include "stele/clock.h"

namespace stele {

// `clock`, after checking (STELE_CHECK) that it is set: for constructors
// that keep it. `what` is the message of the failed check.
SharedClock CheckedClock(SharedClock clock, const char* what);

}  // namespace stele
