// Conversions between the public result type (stele::ExecutionResult) and
// the core one (core::SupportedFunctionReturnValue).
//
// Threading: pure functions.
#pragma once

#include "core/return_value.h"
#include "stele/execution_result.h"

namespace stele::runtime::native {

ExecutionResult ToPublic(const core::SupportedFunctionReturnValue& value);
core::SupportedFunctionReturnValue ToCore(const ExecutionResult& result);

}  // namespace stele::runtime::native
