// Writes of the PostgreSQL backend: each is one transaction on one pooled
// connection, run through a Journal (journal.h has the rules and the round
// trips): at most one pipeline that locks and reads what the write decides
// on, then one with the writes and COMMIT. Locking is in lock.cc.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"
#include "storage/postgres/connection.h"
#include "storage/postgres/journal.h"
#include "storage/request_rules.h"

namespace stele::storage::postgres::internal {

namespace {

const std::string kFindDelayResponse =
    "SELECT delay_success FROM t_join_set_response WHERE delay_id = $1";

}  // namespace

Result<Version, DbErrorWrite> PostgresConnection::Append(const ExecutionId& execution_id,
                                                         Version version,
                                                         const AppendRequest& req) {
  return store_->Write<Version, DbErrorWrite>([&](Tx& tx) -> Result<Version, DbErrorWrite> {
    Journal journal(tx);
    // A single append has no separate "now": the event's time decides
    // whether a new PendingAt is due.
    STELE_ASSIGN_OR_RETURN(Version next,
                           journal.Append(execution_id, version, req, req.created_at));
    STELE_TRY(journal.Flush());
    return next;
  });
}

namespace {

// AppendBatch of the parent, then each child created in its final state:
// locked when named in `locks` and the rules allow it (without its "became
// pending" notices: nobody else need be woken for it), pending otherwise.
// Flushes the Journal.
Result<CreatedAndLockedChildren, DbErrorWrite> CreateAndLockChildren(
    Journal& journal, DateTime current_time, const std::vector<AppendRequest>& batch,
    const ExecutionId& execution_id, Version version,
    const std::vector<CreateRequest>& child_requests, const std::vector<ChildLock>& locks) {
  STELE_ASSIGN_OR_RETURN(Version next,
                         journal.AppendBatch(execution_id, version, batch, current_time));
  std::vector<const CreateRequest*> locked_children;
  for (const CreateRequest& child : child_requests) {
    const ChildLock* lock = nullptr;
    for (const ChildLock& candidate : locks) {
      if (candidate.child_id == child.execution_id) {
        lock = &candidate;
        break;
      }
    }
    STELE_ASSIGN_OR_RETURN(bool locked, journal.Create(child, current_time,
                                                       lock != nullptr ? &lock->locked : nullptr));
    if (locked) {
      locked_children.push_back(&child);
    } else if (lock != nullptr) {
      STELE_LOG(kDebug, child.execution_id.ToString()
                            << ": not locked at creation: the lock rules refuse it");
    }
  }
  CreatedAndLockedChildren result{next, {}};
  for (const ChildLock& lock : locks) {
    const CreateRequest* created = nullptr;
    for (const CreateRequest* child : locked_children) {
      if (child->execution_id == lock.child_id) created = child;
    }
    if (created == nullptr) {
      bool known = false;
      for (const CreateRequest& child : child_requests) {
        known = known || child.execution_id == lock.child_id;
      }
      if (!known) STELE_LOG(kWarn, lock.child_id.ToString() << ": not locked: not created here");
      continue;
    }
    // A child locked where it was created has no history and no
    // responses yet: its LockedExecution is its CreateRequest.
    result.locked.push_back(LockedExecution{lock.child_id,
                                            Version(2),
                                            created->metadata,
                                            lock.locked,
                                            created->ffqn,
                                            created->params,
                                            {},
                                            {},
                                            created->parent,
                                            0,
                                            created->policy});
  }
  STELE_TRY(journal.Flush());
  return result;
}

// A StepWrite in one transaction.
Result<CreatedAndLockedChildren, DbErrorWrite> WriteStepTx(Store& store, const StepWrite& write) {
  const DateTime current_time = write.current_time;
  const std::vector<ChildOutcome>& outcomes = write.outcomes;
  const std::vector<AppendRequest>& batch = write.batch;
  const ExecutionId& execution_id = write.execution_id;
  const Version version = write.version;
  return store.Write<CreatedAndLockedChildren, DbErrorWrite>(
      [&](Tx& tx) -> Result<CreatedAndLockedChildren, DbErrorWrite> {
        Journal journal(tx);
        if (outcomes.empty()) {
          return CreateAndLockChildren(journal, current_time, batch, execution_id, version,
                                       write.children, write.locks);
        }
        // Every row locked in the first round trip, children before their
        // parent (the order AppendBatchRespondToParent locks them in), with
        // the responses the parent's JoinNexts look for.
        for (const ChildOutcome& outcome : outcomes) {
          journal.Prefetch(outcome.child.execution_id.ToString(), &outcome.child.batch);
        }
        journal.Prefetch(execution_id.ToString(), &batch);
        // A finishing workflow's own response (no response_index) goes to
        // its parent: that row last, as a child's response always locks it.
        for (const ChildOutcome& outcome : outcomes) {
          if (!outcome.response_index) {
            journal.Prefetch(outcome.response.parent_execution_id.ToString());
          }
        }
        for (const ChildOutcome& outcome : outcomes) {
          const AppendResponseToExecution& response = outcome.response;
          // The parent's run consumed the response as its response number
          // `response_index`; one that landed first would reorder what a
          // replay sees.
          if (outcome.response_index) {
            STELE_ASSIGN_OR_RETURN(const ExecutionState* parent,
                                   journal.State(response.parent_execution_id.ToString()));
            if (parent->response_count.value_or(0) != *outcome.response_index) {
              return Unexpected(DbErrorWriteNonRetriable::Conflict());
            }
          }
          STELE_TRY(journal.AppendBatch(outcome.child.execution_id, outcome.child.version,
                                        outcome.child.batch, current_time));
          STELE_TRY(journal.InsertResponse(response.parent_execution_id,
                                           ChildFinishedResponse(response), current_time));
        }
        if (batch.empty()) {
          STELE_TRY(journal.Flush());
          return CreatedAndLockedChildren{version, {}};
        }
        return CreateAndLockChildren(journal, current_time, batch, execution_id, version,
                                     write.children, write.locks);
      });
}

Result<Version, DbErrorWrite> WriteChildResponse(Store& store, const ChildResponseWrite& request) {
  return store.Write<Version, DbErrorWrite>([&](Tx& tx) -> Result<Version, DbErrorWrite> {
    Journal journal(tx);
    // Both rows locked in one round trip, the child's first (as a child's
    // own appends and then its response always lock them).
    journal.Prefetch(request.events->execution_id.ToString(), &request.events->batch);
    journal.Prefetch(request.response->parent_execution_id.ToString());
    STELE_ASSIGN_OR_RETURN(
        Version next, journal.AppendBatch(request.events->execution_id, request.events->version,
                                          request.events->batch, request.current_time));
    // A second response for the same child is Conflict, and the child's
    // events above are rolled back with it.
    STELE_TRY(journal.InsertResponse(request.response->parent_execution_id,
                                     ChildFinishedResponse(*request.response),
                                     request.current_time));
    STELE_TRY(journal.Flush());
    return next;
  });
}

// Several children of one parent (response_batcher.h): their rows locked in
// id order — one order for every group, so two groups (two processes)
// cannot deadlock on each other — then the parent's; the responses
// inserted in arrival order.
Result<std::vector<Version>, DbErrorWrite> WriteChildResponses(
    Store& store, const std::vector<const ChildResponseWrite*>& group) {
  return store.Write<std::vector<Version>, DbErrorWrite>(
      [&](Tx& tx) -> Result<std::vector<Version>, DbErrorWrite> {
        Journal journal(tx);
        std::vector<const ChildResponseWrite*> by_id = group;
        std::sort(by_id.begin(), by_id.end(), [](const auto* a, const auto* b) {
          return a->events->execution_id.ToString() < b->events->execution_id.ToString();
        });
        for (const ChildResponseWrite* request : by_id) {
          journal.Prefetch(request->events->execution_id.ToString(), &request->events->batch);
        }
        journal.Prefetch(group.front()->response->parent_execution_id.ToString());
        std::vector<Version> versions;
        versions.reserve(group.size());
        for (const ChildResponseWrite* request : group) {
          STELE_ASSIGN_OR_RETURN(
              Version next,
              journal.AppendBatch(request->events->execution_id, request->events->version,
                                  request->events->batch, request->current_time));
          STELE_TRY(journal.InsertResponse(request->response->parent_execution_id,
                                           ChildFinishedResponse(*request->response),
                                           request->current_time));
          versions.push_back(next);
        }
        STELE_TRY(journal.Flush());
        return versions;
      });
}

}  // namespace

Result<CreatedAndLockedChildren, DbErrorWrite> PostgresConnection::WriteStep(
    const StepWrite& write) {
  STELE_TRY(ValidateStepWrite(write));
  Store& store = *store_;
  if (!write.batch.empty() || write.outcomes.size() != 1 || write.outcomes[0].response_index) {
    return WriteStepTx(store, write);
  }
  const ChildOutcome& end = write.outcomes[0];
  STELE_TRY(store.response_batcher().Run(
      ChildResponseWrite{&end.child, &end.response, write.current_time},
      [&](const std::vector<const ChildResponseWrite*>& group) {
        return WriteChildResponses(store, group);
      },
      [&](const ChildResponseWrite& request) { return WriteChildResponse(store, request); }));
  return CreatedAndLockedChildren{write.version, {}};
}

Result<Version, DbErrorWrite> PostgresConnection::Create(const CreateRequest& req) {
  // Nothing to read first: one pipeline, an implicit transaction.
  STELE_TRY(ValidateStandaloneCreate(req));
  return store_->Write<Version, DbErrorWrite>([&](Tx& tx) -> Result<Version, DbErrorWrite> {
    Journal journal(tx);
    STELE_TRY(journal.Create(req, req.created_at));
    STELE_TRY(journal.Flush());
    return Version(1);
  });
}

Result<AppendDelayResponseOutcome, DbErrorWrite> PostgresConnection::AppendDelayResponse(
    DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
    const core::DelayId& delay_id, bool ok) {
  auto outcome = store_->Write<AppendDelayResponseOutcome, DbErrorWrite>(
      [&](Tx& tx) -> Result<AppendDelayResponseOutcome, DbErrorWrite> {
        core::JoinSetResponseEventOuter outer{
            created_at, core::JoinSetResponseEvent{join_set_id, core::DelayFinished{delay_id, ok}}};
        STELE_TRY(CheckResponseAddressee(execution_id, outer.event));
        Journal journal(tx);
        // Lock the parent first: the delay's first response decides, and a
        // concurrent one waits for the lock and then sees it (the lookup
        // runs after the lock, in the same pipeline).
        journal.Prefetch(execution_id.ToString());
        journal.PrefetchDelay(execution_id, join_set_id, delay_id);
        STELE_TRY(journal.State(execution_id.ToString()));
        STELE_ASSIGN_OR_RETURN(Journal::DelayStatus status,
                               journal.Delay(execution_id, join_set_id, delay_id));
        if (status.first_response) {
          return *status.first_response ? AppendDelayResponseOutcome::kAlreadyFinished
                                        : AppendDelayResponseOutcome::kAlreadyCancelled;
        }
        // A delay never requested is NotFound there, and nothing is written.
        STELE_TRY(journal.InsertResponse(execution_id, outer, created_at));
        STELE_TRY(journal.Flush());
        return AppendDelayResponseOutcome::kSuccess;
      });
  // Lost a race on the delay id's unique index (another parent row): the
  // committed winner decides.
  if (!outcome && outcome.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kConflict)) {
    auto existing = store_->Read<std::optional<bool>, DbErrorWrite>(
        [&](PgConn& db) -> Result<std::optional<bool>, DbErrorWrite> {
          auto res = db.Exec(kFindDelayResponse, Params().Text(delay_id.ToString()));
          if (!res) return Unexpected(res.error().ToGeneric());
          if (res->rows() == 0) return std::optional<bool>();
          return std::optional<bool>(res->Bool(0, 0));
        });
    if (existing && *existing) {
      return **existing ? AppendDelayResponseOutcome::kAlreadyFinished
                        : AppendDelayResponseOutcome::kAlreadyCancelled;
    }
  }
  return outcome;
}

