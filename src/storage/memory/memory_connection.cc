// Writes of the memory backend. Every write runs entirely under the state's
// mutex; multi-part writes are applied to copies of the journals involved
// and committed only after every part validated, so a failure writes nothing.
#include "storage/memory/memory_connection.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "storage/request_rules.h"

namespace stele::storage::memory::internal {

namespace {

Result<void, DbErrorWrite> RejectInvalid(const ExecutionId& execution_id,
                                         const std::vector<AppendRequest>& batch) {
  for (const AppendRequest& req : batch) STELE_TRY(ValidateAppendRequest(execution_id, req));
  return {};
}

// The reference model's own check that `response` answers a request of
// `journal`: its log requested that child or delay in that join set
// (NotFound otherwise; request_rules.h).
// REQUIRES: a delay's or a child's response.
Result<void, DbErrorWrite> CheckRequested(const ExecutionJournal& journal,
                                          const core::JoinSetResponseEvent& response) {
  const auto* delay = std::get_if<core::DelayFinished>(&response.event);
  const std::string id =
      delay != nullptr
          ? delay->delay_id.ToString()
          : std::get<core::ChildExecutionFinished>(response.event).child_execution_id.ToString();
  if (journal.RequestJoinSet(id) != response.join_set_id) {
    return Unexpected(DbErrorWrite::NotFound());
  }
  return {};
}

// Applies `batch` at consecutive versions from `version` to `journal`.
Result<void, DbErrorWrite> AppendAll(ExecutionJournal& journal, Version version,
                                     const std::vector<AppendRequest>& batch) {
  for (const AppendRequest& req : batch) {
    STELE_TRY(journal.Append(version, req));
    version = version.Increment();
  }
  return {};
}

// Whether `id` is among the children a write creates.
bool CreatedHere(const std::vector<CreateRequest>& children, const ExecutionId& id) {
  return std::any_of(children.begin(), children.end(),
                     [&](const CreateRequest& child) { return child.execution_id == id; });
}

AppendRequest LockRequest(DateTime created_at, const core::ComponentId& component_id,
                          const core::ExecutorId& executor_id, const core::RunId& run_id,
                          DateTime lock_expires_at,
                          const core::ComponentRetryConfig& retry_config) {
  return AppendRequest{
      created_at, core::Locked{component_id, executor_id, run_id, lock_expires_at, retry_config}};
}

}  // namespace

ExecutionJournal* MemoryConnection::FindJournal(const ExecutionId& execution_id) {
  auto it = state_->journals.find(execution_id);
  return it == state_->journals.end() ? nullptr : &it->second;
}

void MemoryConnection::NotifyChanged() {
  state_->changed.notify_all();
  FireReadyWatches();
}

// --- Locking -----------------------------------------------------------------

template <class Selected>
std::vector<LockedExecution> MemoryConnection::LockPendingWhere(uint32_t batch_size,
                                                                DateTime pending_at_or_sooner,
                                                                const Selected& selected,
                                                                const AppendRequest& lock) {
  // Candidates exactly as the SQL backends select them: PendingAt due by
  // `pending_at_or_sooner`, oldest first (ties by id text), LIMIT
  // batch_size. Each is then re-validated by the lock rules (for example a
  // row whose lease belongs to another run and has not ended yet at
  // `created_at`) and skipped when that fails. Locked rows are never
  // candidates, expired or not: the expired-timers watcher owns them.
  std::vector<std::tuple<DateTime, std::string, ExecutionJournal*>> candidates;
  for (auto& [id, journal] : state_->journals) {
    const auto* pending = journal.pending_state().RunnablePendingAt();
    if (pending == nullptr || pending->scheduled_at > pending_at_or_sooner) continue;
    if (!selected(journal)) continue;
    candidates.emplace_back(pending->scheduled_at, id.ToString(), &journal);
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  if (candidates.size() > batch_size) {
    candidates.erase(candidates.begin() + batch_size, candidates.end());
  }

  std::vector<LockedExecution> locked;
  for (auto& [scheduled_at, id_text, journal] : candidates) {
    if (journal->Append(journal->next_version(), lock).has_value()) {
      locked.push_back(journal->ToLockedExecution());
    }
  }
  if (!locked.empty()) NotifyChanged();
  return locked;
}

Result<std::vector<LockedExecution>, DbErrorGeneric> MemoryConnection::LockPendingByFfqns(
    uint32_t batch_size, DateTime pending_at_or_sooner, const std::vector<core::FunctionFqn>& ffqns,
    DateTime created_at, const core::ComponentId& component_id, const core::ExecutorId& executor_id,
    DateTime lock_expires_at, const core::RunId& run_id,
    const core::ComponentRetryConfig& retry_config) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  auto selected = [&](const ExecutionJournal& journal) {
    return std::find(ffqns.begin(), ffqns.end(), journal.created().ffqn) != ffqns.end();
  };
  return LockPendingWhere(
      batch_size, pending_at_or_sooner, selected,
      LockRequest(created_at, component_id, executor_id, run_id, lock_expires_at, retry_config));
}

Result<std::vector<LockedExecution>, DbErrorGeneric> MemoryConnection::LockPendingByComponentId(
    uint32_t batch_size, DateTime pending_at_or_sooner, const core::ComponentId& component_id,
    DateTime created_at, const core::ExecutorId& executor_id, DateTime lock_expires_at,
    const core::RunId& run_id, const core::ComponentRetryConfig& retry_config) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  auto selected = [&](const ExecutionJournal& journal) {
    return journal.component_digest() == component_id.input_digest;
  };
  return LockPendingWhere(
      batch_size, pending_at_or_sooner, selected,
      LockRequest(created_at, component_id, executor_id, run_id, lock_expires_at, retry_config));
}

