#include "storage/stress/workload.h"

#include <algorithm>
#include <variant>

#include "base/clock.h"
#include "base/log.h"

namespace stele::storage::stress {
namespace {

using core::ExecutionRequest;

core::FunctionFqn MustParse(const char* text) {
  auto ffqn = core::FunctionFqn::Parse(text);
  STELE_CHECK(ffqn.has_value(), "invalid built-in ffqn");
  return *ffqn;
}

DateTime Now() { return SystemClock::Instance().Now(); }

core::SupportedFunctionReturnValue OkOne() { return core::ReturnValueOk{core::Json(1)}; }

size_t CountJoinNexts(const LockedExecution& locked) {
  return static_cast<size_t>(std::count_if(
      locked.event_history.begin(), locked.event_history.end(), [](const auto& entry) {
        return std::holds_alternative<core::HistoryJoinNext>(entry.first);
      }));
}

bool HasJoinSetCreate(const LockedExecution& locked) {
  return std::any_of(locked.event_history.begin(), locked.event_history.end(),
                     [](const auto& entry) {
                       return std::holds_alternative<core::HistoryJoinSetCreate>(entry.first);
                     });
}

// Errors a competing executor may legitimately get from LockOne.
bool IsLostRace(const DbErrorWrite& error) {
  using K = DbErrorWriteNonRetriable::Kind;
  return error.IsNonRetriable(K::kVersionConflict) || error.IsNonRetriable(K::kIllegalState) ||
         error.IsNonRetriable(K::kValidationFailed);
}

}  // namespace

const core::FunctionFqn& ParentFfqn() {
  static const core::FunctionFqn ffqn = MustParse("stele:stress/workflow.parent");
  return ffqn;
}
const core::FunctionFqn& ChildFfqn() {
  static const core::FunctionFqn ffqn = MustParse("stele:stress/activity.child");
  return ffqn;
}
const core::FunctionFqn& ActivityFfqn() {
  static const core::FunctionFqn ffqn = MustParse("stele:stress/activity.top");
  return ffqn;
}
const std::vector<core::FunctionFqn>& AllFfqns() {
  static const std::vector<core::FunctionFqn> all{ParentFfqn(), ChildFfqn(), ActivityFfqn()};
  return all;
}
const core::JoinSetId& ChildrenJoinSet() {
  static const core::JoinSetId id = [] {
    auto js = core::JoinSetId::Create(core::JoinSetKind::kNamed, "children");
    STELE_CHECK(js.has_value(), "invalid built-in join set");
    return *js;
  }();
  return id;
}
core::ComponentRetryConfig WorkflowRetry() {
  return {std::nullopt, core::Duration::FromMillis(100)};
}
core::ComponentRetryConfig ActivityRetry() { return {5u, core::Duration::FromMillis(100)}; }
core::ComponentId ComponentFor(const core::FunctionFqn& ffqn) {
  return ffqn == ParentFfqn() ? core::ComponentId::DummyWorkflow()
                              : core::ComponentId::DummyActivity();
}

Worker::Worker(DbConnection& db, WorkloadObserver& observer, uint64_t seed, WorkerOptions options)
    : db_(db),
      observer_(observer),
      options_(options),
      rng_(seed),
      executor_id_(core::ExecutorId::Generate()) {}

bool Worker::Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

void Worker::Problem(const std::string& what, const std::string& error) {
  observer_.OnProblem(what + ": " + error);
}

std::optional<ExecutionId> Worker::CreateParent() {
  const DateTime now = Now();
  const ExecutionId id = ExecutionId::Generate();
  CreateRequest req{now,
                    id,
                    ParentFfqn(),
                    core::Json::array(),
                    std::nullopt,
                    now,
                    ComponentFor(ParentFfqn()),
                    {},
                    std::nullopt};
  auto created = db_.Create(req);
  if (!created) {
    Problem("Create " + id.ToString(), created.error().ToString());
    return std::nullopt;
  }
  observer_.OnAck(id, Version(0), core::ExecutionEvent{now, req.ToCreatedEvent(), {}, Version(0)});
  return id;
}

std::optional<ExecutionId> Worker::CreateActivity() {
  const DateTime now = Now();
  const ExecutionId id = ExecutionId::Generate();
  CreateRequest req{now,
                    id,
                    ActivityFfqn(),
                    core::Json::array({core::Json(42)}),
                    std::nullopt,
                    now,
                    ComponentFor(ActivityFfqn()),
                    {},
                    std::nullopt};
  auto created = db_.Create(req);
  if (!created) {
    Problem("Create " + id.ToString(), created.error().ToString());
    return std::nullopt;
  }
  observer_.OnAck(id, Version(0), core::ExecutionEvent{now, req.ToCreatedEvent(), {}, Version(0)});
  return id;
}

size_t Worker::LockAndProcess() {
  const DateTime now = Now();
  const core::RunId run_id = core::RunId::Generate();
  // One call per function, all under one run id: the Locked event records
  // the component passed, which differs between the workflow and the
  // activities.
  std::vector<LockedExecution> all;
  for (const auto& ffqn : AllFfqns()) {
    auto locked = db_.LockPendingByFfqns(options_.lock_batch, now, {ffqn}, now, ComponentFor(ffqn),
                                         executor_id_, now + options_.lock_duration, run_id,
                                         ffqn == ParentFfqn() ? WorkflowRetry() : ActivityRetry());
    if (!locked) {
      Problem("LockPendingByFfqns", locked.error().ToString());
      return 0;
    }
    for (auto& l : *locked) {
      if (l.ffqn != ffqn) {
        Problem("LockPendingByFfqns(" + ffqn.ToString() + ")",
                "returned " + l.execution_id.ToString() + " of " + l.ffqn.ToString());
      }
      if (l.locked_event.executor_id != executor_id_ || l.locked_event.run_id != run_id ||
          l.locked_event.lock_expires_at != now + options_.lock_duration) {
        Problem("LockPendingByFfqns",
                "Locked event of " + l.execution_id.ToString() + " differs from the request");
      }
      observer_.OnLocked(l, now);
      all.push_back(std::move(l));
    }
  }
  for (const auto& locked : all) Process(locked);
  return all.size();
}

bool Worker::TryLockOne(const ExecutionId& execution_id, const core::FunctionFqn& ffqn) {
  auto last = db_.GetLastExecutionEvent(execution_id);
  if (!last) {
    Problem("GetLastExecutionEvent " + execution_id.ToString(), last.error().ToString());
    return false;
  }
  if (std::holds_alternative<core::Finished>(last->event)) return false;
  const DateTime now = Now();
  const core::RunId run_id = core::RunId::Generate();
  auto locked = db_.LockOne(now, ComponentFor(ffqn), execution_id, run_id,
                            last->version.Increment(), executor_id_, now + options_.lock_duration,
                            ffqn == ParentFfqn() ? WorkflowRetry() : ActivityRetry());
  if (!locked) {
    if (!IsLostRace(locked.error())) {
      Problem("LockOne " + execution_id.ToString(), locked.error().ToString());
    }
    return false;
  }
  if (locked->execution_id != execution_id ||
      locked->next_version != last->version.Increment().Increment()) {
    Problem("LockOne " + execution_id.ToString(),
            "returned next_version " + locked->next_version.ToString() + " after locking at " +
                last->version.Increment().ToString());
  }
  observer_.OnLocked(*locked, now);
  Process(*locked);
  return true;
}

void Worker::Process(const LockedExecution& locked) {
  if (locked.ffqn == ParentFfqn()) {
    ProcessParent(locked);
  } else {
    ProcessActivity(locked);
  }
}

bool Worker::AppendOne(const ExecutionId& id, Version version, core::ExecutionRequest event) {
  const DateTime now = Now();
  AppendRequest req{now, std::move(event)};
  auto appended = db_.Append(id, version, req);
  if (!appended) {
    Problem("Append " + std::string(core::ExecutionRequestVariantName(req.event)) + " to " +
                id.ToString() + " at " + version.ToString(),
            appended.error().ToString());
    return false;
  }
  if (*appended != version.Increment()) {
    Problem("Append to " + id.ToString(), "returned next version " + appended->ToString() +
                                              " after writing " + version.ToString());
  }
  observer_.OnAck(id, version, core::ExecutionEvent{now, std::move(req.event), {}, version});
  return true;
}

// Activities and children: fail temporarily a few times, then finish. A
// child finishes with its parent's response in the same transaction.
void Worker::ProcessActivity(const LockedExecution& locked) {
  const ExecutionId& id = locked.execution_id;
  const Version version = locked.next_version;
  const DateTime now = Now();
  if (locked.intermittent_event_count < options_.max_temporary_failures &&
      Chance(options_.temporary_failure_probability)) {
    observer_.OnReleasing(id, locked.locked_event.run_id);
    // Immediately pending again, so any executor can retry it.
    if (Chance(0.5)) {
      AppendOne(id, version, core::TemporarilyFailed{now, "stress", std::nullopt, std::nullopt});
    } else {
      AppendOne(id, version, core::TemporarilyTimedOut{now, std::nullopt});
    }
    return;
  }
  const core::Finished finished{OkOne(), std::nullopt};
  if (!locked.parent) {
    observer_.OnReleasing(id, locked.locked_event.run_id);
    if (AppendOne(id, version, finished)) observer_.OnFinished(id);
    return;
  }
  auto derived = id.AsDerived();
  if (!derived) {
    Problem("child " + id.ToString(), "has a parent but a top-level id");
    return;
  }
  const auto& [parent_id, join_set_id] = *locked.parent;
  AppendEventsToExecution events{id, version, {AppendRequest{now, finished}}};
  AppendResponseToExecution response{parent_id, now,     join_set_id,
                                     *derived,  version, finished.result};
  observer_.OnReleasing(id, locked.locked_event.run_id);
  auto appended = db_.AppendBatchRespondToParent(events, response, now);
  if (!appended) {
    Problem("AppendBatchRespondToParent " + id.ToString(), appended.error().ToString());
    return;
  }
  observer_.OnAck(id, version, core::ExecutionEvent{now, finished, {}, version});
  observer_.OnResponseAck(parent_id, *derived, version);
  observer_.OnFinished(id);
  if (Chance(options_.duplicate_finish_probability)) {
    // A stale executor finishing the same child again: must be refused
    // (already finished, or a duplicate response) and write nothing.
    const DateTime later = Now();
    AppendEventsToExecution again{id, version.Increment(), {AppendRequest{later, finished}}};
    AppendResponseToExecution again_response{
        parent_id, later, join_set_id, *derived, version.Increment(), finished.result};
    auto dup = db_.AppendBatchRespondToParent(again, again_response, later);
    if (dup) {
      Problem("duplicate AppendBatchRespondToParent " + id.ToString(),
              "was accepted; a child must finish (and respond) only once");
    } else if (dup.error().kind() != DbErrorWrite::Kind::kNonRetriable) {
      Problem("duplicate AppendBatchRespondToParent " + id.ToString(), dup.error().ToString());
    }
  }
}

// Parents: first lock spawns the children in one transaction and awaits the
// first; each later lock (possible only once the awaited response arrived)
// awaits the next; the last lock finishes.
void Worker::ProcessParent(const LockedExecution& locked) {
  const ExecutionId& id = locked.execution_id;
  Version version = locked.next_version;
  const DateTime now = Now();
  const core::JoinSetId& js = ChildrenJoinSet();
  if (!HasJoinSetCreate(locked)) {
    std::vector<AppendRequest> batch;
    std::vector<CreateRequest> children;
    batch.push_back(AppendRequest{now, core::HistoryEventRequest{core::HistoryJoinSetCreate{js}}});
    for (uint32_t i = 1; i <= options_.children_per_parent; ++i) {
      core::ExecutionIdDerived child = id.NextLevel(js, i);
      core::Params params = core::Json::array({core::Json(i)});
      batch.push_back(
          AppendRequest{now, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                                 js, core::ChildExecutionRequest{child, ChildFfqn(), params}}}});
      children.push_back(CreateRequest{now,
                                       ExecutionId(child),
                                       ChildFfqn(),
                                       params,
                                       std::make_pair(id, js),
                                       now,
                                       ComponentFor(ChildFfqn()),
                                       {},
                                       std::nullopt});
    }
    auto appended = db_.AppendBatchCreateNewExecution(now, batch, id, version, children);
    if (!appended) {
      Problem("AppendBatchCreateNewExecution " + id.ToString(), appended.error().ToString());
      return;
    }
    if (*appended != Version(version.value() + static_cast<uint32_t>(batch.size()))) {
      Problem("AppendBatchCreateNewExecution " + id.ToString(),
              "returned next version " + appended->ToString());
    }
    for (const auto& req : batch) {
      observer_.OnAck(id, version, core::ExecutionEvent{req.created_at, req.event, {}, version});
      version = version.Increment();
    }
    for (const auto& child : children) {
      observer_.OnAck(
          child.execution_id, Version(0),
          core::ExecutionEvent{child.created_at, child.ToCreatedEvent(), {}, Version(0)});
    }
  }
  const size_t join_nexts = CountJoinNexts(locked);
  // The lock was granted, so the state was PendingAt: every JoinNext so far
  // has its response.
  if (locked.responses.size() < join_nexts) {
    Problem("parent " + id.ToString(),
            "was lockable after " + std::to_string(join_nexts) + " JoinNext(s) but has only " +
                std::to_string(locked.responses.size()) + " response(s)");
  }
  observer_.OnReleasing(id, locked.locked_event.run_id);
  if (join_nexts < options_.children_per_parent) {
    // Interrupt strategy: run_expires_at = now, so a response makes the
    // parent lockable by anyone at once.
    AppendOne(id, version,
              core::HistoryEventRequest{core::HistoryJoinNext{js, Now(), std::nullopt, false}});
  } else if (AppendOne(id, version, core::Finished{OkOne(), std::nullopt})) {
    observer_.OnFinished(id);
  }
}

}  // namespace stele::storage::stress
