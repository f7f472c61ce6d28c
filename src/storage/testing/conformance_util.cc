#include "storage/testing/conformance_util.h"

#include <utility>

#include "base/time.h"
#include "base/ulid.h"
#include "core/json_codec.h"

namespace stele::storage::conformance {

namespace {

core::FunctionFqn ParseFfqn(const char* text) {
  auto ffqn = core::FunctionFqn::Parse(text);
  STELE_CHECK(ffqn.has_value(), "test ffqn must parse");
  return *ffqn;
}

// ULID timestamp of TopLevelId: kT0 in milliseconds.
constexpr uint64_t kTopLevelIdMs = 1'767'225'600'000;

}  // namespace

const core::FunctionFqn& FfqnA() {
  static const core::FunctionFqn* ffqn =
      new core::FunctionFqn(ParseFfqn("testing:conformance/ifc.fn-a"));
  return *ffqn;
}

const core::FunctionFqn& FfqnB() {
  static const core::FunctionFqn* ffqn =
      new core::FunctionFqn(ParseFfqn("testing:conformance/ifc.fn-b"));
  return *ffqn;
}

core::InputContentDigest DigestOf(uint8_t byte) {
  core::InputContentDigest::Bytes bytes;
  bytes.fill(byte);
  return core::InputContentDigest(bytes);
}

core::ComponentId ComponentA() {
  return core::ComponentId{core::ComponentType::kActivityWasm, "comp_a", DigestOf(0xaa)};
}

core::ComponentId ComponentB() {
  return core::ComponentId{core::ComponentType::kWorkflow, "comp_b", DigestOf(0xbb)};
}

ExecutionId TopLevelId(uint64_t n) { return ExecutionId(Ulid(kTopLevelIdMs << 16, n)); }

ExecutionId NewId() { return ExecutionId::Generate(); }

core::JoinSetId NamedJoinSet(const std::string& name) {
  auto join_set = core::JoinSetId::Create(core::JoinSetKind::kNamed, name);
  STELE_CHECK(join_set.has_value(), "test join set name must be valid");
  return *join_set;
}

core::ExecutionIdDerived ChildId(const ExecutionId& parent, const core::JoinSetId& join_set,
                                 uint64_t idx) {
  return parent.NextLevel(join_set, idx);
}

Runner Runner::New() { return Runner{core::ExecutorId::Generate(), core::RunId::Generate()}; }

CreateRequest CreateReq(const ExecutionId& id, DateTime created_at) {
  return CreateRequest{created_at, id,           FfqnA(), core::Json::array(), std::nullopt,
                       created_at, ComponentA(), {},      std::nullopt};
}

CreateRequest ChildCreateReq(const core::ExecutionIdDerived& child, DateTime created_at) {
  CreateRequest req = CreateReq(ExecutionId(child), created_at);
  req.parent = child.SplitToParts();
  return req;
}

core::ComponentRetryConfig RetryConfig() {
  return core::ComponentRetryConfig{3u, core::Duration::FromMillis(100)};
}

AppendRequest LockedReq(DateTime at, const Runner& runner, DateTime lock_expires_at,
                        const core::ComponentId& component) {
  return AppendRequest{at, core::Locked{component, runner.executor_id, runner.run_id,
                                        lock_expires_at, RetryConfig()}};
}

AppendRequest UnlockedReq(DateTime at, DateTime backoff_expires_at) {
  return AppendRequest{at, core::Unlocked{backoff_expires_at, "limit reached"}};
}

AppendRequest TemporarilyFailedReq(DateTime at, DateTime backoff_expires_at) {
  return AppendRequest{at, core::TemporarilyFailed{backoff_expires_at, "trap", "detail", {}}};
}

AppendRequest TimedOutReq(DateTime at, DateTime backoff_expires_at) {
  return AppendRequest{at, core::TemporarilyTimedOut{backoff_expires_at, {}}};
}

AppendRequest FinishedReq(DateTime at, core::SupportedFunctionReturnValue result) {
  return AppendRequest{at, core::Finished{std::move(result), {}}};
}

AppendRequest HistoryReq(DateTime at, core::HistoryEvent event) {
  return AppendRequest{at, core::HistoryEventRequest{std::move(event)}};
}

AppendRequest PersistReq(DateTime at) {
  return HistoryReq(at, core::HistoryPersist{{1, 2, 3}, core::PersistKindRandomU64{0, 10}});
}

AppendRequest JoinSetCreateReq(DateTime at, const core::JoinSetId& join_set) {
  return HistoryReq(at, core::HistoryJoinSetCreate{join_set});
}

AppendRequest ChildRequestReq(DateTime at, const core::ExecutionIdDerived& child) {
  return HistoryReq(at, core::HistoryJoinSetRequest{
                            child.SplitToParts().second,
                            core::ChildExecutionRequest{child, FfqnA(), core::Json::array()}});
}

AppendRequest DelayRequestReq(DateTime at, const core::DelayId& delay, DateTime expires_at) {
  return HistoryReq(
      at, core::HistoryJoinSetRequest{
              delay.join_set_id(),
              core::DelayRequest{delay, expires_at, core::HistoryEventScheduleAt::At(expires_at)}});
}

AppendRequest JoinNextReq(DateTime at, const core::JoinSetId& join_set, DateTime run_expires_at,
                          bool closing) {
  return HistoryReq(at, core::HistoryJoinNext{join_set, run_expires_at, std::nullopt, closing});
}

core::SupportedFunctionReturnValue OkResult(core::Json value) {
  if (value.is_null()) return core::ReturnValueOk{};
  return core::ReturnValueOk{std::move(value)};
}

core::SupportedFunctionReturnValue ErrResult(core::Json value) {
  if (value.is_null()) return core::ReturnValueErr{};
  return core::ReturnValueErr{std::move(value)};
}

core::SupportedFunctionReturnValue FailureResult(core::ExecutionFailureKind kind) {
  return core::FinishedExecutionError{kind, std::nullopt, std::nullopt};
}

AppendResponseToExecution ChildResponse(const core::ExecutionIdDerived& child, DateTime at,
                                        Version finished_version,
                                        core::SupportedFunctionReturnValue result) {
  auto [parent, join_set] = child.SplitToParts();
  return AppendResponseToExecution{parent,           at, join_set, child, finished_version,
                                   std::move(result)};
}

Result<std::vector<LockedExecution>, DbErrorGeneric> LockPendingA(DbExecutor& db,
                                                                  uint32_t batch_size, DateTime at,
                                                                  const Runner& runner,
                                                                  DateTime lock_expires_at) {
  return db.LockPendingByFfqns(batch_size, at, {FfqnA()}, at, ComponentA(), runner.executor_id,
                               lock_expires_at, runner.run_id, RetryConfig());
}

Result<LockedExecution, DbErrorWrite> LockOneAt(DbExecutor& db, const ExecutionId& id,
                                                Version version, DateTime at, const Runner& runner,
                                                DateTime lock_expires_at) {
  return db.LockOne(at, ComponentA(), id, runner.run_id, version, runner.executor_id,
                    lock_expires_at, RetryConfig());
}

Version CreateLocked(DbConnection& db, const ExecutionId& id, DateTime at, const Runner& runner,
                     DateTime lock_expires_at) {
  Must(db.Create(CreateReq(id, at)));
  return Must(LockOneAt(db, id, Version(1), at, runner, lock_expires_at)).next_version;
}

Version RequestDelays(DbConnection& db, const ExecutionId& id, Version version, DateTime at,
                      const std::vector<core::DelayId>& delays, DateTime expires_at) {
  std::vector<AppendRequest> batch;
  for (const core::DelayId& delay : delays) batch.push_back(DelayRequestReq(at, delay, expires_at));
  return Must(db.AppendBatch(at, batch, id, version));
}

Version CreateChildren(DbConnection& db, const ExecutionId& parent, Version version, DateTime at,
                       const std::vector<core::ExecutionIdDerived>& children) {
  std::vector<AppendRequest> batch;
  std::vector<CreateRequest> creates;
  for (const core::ExecutionIdDerived& child : children) {
    batch.push_back(ChildRequestReq(at, child));
    creates.push_back(ChildCreateReq(child, at));
  }
  return Must(db.AppendBatchCreateNewExecution(at, batch, parent, version, creates));
}

std::vector<ExecutionId> IdsOf(const std::vector<LockedExecution>& locked) {
  std::vector<ExecutionId> ids;
  for (const LockedExecution& execution : locked) ids.push_back(execution.execution_id);
  return ids;
}

std::vector<ExecutionId> IdsOf(const std::vector<ExecutionWithState>& rows) {
  std::vector<ExecutionId> ids;
  for (const ExecutionWithState& row : rows) ids.push_back(row.execution_id);
  return ids;
}

std::vector<ExpiredLock> ExpiredLocksOf(const std::vector<ExpiredTimer>& timers) {
  std::vector<ExpiredLock> locks;
  for (const ExpiredTimer& timer : timers) {
    if (const auto* lock = std::get_if<ExpiredLock>(&timer)) locks.push_back(*lock);
  }
  return locks;
}

std::vector<ExpiredDelay> ExpiredDelaysOf(const std::vector<ExpiredTimer>& timers) {
  std::vector<ExpiredDelay> delays;
  for (const ExpiredTimer& timer : timers) {
    if (const auto* delay = std::get_if<ExpiredDelay>(&timer)) delays.push_back(*delay);
  }
  return delays;
}

core::PendingState PendingAtState(DateTime scheduled_at, std::optional<core::LockedBy> last_lock,
                                  const core::InputContentDigest& digest) {
  return core::PendingState{
      core::PendingStatePendingAt{scheduled_at, std::move(last_lock), digest}};
}

core::PendingState LockedState(const Runner& runner, DateTime lock_expires_at,
                               const core::InputContentDigest& digest) {
  return core::PendingState{core::PendingStateLocked{runner.locked_by(), lock_expires_at, digest}};
}

core::PendingState BlockedState(const core::JoinSetId& join_set, DateTime lock_expires_at,
                                bool closing, const core::InputContentDigest& digest) {
  return core::PendingState{
      core::PendingStateBlockedByJoinSet{join_set, lock_expires_at, closing, digest}};
}

std::string ErrorText(const DbErrorGeneric& error) { return error.ToString(); }
std::string ErrorText(const DbErrorWrite& error) { return error.ToString(); }
std::string ErrorText(const DbErrorRead& error) { return error.ToString(); }
std::string ErrorText(const DbErrorReadWithTimeout& error) { return error.ToString(); }
std::string ErrorText(const DbErrorWriteNonRetriable& error) { return error.ToString(); }

bool IsCloseError(const DbErrorGeneric& error) {
  return error.kind() == DbErrorGeneric::Kind::kClose;
}
bool IsCloseError(const DbErrorWrite& error) {
  return error.kind() == DbErrorWrite::Kind::kGeneric && IsCloseError(error.generic());
}
bool IsCloseError(const DbErrorRead& error) {
  return error.kind() == DbErrorRead::Kind::kGeneric && IsCloseError(error.generic());
}
bool IsCloseError(const DbErrorReadWithTimeout& error) {
  return !error.IsTimeout() && IsCloseError(error.read());
}

std::string JsonText(const core::Json& json) { return json.dump(); }

}  // namespace stele::storage::conformance