Result<LockedExecution, DbErrorWrite> MemoryConnection::LockOne(
    DateTime created_at, const core::ComponentId& component_id, const ExecutionId& execution_id,
    const core::RunId& run_id, Version version, const core::ExecutorId& executor_id,
    DateTime lock_expires_at, const core::ComponentRetryConfig& retry_config) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorWrite::NotFound());
  STELE_TRY(journal->Append(version, LockRequest(created_at, component_id, executor_id, run_id,
                                                 lock_expires_at, retry_config)));
  NotifyChanged();
  return journal->ToLockedExecution();
}

// --- Appends -----------------------------------------------------------------

Result<Version, DbErrorWrite> MemoryConnection::Append(const ExecutionId& execution_id,
                                                       Version version, const AppendRequest& req) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  STELE_TRY(RejectInvalid(execution_id, {req}));
  ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorWrite::NotFound());
  STELE_TRY(journal->Append(version, req));
  NotifyChanged();
  return journal->next_version();
}

Result<CreatedAndLockedChildren, DbErrorWrite> MemoryConnection::WriteStep(const StepWrite& write) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  STELE_TRY(ValidateStepWrite(write));
  // Every part goes to copies of the journals it touches; they replace the
  // originals only once all parts succeeded.
  std::map<ExecutionId, ExecutionJournal> copies;
  auto copy_of = [&](const ExecutionId& id) -> ExecutionJournal* {
    if (auto it = copies.find(id); it != copies.end()) return &it->second;
    const ExecutionJournal* original = FindJournal(id);
    return original == nullptr ? nullptr : &copies.emplace(id, *original).first->second;
  };
  std::set<std::string> responded;
  for (const ChildOutcome& outcome : write.outcomes) {
    const AppendEventsToExecution& events = outcome.child;
    STELE_TRY(RejectInvalid(events.execution_id, events.batch));
    ExecutionJournal* child = copy_of(events.execution_id);
    if (child == nullptr) return Unexpected(DbErrorWrite::NotFound());
    STELE_TRY(AppendAll(*child, events.version, events.batch));
    ExecutionJournal* parent = copy_of(outcome.response.parent_execution_id);
    if (parent == nullptr) return Unexpected(DbErrorWrite::NotFound());
    std::string child_key = outcome.response.child_execution_id.ToString();
    if (state_->child_responses.contains(child_key) || !responded.insert(child_key).second) {
      return Unexpected(DbErrorWriteNonRetriable::Conflict());
    }
    // The parent's run consumed the response as its response number
    // `response_index`.
    if (outcome.response_index && parent->responses().size() != *outcome.response_index) {
      return Unexpected(DbErrorWriteNonRetriable::Conflict());
    }
    core::JoinSetResponseEventOuter outer = ChildFinishedResponse(outcome.response);
    STELE_TRY(CheckRequested(*parent, outer.event));
    parent->AddResponse(outer.created_at, outer.event);
  }
  CreatedAndLockedChildren result{write.version, {}};
  if (!write.batch.empty()) {
    STELE_TRY(RejectInvalid(write.execution_id, write.batch));
    ExecutionJournal* writer = copy_of(write.execution_id);
    if (writer == nullptr) return Unexpected(DbErrorWrite::NotFound());
    STELE_TRY(AppendAll(*writer, write.version, write.batch));
    result.next_version = writer->next_version();
    std::set<ExecutionId> new_ids;
    for (const CreateRequest& child : write.children) {
      if (state_->journals.contains(child.execution_id) ||
          !new_ids.insert(child.execution_id).second) {
        return Unexpected(DbErrorWriteNonRetriable::IllegalState("execution already exists"));
      }
    }
  }
  // Everything validated: commit.
  for (auto& [id, journal] : copies) state_->journals.at(id) = std::move(journal);
  state_->child_responses.merge(responded);
  for (const CreateRequest& child : write.children) {
    state_->journals.emplace(child.execution_id, ExecutionJournal(child));
  }
  // A lock the rules refuse leaves that child pending, and only it.
  for (const ChildLock& child_lock : write.locks) {
    ExecutionJournal* child = FindJournal(child_lock.child_id);
    if (child == nullptr || !CreatedHere(write.children, child_lock.child_id)) continue;
    if (child->Append(Version(1), AppendRequest{write.current_time, child_lock.locked})) {
      result.locked.push_back(child->ToLockedExecution());
    }
  }
  NotifyChanged();
  return result;
}

