// Result<T, E> is part of libstele's public API (include/stele/result.h);
// code inside Stele includes it through this header, with STELE_CHECK.
#pragma once

#include "base/check.h"
#include "stele/result.h"