Result<AppendMessageOutcome, DbErrorWrite> PostgresConnection::AppendMessage(
    DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
    const core::MessageReceived& message) {
  return store_->Write<AppendMessageOutcome, DbErrorWrite>(
      [&](Tx& tx) -> Result<AppendMessageOutcome, DbErrorWrite> {
        // The order of request_rules.h, "Messages". The row lock orders
        // two deliveries of one id: the second sees the first.
        STELE_TRY(ValidateMessage(join_set_id, message));
        Journal journal(tx);
        STELE_ASSIGN_OR_RETURN(const ExecutionState* state, journal.State(execution_id.ToString()));
        STELE_ASSIGN_OR_RETURN(auto existing,
                               journal.FindMessage(execution_id, message.message_id));
        if (existing) return RedeliveryOutcome(*existing, join_set_id, message);
        if (state->pending_state.IsFinished()) return Unexpected(FinishedRefusesMessage());
        STELE_TRY(journal.InsertResponse(
            execution_id,
            core::JoinSetResponseEventOuter{created_at,
                                            core::JoinSetResponseEvent{join_set_id, message}},
            created_at));
        STELE_TRY(journal.Flush());
        return AppendMessageOutcome::kDelivered;
      });
}

Result<void, DbErrorWrite> PostgresConnection::AppendResponse(
    DateTime created_at, const ExecutionId& execution_id,
    const core::JoinSetResponseEvent& response) {
  return store_->Write<void, DbErrorWrite>([&](Tx& tx) -> Result<void, DbErrorWrite> {
    Journal journal(tx);
    STELE_TRY(journal.InsertResponse(
        execution_id, core::JoinSetResponseEventOuter{created_at, response}, created_at));
    return journal.Flush();
  });
}