namespace stele::core {

void PrintTo(const Version& version, std::ostream* os) { *os << "v" << version.value(); }
void PrintTo(const ExecutionId& id, std::ostream* os) { *os << id.ToString(); }
void PrintTo(const PendingState& state, std::ostream* os) { *os << ToJson(state).dump(); }
void PrintTo(const ExecutionEvent& event, std::ostream* os) { *os << ToJson(event).dump(); }
void PrintTo(const JoinSetResponseEventOuter& response, std::ostream* os) {
  *os << ToJson(response).dump();
}
void PrintTo(const SupportedFunctionReturnValue& value, std::ostream* os) {
  *os << ToJson(value).dump();
}

}  // namespace stele::core

namespace stele::storage {

void PrintTo(const LockedExecution& locked, std::ostream* os) {
  *os << "LockedExecution{" << locked.execution_id.ToString()
      << ", next_version: " << locked.next_version.value()
      << ", history: " << locked.event_history.size() << ", responses: " << locked.responses.size()
      << ", intermittent: " << locked.intermittent_event_count << "}";
}

void PrintTo(const ExpiredLock& expired, std::ostream* os) {
  *os << "ExpiredLock{" << expired.execution_id.ToString()
      << ", locked_at_version: " << expired.locked_at_version.value()
      << ", next_version: " << expired.next_version.value()
      << ", intermittent: " << expired.intermittent_event_count
      << ", max_retries: " << (expired.max_retries ? std::to_string(*expired.max_retries) : "none")
      << ", backoff: " << expired.retry_exp_backoff.ToString()
      << ", locked_by: " << expired.locked_by.executor_id.ToString() << "/"
      << expired.locked_by.run_id.ToString() << "}";
}

void PrintTo(const ExpiredDelay& expired, std::ostream* os) {
  *os << "ExpiredDelay{" << expired.execution_id.ToString() << ", "
      << expired.join_set_id.ToString() << ", " << expired.delay_id.ToString() << "}";
}

void PrintTo(const ExecutionWithState& row, std::ostream* os) {
  *os << "ExecutionWithState{" << row.execution_id.ToString() << ", " << row.ffqn.ToString()
      << ", created_at: " << FormatRfc3339(row.created_at) << ", "
      << core::ToJson(row.pending_state).dump() << "}";
}

void PrintTo(const ResponseWithCursor& response, std::ostream* os) {
  *os << "#" << response.cursor << " " << core::ToJson(response.event).dump();
}

}  // namespace stele::storage
