// SourceLocation is part of libstele's public API
// (include/stele/source_location.h).
#pragma once

#include "stele/source_location.h"
