// Shared vocabulary of the conformance tests: fixed instants, ids,
// request builders, result matchers and gtest printers. Written only against
// the storage contract and the core model, never against a backend.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/result.h"
#include "core/execution_event.h"
#include "core/pending_state.h"
#include "storage/db_errors.h"
#include "storage/db_external_api.h"
#include "storage/requests.h"

namespace stele::storage::conformance {

using namespace std::chrono_literals;  // NOLINT: 5s, 100ms in timestamps

// --- Time ----------------------------------------------------------------------
// Every test uses explicit instants relative to kT0 (2026-01-01T00:00:00Z);
// the storage layer never reads a clock for semantics.
inline const DateTime kT0{std::chrono::microseconds(1'767'225'600'000'000)};

// --- Ids and names -------------------------------------------------------------
const core::FunctionFqn& FfqnA();                 // testing:conformance/ifc.fn-a
const core::FunctionFqn& FfqnB();                 // testing:conformance/ifc.fn-b
core::ComponentId ComponentA();                   // activity_wasm:comp_a, digest 0xaa..
core::ComponentId ComponentB();                   // workflow:comp_b, digest 0xbb..
core::InputContentDigest DigestOf(uint8_t byte);  // all 32 bytes == byte
// A top-level id whose text sorts by `n` (same ULID timestamp, lo = n), for
// tests that depend on id order.
ExecutionId TopLevelId(uint64_t n);
// A fresh random top-level id.
ExecutionId NewId();
core::JoinSetId NamedJoinSet(const std::string& name);
core::ExecutionIdDerived ChildId(const ExecutionId& parent, const core::JoinSetId& join_set,
                                 uint64_t idx);

// The identity of one run of one executor (what a lock belongs to).
struct Runner {
  core::ExecutorId executor_id;
  core::RunId run_id;
  static Runner New();
  core::LockedBy locked_by() const { return {executor_id, run_id}; }
};

// --- Request builders ----------------------------------------------------------
// Top-level execution of FfqnA on ComponentA, params [], scheduled at
// `created_at`. Tests adjust the public fields as needed.
CreateRequest CreateReq(const ExecutionId& id, DateTime created_at);
// A child of the parent encoded in `child`, in the join set encoded in it.
CreateRequest ChildCreateReq(const core::ExecutionIdDerived& child, DateTime created_at);

core::ComponentRetryConfig RetryConfig();  // max_retries 3, backoff 100 ms
AppendRequest LockedReq(DateTime at, const Runner& runner, DateTime lock_expires_at,
                        const core::ComponentId& component = ComponentA());
AppendRequest UnlockedReq(DateTime at, DateTime backoff_expires_at);
AppendRequest TemporarilyFailedReq(DateTime at, DateTime backoff_expires_at);
AppendRequest TimedOutReq(DateTime at, DateTime backoff_expires_at);
AppendRequest FinishedReq(DateTime at, core::SupportedFunctionReturnValue result);
AppendRequest HistoryReq(DateTime at, core::HistoryEvent event);
AppendRequest PersistReq(DateTime at);
AppendRequest JoinSetCreateReq(DateTime at, const core::JoinSetId& join_set);
AppendRequest ChildRequestReq(DateTime at, const core::ExecutionIdDerived& child);
AppendRequest DelayRequestReq(DateTime at, const core::DelayId& delay, DateTime expires_at);
AppendRequest JoinNextReq(DateTime at, const core::JoinSetId& join_set, DateTime run_expires_at,
                          bool closing = false);

core::SupportedFunctionReturnValue OkResult(core::Json value = core::Json());
core::SupportedFunctionReturnValue ErrResult(core::Json value = core::Json());
core::SupportedFunctionReturnValue FailureResult(core::ExecutionFailureKind kind);

// The response a finished child gives its parent, with
// finished_version = `finished_version`.
AppendResponseToExecution ChildResponse(const core::ExecutionIdDerived& child, DateTime at,
                                        Version finished_version,
                                        core::SupportedFunctionReturnValue result);

// --- Call shorthands ----------------------------------------------------------
// LockPendingByFfqns({FfqnA}) on ComponentA, due by and created at `at`.
Result<std::vector<LockedExecution>, DbErrorGeneric> LockPendingA(DbExecutor& db,
                                                                  uint32_t batch_size, DateTime at,
                                                                  const Runner& runner,
                                                                  DateTime lock_expires_at);
// LockOne on ComponentA at `version`, created at `at`.
Result<LockedExecution, DbErrorWrite> LockOneAt(DbExecutor& db, const ExecutionId& id,
                                                Version version, DateTime at, const Runner& runner,
                                                DateTime lock_expires_at);
// Creates `id` (scheduled at `at`) and locks it by `runner` at `at`;
// returns the next version (2). Throws (failing the test) on any error.
Version CreateLocked(DbConnection& db, const ExecutionId& id, DateTime at, const Runner& runner,
                     DateTime lock_expires_at);
// Appends a DelayRequest (expiring at `expires_at`) of each of `delays` at
// `version`, created at `at`; returns the next version. A delay response is
// admitted only for a requested delay. Throws (failing the test) on error.
Version RequestDelays(DbConnection& db, const ExecutionId& id, Version version, DateTime at,
                      const std::vector<core::DelayId>& delays, DateTime expires_at);
// Creates `children` of `parent` as its step would: their ChildExecutionRequests
// appended at `version` with their creation (children exist only requested
// by their parent); returns the parent's next version. Throws on error.
Version CreateChildren(DbConnection& db, const ExecutionId& parent, Version version, DateTime at,
                       const std::vector<core::ExecutionIdDerived>& children);
std::vector<ExecutionId> IdsOf(const std::vector<LockedExecution>& locked);
std::vector<ExecutionId> IdsOf(const std::vector<ExecutionWithState>& rows);
std::vector<ExpiredLock> ExpiredLocksOf(const std::vector<ExpiredTimer>& timers);
std::vector<ExpiredDelay> ExpiredDelaysOf(const std::vector<ExpiredTimer>& timers);

// --- Pending-state builders (for EXPECT_EQ on GetPendingState) -----------------
core::PendingState PendingAtState(
    DateTime scheduled_at, std::optional<core::LockedBy> last_lock,
    const core::InputContentDigest& digest = ComponentA().input_digest);
core::PendingState LockedState(const Runner& runner, DateTime lock_expires_at,
                               const core::InputContentDigest& digest = ComponentA().input_digest);
core::PendingState BlockedState(const core::JoinSetId& join_set, DateTime lock_expires_at,
                                bool closing = false,
                                const core::InputContentDigest& digest = ComponentA().input_digest);

// --- Results -------------------------------------------------------------------
std::string ErrorText(const DbErrorGeneric& error);
std::string ErrorText(const DbErrorWrite& error);
std::string ErrorText(const DbErrorRead& error);
std::string ErrorText(const DbErrorReadWithTimeout& error);
std::string ErrorText(const DbErrorWriteNonRetriable& error);

// The value of a Result that the test expects to succeed. On an error it
// throws, which gtest reports as a failure of the current test (with the
// error text) without aborting the whole binary.
template <class T, class E>
T Must(Result<T, E> result) {
  if (!result.has_value()) {
    throw std::runtime_error("unexpected storage error: " + ErrorText(result.error()));
  }
  if constexpr (!std::is_void_v<T>) return *std::move(result);
}

bool IsCloseError(const DbErrorGeneric& error);
bool IsCloseError(const DbErrorWrite& error);
bool IsCloseError(const DbErrorRead& error);
bool IsCloseError(const DbErrorReadWithTimeout& error);

MATCHER(IsOk, "succeeds") {
  if (arg.has_value()) return true;
  *result_listener << "failed with " << ErrorText(arg.error());
  return false;
}

MATCHER(IsNotFound, "fails with NotFound") {
  if (arg.has_value()) return false;
  *result_listener << "error: " << ErrorText(arg.error());
  return arg.error().IsNotFound();
}

MATCHER_P(IsNonRetriable, kind, "fails with the given non-retriable error") {
  if (arg.has_value()) return false;
  *result_listener << "error: " << ErrorText(arg.error());
  return arg.error().IsNonRetriable(kind);
}

MATCHER_P2(IsVersionConflict, expected, requested,
           "fails with VersionConflict{expected: " + ::testing::PrintToString(expected) +
               ", requested: " + ::testing::PrintToString(requested) + "}") {
  if (arg.has_value()) return false;
  *result_listener << "error: " << ErrorText(arg.error());
  return arg.error().IsVersionConflict() &&
         arg.error().non_retriable().expected() == Version(expected) &&
         arg.error().non_retriable().requested() == Version(requested);
}

MATCHER_P(IsTimeout, outcome, "fails with Timeout of the given outcome") {
  if (arg.has_value()) return false;
  *result_listener << "error: " << ErrorText(arg.error());
  return arg.error().IsTimeout() && arg.error().timeout() == outcome;
}

MATCHER(IsClosed, "fails with DbErrorGeneric::Close") {
  if (arg.has_value()) return false;
  *result_listener << "error: " << ErrorText(arg.error());
  return IsCloseError(arg.error());
}

inline constexpr auto kValidationFailed = DbErrorWriteNonRetriable::Kind::kValidationFailed;
inline constexpr auto kIllegalState = DbErrorWriteNonRetriable::Kind::kIllegalState;
inline constexpr auto kConflict = DbErrorWriteNonRetriable::Kind::kConflict;
inline constexpr auto kVersionConflict = DbErrorWriteNonRetriable::Kind::kVersionConflict;

// Canonical JSON text of a value (field order preserved), for comparisons
// that must see the order.
std::string JsonText(const core::Json& json);

}  // namespace stele::storage::conformance

// --- gtest printers --------------------------------------------------------------
// Found by ADL, so failures show values instead of bytes.
namespace stele {
template <class T, class E>
void PrintTo(const Result<T, E>& result, std::ostream* os) {
  if (!result.has_value()) {
    *os << "Err(" << storage::conformance::ErrorText(result.error()) << ")";
  } else if constexpr (std::is_void_v<T>) {
    *os << "Ok";
  } else {
    *os << "Ok(" << ::testing::PrintToString(*result) << ")";
  }
}
}  // namespace stele

namespace stele::core {
void PrintTo(const Version& version, std::ostream* os);
void PrintTo(const ExecutionId& id, std::ostream* os);
void PrintTo(const PendingState& state, std::ostream* os);
void PrintTo(const ExecutionEvent& event, std::ostream* os);
void PrintTo(const JoinSetResponseEventOuter& response, std::ostream* os);
void PrintTo(const SupportedFunctionReturnValue& value, std::ostream* os);
}  // namespace stele::core

namespace stele::storage {
void PrintTo(const LockedExecution& locked, std::ostream* os);
void PrintTo(const ExpiredLock& expired, std::ostream* os);
void PrintTo(const ExpiredDelay& expired, std::ostream* os);
void PrintTo(const ExecutionWithState& row, std::ostream* os);
void PrintTo(const ResponseWithCursor& response, std::ostream* os);
}  // namespace stele::storage
