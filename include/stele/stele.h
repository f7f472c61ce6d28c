// stele/stele.h — the whole public libstele API in one include.
#pragma once

#include "stele/activity.h"
#include "stele/clock.h"
#include "stele/defaults.h"
#include "stele/engine.h"
#include "stele/error.h"
#include "stele/execution_result.h"
#include "stele/json.h"
#include "stele/task.h"
#include "stele/workflow_context.h"
