#include "runtime/workflow/run_state.h"

#include <algorithm>
#include <chrono>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/log.h"
#include "core/function_type.h"
#include "core/json_codec.h"
#include "executor/outcome.h"
#include "storage/operations.h"

namespace stele::runtime::workflow::internal {

namespace {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

// Replay compares what the workflow asked for, not what the first run
// resolved: a DelayRequest's expiry and a JoinNext's lease are outcomes of
// the first run, and a Stub's persist result is read back, not predicted.
bool KeyMatches(const core::HistoryEvent& key, const core::HistoryEvent& recorded) {
  if (key.index() != recorded.index()) return false;
  return std::visit(
      Overloaded{
          [&](const core::HistoryJoinSetRequest& k) {
            const auto& r = std::get<core::HistoryJoinSetRequest>(recorded);
            if (k.join_set_id != r.join_set_id || k.request.index() != r.request.index()) {
              return false;
            }
            if (const auto* kd = std::get_if<core::DelayRequest>(&k.request)) {
              const auto& rd = std::get<core::DelayRequest>(r.request);
              return kd->delay_id == rd.delay_id && kd->schedule_at == rd.schedule_at;
            }
            return k.request == r.request;
          },
          [&](const core::HistoryJoinNext& k) {
            const auto& r = std::get<core::HistoryJoinNext>(recorded);
            return k.join_set_id == r.join_set_id && k.requested_ffqn == r.requested_ffqn &&
                   k.closing == r.closing;
          },
          [&](const core::HistoryStub& k) {
            const auto& r = std::get<core::HistoryStub>(recorded);
            return k.target_execution_id == r.target_execution_id && k.result == r.result;
          },
          [&](const core::HistoryPersist& k) {
            const auto& r = std::get<core::HistoryPersist>(recorded);
            // A step's time is read back, not predicted (WorkflowRun::Now).
            if (std::holds_alternative<core::PersistKindTime>(k.kind)) return k.kind == r.kind;
            return k == r;
          },
          // A replayed step asks by name; the recorded value is its answer.
          [&](const core::HistoryStep& k) {
            return k.name == std::get<core::HistoryStep>(recorded).name;
          },
          // What delivery answered is read back, not predicted.
          [&](const core::HistorySendMessage& k) {
            const auto& r = std::get<core::HistorySendMessage>(recorded);
            return k.target_execution_id == r.target_execution_id && k.channel == r.channel &&
                   k.message_id == r.message_id && k.body == r.body;
          },
          [&](const auto& k) { return k == std::get<std::decay_t<decltype(k)>>(recorded); },
      },
      key);
}

std::string IdText(const std::variant<core::ExecutionIdDerived, core::DelayId>& id) {
  return std::visit([](const auto& v) { return v.ToString(); }, id);
}

}  // namespace

std::string DescribeHistoryEvent(const core::HistoryEvent& event) {
  return core::ExecutionRequestToString(core::HistoryEventRequest{event});
}

RunState::RunState(executor::WorkerContext c, WorkflowRunDeps d, WorkflowRunOptions o)
    : ctx(std::move(c)), deps(d), options(o), prng(ctx.execution_id.RandomSeed()) {
  STELE_CHECK(deps.db != nullptr && deps.clock != nullptr && deps.functions != nullptr,
              "WorkflowRunDeps must be complete");
  history_ = std::move(ctx.event_history);
  ctx.event_history.clear();
  version_ = ctx.version;
  lock_expires_at_ = ctx.locked_event.lock_expires_at;
  AddResponses(std::move(ctx.responses));
  ctx.responses.clear();
}

RunState::~RunState() {
  if (taken_.empty()) return;
  // The run ends (an error, a fatal interruption) holding results it took
  // in memory: write them now, before its executor records how it ended;
  // if that fails their executors record them.
  std::vector<storage::ChildOutcome> outcomes;
  for (const TakenOutcome& taken : taken_) outcomes.push_back(taken.outcome);
  auto written = deps.db->WriteStep(
      storage::StepWrite{Now(), ctx.execution_id, version_, {}, {}, {}, outcomes});
  ResolveTaken(written.has_value());
}

void RunState::ResolveTaken(bool recorded) {
  for (TakenOutcome& taken : taken_) taken.ticket->Resolve(recorded);
  taken_.clear();
}

Unexpected<Interruption> RunState::Interrupt(Interruption i) {
  if (!interruption) interruption = i;
  return Unexpected(std::move(i));
}

Unexpected<Interruption> RunState::Interrupt(Interruption::Kind kind, std::string reason) {
  return Interrupt(Interruption{kind, std::move(reason), std::nullopt});
}

Unexpected<Interruption> RunState::DbFailure(std::string_view what, storage::DbErrorWrite error) {
  std::string reason = std::string(what) + ": " + error.ToString();
  STELE_LOG(kDebug, ctx.execution_id.ToString() << " " << reason);
  return Interrupt(Interruption{Interruption::Kind::kDbError, std::move(reason), std::move(error)});
}

Result<void, Interruption> RunState::Begin() {
  if (interruption) return Unexpected(*interruption);
  if (ctx.cancel.IsCancelled()) return Interrupt(Interruption::Kind::kCancelled, "run cancelled");
  const DateTime now = Now();
  if (now >= lock_expires_at_) {
    return Interrupt(Interruption::Kind::kLeaseExpired,
                     "lock expired at " + FormatRfc3339(lock_expires_at_));
  }
  if (options.lock_extension.count() > 0 &&
      now + std::chrono::duration_cast<std::chrono::microseconds>(options.lock_extension_leeway) >=
          lock_expires_at_) {
    STELE_TRY(ExtendLockWithinLimits(now));
  }
  STELE_TRY(PassCancelRequests());
  if (options.max_events_per_run > 0 && !replaying() &&
      events_written_ + cache_.size() >= options.max_events_per_run) {
    STELE_TRY(Flush());
    storage::AppendRequest unlock{now, core::Unlocked{now, "max events per run reached"}};
    auto next = deps.db->Append(ctx.execution_id, version_, unlock);
    if (!next) return DbFailure("unlocking after max events per run", std::move(next).error());
    version_ = *next;
    return Interrupt(Interruption::Kind::kYielded, "max events per run reached");
  }
  return {};
}

Result<DateTime, Interruption> RunState::EnsureLease(std::chrono::milliseconds needed) {
  if (interruption) return Unexpected(*interruption);
  const DateTime now = Now();
  if (now >= lock_expires_at_) {
    return Interrupt(Interruption::Kind::kLeaseExpired,
                     "lock expired at " + FormatRfc3339(lock_expires_at_));
  }
  if (options.lock_extension.count() > 0 &&
      now + std::chrono::duration_cast<std::chrono::microseconds>(needed) > lock_expires_at_) {
    STELE_TRY(ExtendLockWithinLimits(now));
  }
  return lock_expires_at_;
}

Result<void, Interruption> RunState::ExtendLockWithinLimits(DateTime now) {
  // The extension is an event too: a run that writes nothing else (a
  // loop of logs) must still meet the log's limit.
  if (!replaying() && options.max_events_per_execution > 0 &&
      version_.value() + cache_.size() >= options.max_events_per_execution) {
    return Interrupt(Interruption::Kind::kConstraintViolation,
                     "the execution has reached its limit of " +
                         std::to_string(options.max_events_per_execution) + " events (" +
                         options.max_events_setting + ")");
  }
  return ExtendLock(now);
}

Result<void, Interruption> RunState::ExtendLock(DateTime now) {
  // The row still says BlockedByJoinSet until the results this run took in
  // memory are recorded, and a Locked event is refused there: record them
  // first (the row becomes PendingAt(lease), last locked by this run, which
  // may then extend).
  if (!taken_.empty()) STELE_TRY(Flush());
  core::Locked locked = ctx.locked_event;
  locked.lock_expires_at =
      now + std::chrono::duration_cast<std::chrono::microseconds>(options.lock_extension);
  auto next = deps.db->Append(ctx.execution_id, version_, storage::AppendRequest{now, locked});
  if (!next) return DbFailure("extending the lock", std::move(next).error());
  version_ = *next;
  lock_expires_at_ = locked.lock_expires_at;
  ctx.execution_deadline = lock_expires_at_;
  return {};
}

Result<const core::HistoryEvent*, Interruption> RunState::Step(
    core::HistoryEvent key, std::optional<storage::CreateRequest> child) {
  // A cancel request is no call's event: the cursor passes it (what it
  // changes is decided at the next call or after a JoinNext).
  if (!std::holds_alternative<core::HistoryCancelRequest>(key)) SkipCancelRequests();
  if (cursor_ < history_.size()) {
    const auto& [recorded, recorded_version] = history_[cursor_];
    if (!KeyMatches(key, recorded)) {
      return Interrupt(Interruption::Kind::kNondeterminism,
                       "replay diverged at version " + recorded_version.ToString() +
                           ": the workflow requested " + DescribeHistoryEvent(key) +
                           " but the log holds " + DescribeHistoryEvent(recorded));
    }
    ++cursor_;
    Apply(recorded);
    return &recorded;
  }
  if (options.max_events_per_execution > 0 &&
      version_.value() + cache_.size() >= options.max_events_per_execution) {
    return Interrupt(Interruption::Kind::kConstraintViolation,
                     "the execution has reached its limit of " +
                         std::to_string(options.max_events_per_execution) + " events (" +
                         options.max_events_setting + ")");
  }
  if (const auto* request = std::get_if<core::HistoryJoinSetRequest>(&key);
      request != nullptr && options.max_join_set_size > 0) {
    const JoinSetState* join_set = FindJoinSet(request->join_set_id);
    if (join_set != nullptr && join_set->submissions >= options.max_join_set_size) {
      return Interrupt(Interruption::Kind::kConstraintViolation,
                       "join set " + request->join_set_id.ToString() +
                           " has reached its limit of " +
                           std::to_string(options.max_join_set_size) + " submissions");
    }
  }
  // The params of a new child are checked against its function's declared
  // types, as a submission's are (the service's Submit); a mismatch ends
  // the workflow before anything is created. Recorded children are not
  // checked again: they were created.
  if (child) {
    if (auto info = deps.functions->Find(child->ffqn); info && info->signature) {
      if (auto checked = core::CheckParams(*info->signature, child->params); !checked) {
        return Interrupt(Interruption::Kind::kImportedFunctionCallError,
                         "the params of " + child->ffqn.ToString() + " (execution " +
                             child->execution_id.ToString() +
                             ") do not match its declared types: " + checked.error());
      }
    }
  }
  if (child && options.max_params_bytes > 0) {
    const size_t bytes = core::SerializeJson(child->params).size();
    if (bytes > options.max_params_bytes) {
      return Interrupt(Interruption::Kind::kConstraintViolation,
                       "the params of " + child->ffqn.ToString() + " (execution " +
                           child->execution_id.ToString() + ") are " + std::to_string(bytes) +
                           " bytes, over the limit of " + std::to_string(options.max_params_bytes));
    }
  }
  Apply(key);
  cache_.push_back(storage::AppendRequest{Now(), core::HistoryEventRequest{std::move(key)}});
  if (child) cache_children_.push_back(*std::move(child));
  return nullptr;
}

Result<void, Interruption> RunState::Flush(bool dispatch) {
  if (cache_.empty() && taken_.empty()) return {};
  return WriteStep(cache_, dispatch);
}

Result<void, Interruption> RunState::WriteStep(const std::vector<storage::AppendRequest>& batch,
                                               bool dispatch) {
  const DateTime now = Now();
  // Children due now that an executor of this process serves are locked
  // for it in this transaction and handed over once it commits.
  std::vector<executor::LocalDispatch::Slot> slots;
  std::vector<storage::ChildLock> locks;
  if (deps.dispatch != nullptr && dispatch) {
    for (const storage::CreateRequest& child : cache_children_) {
      if (child.scheduled_at > now) continue;
      auto slot = deps.dispatch->TryReserve(child.ffqn, now);
      if (!slot) continue;
      locks.push_back(storage::ChildLock{child.execution_id, slot->reservation.locked});
      slots.push_back(*std::move(slot));
    }
  }
  // Children's results this run took in memory commit with its step.
  storage::StepWrite write{now, ctx.execution_id, version_, batch, cache_children_, locks, {}};
  for (const TakenOutcome& taken : taken_) write.outcomes.push_back(taken.outcome);
  auto written = deps.db->WriteStep(write);
  if (!taken_.empty()) ResolveTaken(written.has_value());
  // Unused reservations (a failed write, a lock the rules refused) release
  // their permits when `slots` goes.
  if (!written) return DbFailure("appending history events", std::move(written).error());
  const core::Version next = written->next_version;
  for (storage::LockedExecution& child : written->locked) {
    for (executor::LocalDispatch::Slot& slot : slots) {
      if (slot.task != nullptr && slot.reservation.locked == child.locked_event) {
        executor::ExecTask* task = std::exchange(slot.task, nullptr);
        task->RunLocked(std::move(child), std::move(slot.reservation));
        break;
      }
    }
  }
  events_written_ += cache_.size();
  version_ = next;
  cache_.clear();
  cache_children_.clear();
  return {};
}

Result<bool, Interruption> RunState::WriteFinished(
    const core::SupportedFunctionReturnValue& value) {
  if (cache_.empty() && taken_.empty()) return false;
  if (ctx.max_result_bytes > 0 &&
      core::SerializeJson(core::ToJson(value)).size() > ctx.max_result_bytes) {
    STELE_TRY(Flush());
    return false;
  }
  const DateTime now = Now();
  // Finished goes right after the cached events; it does not advance the
  // version, and a parent's response names it.
  const core::Version finished_at(version_.value() +
                                  static_cast<core::Version::Type>(cache_.size()));
  std::optional<executor::PlannedWrite> finish =
      executor::ComputeOutcome(executor::WorkerResult::Ok(value, finished_at),
                               executor::RunInfo{ctx.execution_id, ctx.intermittent_event_count,
                                                 ctx.locked_event.retry_config},
                               now);
  STELE_CHECK(finish.has_value(), "a result is always recorded");
  std::get<core::Finished>(finish->request.event).engine = options.engine;
  std::vector<storage::AppendRequest> batch = cache_;
  batch.push_back(finish->request);
  if (!finish->parent_response) {
    STELE_TRY(WriteStep(batch, /*dispatch=*/true));
    return true;
  }
  // A child: its response to its parent commits with its Finished.
  if (!cache_children_.empty()) {
    // No single write creates children and responds to a parent (children
    // are created after the outcomes): two commits.
    STELE_TRY(Flush());
    return false;
  }
  const storage::AppendEventsToExecution own{ctx.execution_id, version_, batch};
  Result<void, storage::DbErrorWrite> written;
  if (taken_.empty()) {
    auto appended = deps.db->AppendBatchRespondToParent(own, *finish->parent_response, now);
    if (!appended) written = Unexpected(std::move(appended).error());
  } else {
    // Its children's results it took in memory first, each at the response
    // index it consumed it at; its own response lands wherever it does.
    std::vector<storage::ChildOutcome> outcomes;
    for (const TakenOutcome& taken : taken_) outcomes.push_back(taken.outcome);
    outcomes.push_back(storage::ChildOutcome{own, *finish->parent_response, std::nullopt});
    auto appended = deps.db->WriteStep(
        storage::StepWrite{now, ctx.execution_id, version_, {}, {}, {}, std::move(outcomes)});
    ResolveTaken(appended.has_value());
    if (!appended) written = Unexpected(std::move(appended).error());
  }
  if (!written) return DbFailure("finishing", std::move(written).error());
  events_written_ += cache_.size();
  cache_.clear();
  return true;
}

Result<void, Interruption> RunState::MaybeFlush() {
  if (cache_.size() >= options.non_blocking_event_batching) return Flush();
  return {};
}

JoinSetState* RunState::FindJoinSet(const core::JoinSetId& id) {
  auto it = join_sets_.find(id);
  return it == join_sets_.end() ? nullptr : &it->second;
}

const JoinSetState* RunState::FindJoinSet(const core::JoinSetId& id) const {
  auto it = join_sets_.find(id);
  return it == join_sets_.end() ? nullptr : &it->second;
}

Result<JoinSetState*, Interruption> RunState::OpenJoinSet(const core::JoinSetId& id,
                                                          std::string_view what) {
  JoinSetState* state = FindJoinSet(id);
  if (id.kind() == core::JoinSetKind::kMessages) {
    return Interrupt(
        Interruption::Kind::kConstraintViolation,
        std::string(what) + ": join set " + id.ToString() + " is a channel's: receive from it");
  }
  if (state == nullptr || id.kind() == core::JoinSetKind::kOneOff) {
    return Interrupt(Interruption::Kind::kConstraintViolation,
                     std::string(what) + ": join set " + id.ToString() + " was not created");
  }
  if (state->closed) {
    return Interrupt(Interruption::Kind::kConstraintViolation,
                     std::string(what) + ": join set " + id.ToString() + " is closed");
  }
  return state;
}

uint64_t RunState::JoinSetCount(core::JoinSetKind kind) const {
  switch (kind) {
    case core::JoinSetKind::kOneOff:
      return one_off_count_;
    case core::JoinSetKind::kGenerated:
      return generated_count_;
    case core::JoinSetKind::kNamed:
      return named_.size();
    case core::JoinSetKind::kMessages:
      return 0;  // never created by an event
  }
  return 0;
}

JoinSetState& RunState::ChannelJoinSet(const core::JoinSetId& id) {
  auto [it, inserted] = join_sets_.try_emplace(id, JoinSetState{id});
  // Known from the first receive on, in replay and new territory alike
  // (CancelOpenSubtree cancels its timeouts).
  if (std::find(all_join_sets_.begin(), all_join_sets_.end(), id) == all_join_sets_.end()) {
    all_join_sets_.push_back(id);
  }
  (void)inserted;
  return it->second;
}

void RunState::Apply(const core::HistoryEvent& event) {
  std::visit(
      Overloaded{
          [&](const core::HistoryJoinSetCreate& create) {
            auto [it, inserted] =
                join_sets_.try_emplace(create.join_set_id, JoinSetState{create.join_set_id});
            if (!inserted) return;
            all_join_sets_.push_back(create.join_set_id);
            switch (create.join_set_id.kind()) {
              case core::JoinSetKind::kOneOff:
                ++one_off_count_;
                break;
              case core::JoinSetKind::kGenerated:
                ++generated_count_;
                created_order_.push_back(create.join_set_id);
                break;
              case core::JoinSetKind::kNamed:
                named_.insert(create.join_set_id.name());
                created_order_.push_back(create.join_set_id);
                break;
              case core::JoinSetKind::kMessages:
                break;  // never written (a replayed log holding one is not ours)
            }
          },
          [&](const core::HistoryJoinSetRequest& request) {
            auto it = join_sets_.try_emplace(request.join_set_id, JoinSetState{request.join_set_id})
                          .first;
            JoinSetState& state = it->second;
            ++state.submissions;
            Submission submission = std::visit(
                Overloaded{
                    [](const core::DelayRequest& delay) {
                      return Submission{delay.delay_id, std::nullopt, delay.expires_at};
                    },
                    [](const core::ChildExecutionRequest& child) {
                      return Submission{child.child_execution_id, child.target_ffqn, std::nullopt};
                    }},
                request.request);
            std::string id = IdText(submission.id);
            if (submission.ffqn) child_ffqn_.insert_or_assign(id, *submission.ffqn);
            state.order.push_back(id);
            if (state.unconsumed.insert_or_assign(std::move(id), std::move(submission)).second) {
              ++unconsumed_total_;
            }
          },
          [&](const core::HistoryJoinNext& join_next) {
            join_sets_.try_emplace(join_next.join_set_id, JoinSetState{join_next.join_set_id})
                .first->second.join_nexts++;
          },
          [&](const core::HistorySendMessage&) { ++sends_; },
          [&](const core::HistoryCancelRequest& request) {
            if (!cancel_request_) cancel_request_ = request;
            if (request.terminate && !terminate_requested_) {
              terminate_requested_ = true;
              terminated_by_deadline_ = request.timed_out;
              terminate_reason_ = request.reason;
            }
          },
          [](const auto&) {},
      },
      event);
}

void RunState::AddResponses(std::vector<core::JoinSetResponseEventOuter> responses) {
  for (auto& response : responses) {
    responses_by_join_set_[response.event.join_set_id].push_back(responses_.size());
    responses_.push_back(std::move(response));
  }
}

core::HistoryJoinNext RunState::JoinNextKey(const core::JoinSetId& join_set,
                                            std::optional<core::FunctionFqn> requested_ffqn,
                                            bool closing) {
  const JoinSetState* state = FindJoinSet(join_set);
  const uint64_t k = (state == nullptr ? 0 : state->join_nexts) + 1;
  auto it = responses_by_join_set_.find(join_set);
  const bool known = it != responses_by_join_set_.end() && it->second.size() >= k;
  // A run that will unload gives up its lease at once so the response
  // makes the execution pending immediately; a warm run keeps it.
  const bool unloads = !known && (options.blocking_strategy == BlockingStrategy::kInterrupt ||
                                  OnlyDelaysBeyondLease(state));
  return core::HistoryJoinNext{join_set, unloads ? Now() : lock_expires_at_,
                               std::move(requested_ffqn), closing};
}

Result<std::optional<JoinSetResponseValue>, Interruption> RunState::AwaitJoinNextResponse(
    const core::JoinSetId& join_set, bool closing) {
  JoinSetState* state = FindJoinSet(join_set);
  STELE_CHECK(state != nullptr && state->join_nexts > 0, "AwaitJoinNextResponse without JoinNext");
  step_time.reset();  // the run may wait here: a new step begins
  // A request written right after this JoinNext was written while the
  // workflow waited here: it interrupts this very wait.
  SkipCancelRequests();
  if (terminate_requested_ && !ending_cancelled_) return Interrupt(TerminatedInterruption());
  if (!closing && TakeCancellation()) {
    STELE_TRY(MaybeFlush());
    return std::optional<JoinSetResponseValue>();
  }
  const uint64_t k = state->join_nexts;
  auto known = responses_by_join_set_.find(join_set);
  if (known != responses_by_join_set_.end() && known->second.size() >= k) {
    // Nothing to wait for: the JoinNext joins the batch like any
    // non-blocking event (a fan-in over responses that already arrived
    // costs one commit, not one per child).
    STELE_TRY(MaybeFlush());
  } else {
    // Opened before the flush that may hand the child to a local executor:
    // a child that finishes at once still finds the slot.
    CancellationToken wake;
    std::unique_ptr<executor::ResponseHandoff::Slot> slot = OpenHandoffSlot(*state, wake);
    STELE_TRY(Flush());
    STELE_TRY(WaitForResponses(join_set, k, slot.get(), &wake));
  }
  JoinSetResponseValue response = Consume(*state, responses_by_join_set_[join_set][k - 1]);
  if (const auto* delay = std::get_if<DelayResponse>(&response);
      delay != nullptr && !closing && !ending_cancelled_ &&
      grace_delay_ids_.contains(delay->delay_id.ToString())) {
    return Interrupt(Interruption::Kind::kTerminated,
                     "cancelled: the grace period of the cancel request ended");
  }
  return std::optional<JoinSetResponseValue>(std::move(response));
}

std::unique_ptr<executor::ResponseHandoff::Slot> RunState::OpenHandoffSlot(
    const JoinSetState& state, const CancellationToken& wake) {
  if (deps.handoff == nullptr || options.blocking_strategy != BlockingStrategy::kAwait ||
      state.unconsumed.size() != 1 || unconsumed_total_ != 1) {
    return nullptr;
  }
  // Exactly one child outstanding, and its result is the awaited one: with
  // more (a fan-out), the children's results commit concurrently in group
  // commits, which beats folding them one by one into this run's steps.
  // Nothing else may be outstanding in any join set either: the taken
  // result is recorded at the response index this run has seen, and a
  // response from elsewhere (another child, a delay) landing first would
  // make that write a Conflict that ends the run until its lease expires.
  const Submission& only = state.unconsumed.begin()->second;
  const auto* child = std::get_if<core::ExecutionIdDerived>(&only.id);
  if (child == nullptr) return nullptr;
  return deps.handoff->Open(*child, [wake] { wake.Cancel(); });
}

void RunState::AcceptHandedOver(executor::PlannedWrite write,
                                std::shared_ptr<executor::ResponseHandoff::Ticket> ticket) {
  const storage::AppendResponseToExecution& response = *write.parent_response;
  const auto index = static_cast<uint32_t>(responses_.size());
  AddResponses({core::JoinSetResponseEventOuter{
      response.created_at,
      core::JoinSetResponseEvent{
          response.join_set_id,
          core::ChildExecutionFinished{response.child_execution_id, response.finished_version,
                                       response.result}}}});
  taken_.push_back(TakenOutcome{
      storage::ChildOutcome{
          storage::AppendEventsToExecution{write.execution_id, write.version, {write.request}},
          response, index},
      std::move(ticket)});
}

Result<void, Interruption> RunState::WaitForResponses(const core::JoinSetId& join_set, uint64_t k,
                                                      executor::ResponseHandoff::Slot* slot,
                                                      const CancellationToken* wake) {
  auto have = [&] {
    auto it = responses_by_join_set_.find(join_set);
    return it != responses_by_join_set_.end() && it->second.size() >= k;
  };
  if (have()) return {};
  const std::string awaiting = "awaiting a response in join set " + join_set.ToString();
  if (options.blocking_strategy == BlockingStrategy::kInterrupt ||
      OnlyDelaysBeyondLease(FindJoinSet(join_set))) {
    return Interrupt(Interruption::Kind::kBlocked, awaiting);
  }
  using Steady = std::chrono::steady_clock;
  const Steady::time_point started = Steady::now();
  // While a handoff slot is watched the waits are on `wake`, which an
  // offer fires; a cancel of the run fires it too.
  struct CancelLink {
    const CancellationToken& token;
    std::optional<uint64_t> id;
    ~CancelLink() {
      if (id) token.Unregister(*id);
    }
  } link{ctx.cancel, std::nullopt};
  if (slot != nullptr) link.id = ctx.cancel.OnCancel([w = *wake] { w.Cancel(); });
  for (;;) {
    if (slot != nullptr) {
      if (std::shared_ptr<executor::ResponseHandoff::Ticket> ticket = slot->TakeTicket()) {
        if (std::optional<executor::PlannedWrite> write = ticket->Take()) {
          AcceptHandedOver(*std::move(write), std::move(ticket));
          if (have()) return {};
        }
        // Reclaimed by its executor meanwhile: the database delivers it.
        // The slot's wake has fired, so wait on the run's token from now on.
        slot = nullptr;
      }
    }
    const DateTime now = Now();
    if (now >= lock_expires_at_) {
      return Interrupt(Interruption::Kind::kBlocked, awaiting + " (lease ended)");
    }
    Steady::duration wait =
        std::min<Steady::duration>(options.subscription_interruption, lock_expires_at_ - now);
    if (options.max_warm_wait) {
      const Steady::duration left = started + *options.max_warm_wait - Steady::now();
      wait = std::max<Steady::duration>(Steady::duration::zero(), std::min(wait, left));
    }
    auto got = deps.db->SubscribeToNextResponses(
        ctx.execution_id, static_cast<uint32_t>(responses_.size()),
        storage::WaitOptions{Steady::now() + wait, slot != nullptr ? *wake : ctx.cancel});
    if (got) {
      AddResponses(*std::move(got));
      if (have()) return {};
    } else if (got.error().IsTimeout()) {
      if (got.error().timeout() == storage::TimeoutOutcome::kCancel) {
        if (ctx.cancel.IsCancelled()) {
          return Interrupt(Interruption::Kind::kCancelled, "run cancelled while " + awaiting);
        }
        continue;  // an offer in the slot woke the wait
      }
    } else {
      return DbFailure("subscribing to responses", storage::DbErrorWrite(got.error().read()));
    }
    if (options.max_warm_wait && Steady::now() >= started + *options.max_warm_wait) {
      return Interrupt(Interruption::Kind::kBlocked, awaiting + " (warm wait ended)");
    }
  }
}

bool RunState::OnlyDelaysBeyondLease(const JoinSetState* state) const {
  if (state == nullptr || state->unconsumed.empty()) return false;
  // A message may come any moment: a receive waits warm.
  if (state->id.kind() == core::JoinSetKind::kMessages) return false;
  for (const auto& [id, submission] : state->unconsumed) {
    if (!submission.delay_expires_at || *submission.delay_expires_at <= lock_expires_at_)
      return false;
  }
  return true;
}

JoinSetResponseValue RunState::Consume(JoinSetState& state, size_t response_idx) {
  const core::JoinSetResponseEventOuter& response = responses_[response_idx];
  return std::visit(
      Overloaded{
          [&](const core::DelayFinished& delay) -> JoinSetResponseValue {
            unconsumed_total_ -= state.unconsumed.erase(delay.delay_id.ToString());
            return DelayResponse{delay.delay_id, delay.ok};
          },
          [&](const core::ChildExecutionFinished& child) -> JoinSetResponseValue {
            std::string id = child.child_execution_id.ToString();
            unconsumed_total_ -= state.unconsumed.erase(id);
            processed_child_responses_.insert_or_assign(id, response_idx);
            std::optional<core::FunctionFqn> ffqn = ChildFfqn(id);
            if (!ffqn) {
              // Cannot happen in a consistent log: a response follows its request.
              STELE_LOG(kWarn, ctx.execution_id.ToString() << ": response of unknown child " << id);
              ffqn = ctx.ffqn;
            }
            return ChildResponse{child.child_execution_id, *std::move(ffqn), child.result};
          },
          [&](const core::MessageReceived& message) -> JoinSetResponseValue {
            return MessageResponse{message.message_id, message.body};
          },
      },
      response.event.event);
}

std::optional<std::pair<core::FunctionFqn, const core::SupportedFunctionReturnValue*>>
RunState::ProcessedChildResult(const core::ExecutionIdDerived& child) const {
  std::string id = child.ToString();
  auto it = processed_child_responses_.find(id);
  if (it == processed_child_responses_.end()) return std::nullopt;
  const auto& finished = std::get<core::ChildExecutionFinished>(responses_[it->second].event.event);
  std::optional<core::FunctionFqn> ffqn = ChildFfqn(id);
  if (!ffqn) return std::nullopt;
  return std::make_pair(*std::move(ffqn), &finished.result);
}

std::string RunState::DescribeUnprocessed() const {
  if (cursor_ >= history_.size()) return "none";
  return "version " + history_[cursor_].second.ToString() + ": " +
         DescribeHistoryEvent(history_[cursor_].first);
}

Result<void, storage::DbErrorWrite> RunState::CancelSubmission(const Submission& submission,
                                                               DateTime now) {
  if (const auto* delay = std::get_if<core::DelayId>(&submission.id)) {
    STELE_TRY(storage::CancelDelay(*deps.db, *delay, now));
    return {};
  }
  const auto& child = std::get<core::ExecutionIdDerived>(submission.id);
  std::optional<FunctionInfo> info =
      submission.ffqn ? deps.functions->Find(*submission.ffqn) : std::nullopt;
  if (info && info->kind == FunctionKind::kWorkflow) return {};  // awaited, not cancelled
  // The same path as an API-side cancel: the database first, then the
  // token of a run of this process, so a running activity stops now
  // instead of holding its permit until its deadline.
  STELE_TRY(
      executor::CancelActivity(*deps.db, deps.cancel_registry, core::ExecutionId(child), now));
  return {};
}

void RunState::CancelUnawaitedOnFailure() {
  if (failure_cancels_done_) return;
  failure_cancels_done_ = true;
  // What the workflow did before it failed becomes part of its log, so
  // that what it submitted exists and can be cancelled (an activity that
  // is then never run, rather than silently dropped). No eager dispatch:
  // the children are cancelled right away.
  std::set<std::string> unwritten;
  if (auto flushed = Flush(/*dispatch=*/false); !flushed) {
    STELE_LOG(kWarn, ctx.execution_id.ToString() << ": failing workflow: cannot write its last "
                                                 << "events: " << flushed.error().ToString());
    for (const storage::AppendRequest& cached : cache_) {
      const auto* history = std::get_if<core::HistoryEventRequest>(&cached.event);
      const auto* request =
          history != nullptr ? std::get_if<core::HistoryJoinSetRequest>(&history->event) : nullptr;
      if (request == nullptr) continue;
      std::visit(
          Overloaded{[&](const core::DelayRequest& d) { unwritten.insert(d.delay_id.ToString()); },
                     [&](const core::ChildExecutionRequest& c) {
                       unwritten.insert(c.child_execution_id.ToString());
                     }},
          request->request);
    }
  }
  const DateTime now = Now();
  for (const auto& [id, join_set] : join_sets_) {
    for (const std::string& key : join_set.order) {
      auto it = join_set.unconsumed.find(key);
      if (it == join_set.unconsumed.end() || unwritten.contains(key)) continue;
      if (auto cancelled = CancelSubmission(it->second, now); !cancelled) {
        STELE_LOG(kWarn, ctx.execution_id.ToString() << ": failing workflow: cannot cancel " << key
                                                     << ": " << cancelled.error().ToString());
      } else {
        STELE_LOG(kDebug, ctx.execution_id.ToString() << ": failing workflow: cancelled " << key);
      }
    }
  }
}

std::optional<core::FunctionFqn> RunState::ChildFfqn(const std::string& child_id) const {
  auto it = child_ffqn_.find(child_id);
  if (it == child_ffqn_.end()) return std::nullopt;
  return it->second;
}

}  // namespace stele::runtime::workflow::internal
