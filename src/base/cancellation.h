// CancellationToken is part of libstele's public API
// (include/stele/cancellation.h).
#pragma once

#include "stele/cancellation.h"