Result<AppendDelayResponseOutcome, DbErrorWrite> MemoryConnection::AppendDelayResponse(
    DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
    const core::DelayId& delay_id, bool ok) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  const core::JoinSetResponseEvent response{join_set_id, core::DelayFinished{delay_id, ok}};
  STELE_TRY(CheckResponseAddressee(execution_id, response));
  ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorWrite::NotFound());
  std::string key = delay_id.ToString();
  if (auto it = state_->delay_responses.find(key); it != state_->delay_responses.end()) {
    // The first response decides, whatever this one says.
    return it->second ? AppendDelayResponseOutcome::kAlreadyFinished
                      : AppendDelayResponseOutcome::kAlreadyCancelled;
  }
  STELE_TRY(CheckRequested(*journal, response));
  state_->delay_responses.emplace(std::move(key), ok);
  journal->AddResponse(created_at, response);
  NotifyChanged();
  return AppendDelayResponseOutcome::kSuccess;
}

Result<AppendMessageOutcome, DbErrorWrite> MemoryConnection::AppendMessage(
    DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
    const core::MessageReceived& message) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  return AppendMessageLocked(created_at, execution_id, join_set_id, message);
}

Result<AppendMessageOutcome, DbErrorWrite> MemoryConnection::AppendMessageLocked(
    DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
    const core::MessageReceived& message) {
  STELE_TRY(ValidateMessage(join_set_id, message));
  ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorWrite::NotFound());
  for (const core::JoinSetResponseEventOuter& response : journal->responses()) {
    const auto* before = std::get_if<core::MessageReceived>(&response.event.event);
    if (before != nullptr && before->message_id == message.message_id) {
      return RedeliveryOutcome(response.event, join_set_id, message);
    }
  }
  if (std::holds_alternative<core::PendingStateFinished>(journal->pending_state().value)) {
    return Unexpected(FinishedRefusesMessage());
  }
  journal->AddResponse(created_at, core::JoinSetResponseEvent{join_set_id, message});
  NotifyChanged();
  return AppendMessageOutcome::kDelivered;
}

Result<void, DbErrorWrite> MemoryConnection::AppendResponse(
    DateTime created_at, const ExecutionId& execution_id,
    const core::JoinSetResponseEvent& response) {
  std::lock_guard lock(state_->mu);
  if (const auto* message = std::get_if<core::MessageReceived>(&response.event)) {
    if (state_->closed) return Unexpected(DbErrorGeneric::Close());
    STELE_ASSIGN_OR_RETURN(
        AppendMessageOutcome outcome,
        AppendMessageLocked(created_at, execution_id, response.join_set_id, *message));
    if (outcome == AppendMessageOutcome::kAlreadyDelivered) {
      return Unexpected(DbErrorWriteNonRetriable::Conflict());
    }
    return {};
  }
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  STELE_TRY(CheckResponseAddressee(execution_id, response));
  ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorWrite::NotFound());
  const auto* delay = std::get_if<core::DelayFinished>(&response.event);
  const std::string key =
      delay != nullptr
          ? delay->delay_id.ToString()
          : std::get<core::ChildExecutionFinished>(response.event).child_execution_id.ToString();
  if (delay != nullptr ? state_->delay_responses.contains(key)
                       : state_->child_responses.contains(key)) {
    return Unexpected(DbErrorWriteNonRetriable::Conflict());
  }
  STELE_TRY(CheckRequested(*journal, response));
  if (delay != nullptr) {
    state_->delay_responses.emplace(key, delay->ok);
  } else {
    state_->child_responses.insert(key);
  }
  journal->AddResponse(created_at, response);
  NotifyChanged();
  return {};
}

Result<Version, DbErrorWrite> MemoryConnection::Create(const CreateRequest& req) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  STELE_TRY(ValidateStandaloneCreate(req));
  if (state_->journals.contains(req.execution_id)) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("execution already exists"));
  }
  ExecutionJournal& journal =
      state_->journals.emplace(req.execution_id, ExecutionJournal(req)).first->second;
  NotifyChanged();
  return journal.next_version();
}

Result<void, DbErrorWrite> MemoryConnection::UpgradeExecutionComponent(
    const ExecutionId& execution_id, const core::InputContentDigest& old_digest,
    const core::InputContentDigest& new_digest) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorWrite::NotFound());
  STELE_TRY(journal->UpgradeComponent(old_digest, new_digest));
  NotifyChanged();  // the execution may now be pending for another component
  return {};
}

Result<void, DbErrorWrite> MemoryConnection::AppendBacktrace(const core::BacktraceInfo& info) {
  return AppendBacktraceBatch({info});
}

Result<void, DbErrorWrite> MemoryConnection::AppendBacktraceBatch(
    const std::vector<core::BacktraceInfo>& batch) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  state_->backtraces.insert(state_->backtraces.end(), batch.begin(), batch.end());
  return {};
}

}  // namespace stele::storage::memory::internal