Result<void, DbErrorWrite> PostgresConnection::AppendBacktrace(const core::BacktraceInfo& info) {
  return AppendBacktraceBatch({info});
}

Result<void, DbErrorWrite> PostgresConnection::AppendBacktraceBatch(
    const std::vector<core::BacktraceInfo>& batch) {
  if (batch.empty()) return {};
  // Writes only: one pipeline, an implicit transaction.
  return store_->Write<void, DbErrorWrite>([&](Tx& tx) -> Result<void, DbErrorWrite> {
    // The first backtrace of a version range wins (as in the reference model).
    for (const core::BacktraceInfo& info : batch) {
      STELE_ASSIGN_OR_RETURN(std::string component, EncodeJson(info.component_id));
      STELE_ASSIGN_OR_RETURN(std::string backtrace, EncodeJson(info.wasm_backtrace));
      tx.Write(
          "INSERT INTO t_backtrace (execution_id, component_id, version_min_including, "
          "version_max_excluding, wasm_backtrace) VALUES ($1, $2::json, $3, $4, $5::json) "
          "ON CONFLICT DO NOTHING",
          Params()
              .Text(info.execution_id.ToString())
              .Text(component)
              .Int(info.version_min_including.value())
              .Int(info.version_max_excluding.value())
              .Text(backtrace));
    }
    return {};
  });
}

Result<void, DbErrorWrite> PostgresConnection::UpgradeExecutionComponent(
    const ExecutionId& execution_id, const core::InputContentDigest& old_digest,
    const core::InputContentDigest& new_digest) {
  return store_->Write<void, DbErrorWrite>([&](Tx& tx) -> Result<void, DbErrorWrite> {
    Journal journal(tx);
    const std::string id = execution_id.ToString();
    STELE_ASSIGN_OR_RETURN(const ExecutionState* state, journal.State(id));
    if (state->IsFinished()) {
      return Unexpected(DbErrorWriteNonRetriable::IllegalState("already finished"));
    }
    if (state->digest != old_digest) return Unexpected(DbErrorWriteNonRetriable::Conflict());
    tx.Write("UPDATE t_state SET component_id_input_digest = $1::bytea WHERE execution_id = $2",
             Params().Text(DigestParam(new_digest)).Text(id));
    if (const auto* pending =
            std::get_if<core::PendingStatePendingAt>(&state->pending_state.value)) {
      tx.notices.push_back(
          Notice{PendingDigestKey(new_digest), pending->scheduled_at, pending->scheduled_at});
    }
    return journal.Flush();
  });
}

}  // namespace stele::storage::postgres::internal
