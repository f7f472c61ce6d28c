// The service's parsing of the faces' text inputs, with the messages every
// face shows. Internal to src/service.
//
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "core/component_id.h"
#include "core/function_fqn.h"
#include "core/ids.h"
#include "service/service_error.h"

namespace stele::service::internal {

// Longest id accepted from a face (ids nest one segment per level).
inline constexpr size_t kMaxIdBytes = 512;

// The reason alone of a core parse error of `text`: core messages often
// name the text already ("invalid function name `x`: expected ..."); the
// service's messages name it once, with what was expected.
std::string Reason(const std::string& message, std::string_view text);

Result<core::ExecutionId, ServiceError> ParseExecutionId(std::string_view text);
Result<core::DelayId, ServiceError> ParseDelayId(std::string_view text);
Result<core::FunctionFqn, ServiceError> ParseFfqn(std::string_view text);
// `what` names the input in the message ("old digest").
Result<core::InputContentDigest, ServiceError> ParseDigest(std::string_view text,
                                                           std::string_view what);

}  // namespace stele::service::internal
