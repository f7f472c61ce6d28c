// Writes of the SQLite backend: each is one logical operation on the writer
// thread, so its checks and writes are atomic (journal_tx.h has the rules).
#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"
#include "storage/request_rules.h"
#include "storage/sqlite/connection.h"
#include "storage/sqlite/event_codec.h"
#include "storage/sqlite/journal_tx.h"
#include "storage/sqlite/queries.h"
#include "storage/sqlite/row_codec.h"

namespace stele::storage::sqlite::internal {

Result<Version, DbErrorWrite> SqliteConnection::Append(const ExecutionId& execution_id,
                                                       Version version, const AppendRequest& req) {
  PreEncodedEvents pre_encoded;
  pre_encoded.Add(&req.event, req.event);
  return store_->Write<Version, DbErrorWrite>([&](WriteContext& tx) {
    tx.pre_encoded = &pre_encoded;
    // A single append has no separate "now": the event's time decides
    // whether a new PendingAt is due.
    return AppendEventTx(tx, execution_id, version, req, req.created_at);
  });
}

namespace {

// The writer's part of a StepWrite inside the caller's transaction: its
// events, then its children, each locked when named in `locks` and the
// rules allow it.
Result<CreatedAndLockedChildren, DbErrorWrite> CreateAndLockTx(
    WriteContext& tx, DateTime current_time, const std::vector<AppendRequest>& batch,
    const ExecutionId& execution_id, Version version,
    const std::vector<CreateRequest>& child_requests, const std::vector<ChildLock>& locks) {
  STELE_ASSIGN_OR_RETURN(Version next,
                         AppendBatchTx(tx, execution_id, version, batch, current_time));
  // Each child's "became pending" notice, to withdraw for the children
  // locked below: nobody else needs waking for them.
  std::vector<std::pair<ExecutionId, size_t>> notice_of;
  for (const CreateRequest& child : child_requests) {
    const size_t notice = tx.notes.pending.size();
    STELE_TRY(CreateTx(tx, child, current_time));
    if (tx.notes.pending.size() == notice + 1) notice_of.emplace_back(child.execution_id, notice);
  }
  std::vector<size_t> withdrawn;
  CreatedAndLockedChildren result{next, {}};
  for (const ChildLock& lock : locks) {
    const CreateRequest* created = nullptr;
    for (const CreateRequest& child : child_requests) {
      if (child.execution_id == lock.child_id) created = &child;
    }
    if (created == nullptr) {
      STELE_LOG(kWarn, lock.child_id.ToString() << ": not locked: not created here");
      continue;
    }
    // A lock the rules refuse leaves that child pending, and only it.
    STELE_TRY(tx.connection.Exec("SAVEPOINT lock_child"));
    auto appended = AppendEventTx(tx, lock.child_id, Version(1),
                                  AppendRequest{current_time, lock.locked}, current_time, &lock);
    if (appended) {
      STELE_TRY(tx.connection.Exec("RELEASE lock_child"));
      // A child locked where it was created has no history and no
      // responses yet: its LockedExecution is its CreateRequest, so
      // nothing is read back.
      result.locked.push_back(LockedExecution{lock.child_id,
                                              *appended,
                                              created->metadata,
                                              lock.locked,
                                              created->ffqn,
                                              created->params,
                                              {},
                                              {},
                                              created->parent,
                                              0,
                                              created->policy});
      for (const auto& [id, notice] : notice_of) {
        if (id == lock.child_id) withdrawn.push_back(notice);
      }
    } else {
      STELE_LOG(kDebug, lock.child_id.ToString()
                            << ": not locked at creation: " << appended.error().ToString());
      STELE_TRY(tx.connection.Exec("ROLLBACK TO lock_child"));
      STELE_TRY(tx.connection.Exec("RELEASE lock_child"));
    }
  }
  std::sort(withdrawn.rbegin(), withdrawn.rend());
  for (size_t notice : withdrawn) {
    tx.notes.pending.erase(tx.notes.pending.begin() + static_cast<std::ptrdiff_t>(notice));
  }
  return result;
}

// A child's events and its response to its parent inside the caller's
// transaction.
Result<Version, DbErrorWrite> RespondToParentTx(WriteContext& tx,
                                                const AppendEventsToExecution& events,
                                                const AppendResponseToExecution& response,
                                                DateTime current_time) {
  STELE_ASSIGN_OR_RETURN(Version next, AppendBatchTx(tx, events.execution_id, events.version,
                                                     events.batch, current_time));
  // A second response for the same child is Conflict, and the child's
  // events above are rolled back with it.
  STELE_TRY(InsertResponseTx(tx, response.parent_execution_id, ChildFinishedResponse(response),
                             current_time));
  return next;
}

}  // namespace

namespace {

// Every row a step writes, encoded on the caller's thread.
PreEncodedEvents PreEncodeStep(const StepWrite& write) {
  PreEncodedEvents rows;
  for (const ChildOutcome& outcome : write.outcomes) {
    for (const AppendRequest& req : outcome.child.batch) rows.Add(&req.event, req.event);
  }
  for (const AppendRequest& req : write.batch) rows.Add(&req.event, req.event);
  for (const CreateRequest& child : write.children) rows.Add(&child, child.ToCreatedEvent());
  for (const ChildLock& lock : write.locks) {
    rows.Add(&lock, core::ExecutionRequest(lock.locked));
  }
  return rows;
}

}  // namespace

Result<CreatedAndLockedChildren, DbErrorWrite> SqliteConnection::WriteStep(const StepWrite& write) {
  STELE_TRY(ValidateStepWrite(write));
  const PreEncodedEvents pre_encoded = PreEncodeStep(write);
  return store_->Write<CreatedAndLockedChildren, DbErrorWrite>(
      [&](WriteContext& tx) -> Result<CreatedAndLockedChildren, DbErrorWrite> {
        tx.pre_encoded = &pre_encoded;
        for (const ChildOutcome& outcome : write.outcomes) {
          // The parent's run consumed the response as its response number
          // `response_index`; anything that landed first would reorder what
          // a replay sees.
          if (outcome.response_index) {
            STELE_ASSIGN_OR_RETURN(
                uint32_t cursor,
                NextCursor(tx.connection, outcome.response.parent_execution_id.ToString()));
            if (cursor != *outcome.response_index) {
              return Unexpected(DbErrorWriteNonRetriable::Conflict());
            }
          }
          STELE_TRY(RespondToParentTx(tx, outcome.child, outcome.response, write.current_time));
        }
        if (write.batch.empty()) return CreatedAndLockedChildren{write.version, {}};
        return CreateAndLockTx(tx, write.current_time, write.batch, write.execution_id,
                               write.version, write.children, write.locks);
      });
}

Result<Version, DbErrorWrite> SqliteConnection::Create(const CreateRequest& req) {
  PreEncodedEvents pre_encoded;
  pre_encoded.Add(&req, req.ToCreatedEvent());
  return store_->Write<Version, DbErrorWrite>(
      [&](WriteContext& tx) -> Result<Version, DbErrorWrite> {
        tx.pre_encoded = &pre_encoded;
        STELE_TRY(ValidateStandaloneCreate(req));
        return CreateTx(tx, req, req.created_at);
      });
}

Result<AppendDelayResponseOutcome, DbErrorWrite> SqliteConnection::AppendDelayResponse(
    DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
    const core::DelayId& delay_id, bool ok) {
  auto respond = [&](WriteContext& tx) -> Result<AppendDelayResponseOutcome, DbErrorWrite> {
    core::JoinSetResponseEventOuter outer{
        created_at, core::JoinSetResponseEvent{join_set_id, core::DelayFinished{delay_id, ok}}};
    STELE_TRY(CheckResponseAddressee(execution_id, outer.event));
    STELE_ASSIGN_OR_RETURN(auto state, LoadState(tx.connection, execution_id.ToString()));
    if (!state) return Unexpected(DbErrorWrite::NotFound());
    // The first response decides, whatever this one says; nothing is
    // written (timers and cancellations race by design).
    STELE_ASSIGN_OR_RETURN(auto existing, FindDelayResponse(tx.connection, delay_id));
    if (existing) {
      return *existing ? AppendDelayResponseOutcome::kAlreadyFinished
                       : AppendDelayResponseOutcome::kAlreadyCancelled;
    }
    // A delay never requested is NotFound there, and nothing is written.
    STELE_TRY(InsertResponseTx(tx, execution_id, outer, created_at));
    return AppendDelayResponseOutcome::kSuccess;
  };
  // A fired delay is a fact the watcher finds again after a power loss (its
  // t_delay row goes in the same transaction); a cancellation is a user's
  // acknowledged request (writer.h, "Unsynced commits").
  if (ok) return store_->WriteUnsynced<AppendDelayResponseOutcome, DbErrorWrite>(respond);
  return store_->Write<AppendDelayResponseOutcome, DbErrorWrite>(respond);
}

Result<AppendMessageOutcome, DbErrorWrite> SqliteConnection::AppendMessage(
    DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
    const core::MessageReceived& message) {
  return store_->Write<AppendMessageOutcome, DbErrorWrite>(
      [&](WriteContext& tx) -> Result<AppendMessageOutcome, DbErrorWrite> {
        // The order of request_rules.h, "Messages".
        STELE_TRY(ValidateMessage(join_set_id, message));
        STELE_ASSIGN_OR_RETURN(auto state, LoadState(tx.connection, execution_id.ToString()));
        if (!state) return Unexpected(DbErrorWrite::NotFound());
        STELE_ASSIGN_OR_RETURN(
            auto existing, FindMessage(tx.connection, execution_id.ToString(), message.message_id));
        if (existing) return RedeliveryOutcome(*existing, join_set_id, message);
        if (state->pending_state.IsFinished()) return Unexpected(FinishedRefusesMessage());
        STELE_TRY(
            InsertResponseTx(tx, execution_id,
                             core::JoinSetResponseEventOuter{
                                 created_at, core::JoinSetResponseEvent{join_set_id, message}},
                             created_at));
        return AppendMessageOutcome::kDelivered;
      });
}

Result<void, DbErrorWrite> SqliteConnection::AppendResponse(
    DateTime created_at, const ExecutionId& execution_id,
    const core::JoinSetResponseEvent& response) {
  return store_->Write<void, DbErrorWrite>([&](WriteContext& tx) {
    return InsertResponseTx(tx, execution_id, core::JoinSetResponseEventOuter{created_at, response},
                            created_at);
  });
}

Result<void, DbErrorWrite> SqliteConnection::AppendBacktrace(const core::BacktraceInfo& info) {
  return AppendBacktraceBatch({info});
}

namespace {

// A backtrace with its JSON columns, encoded on the caller's thread.
struct EncodedBacktrace {
  std::string execution_id;
  int64_t version_min_including = 0;
  int64_t version_max_excluding = 0;
  std::string component;
  std::string backtrace;
};

Result<std::vector<EncodedBacktrace>, DbErrorWrite> EncodeBacktraces(
    const std::vector<core::BacktraceInfo>& batch) {
  std::vector<EncodedBacktrace> encoded;
  encoded.reserve(batch.size());
  for (const core::BacktraceInfo& info : batch) {
    STELE_ASSIGN_OR_RETURN(std::string component, EncodeJson(info.component_id));
    STELE_ASSIGN_OR_RETURN(std::string backtrace, EncodeJson(info.wasm_backtrace));
    encoded.push_back(EncodedBacktrace{
        info.execution_id.ToString(), info.version_min_including.value(),
        info.version_max_excluding.value(), std::move(component), std::move(backtrace)});
  }
  return encoded;
}

// The first backtrace of a version range wins: a replayed run records the
// same range again, and reads answer with the first (as the reference
// model does). A text is stored once (schema V9, t_backtrace_text); a
// backtrace of an execution that is not there (deleted meanwhile) is
// dropped: nothing could read it.
Result<void, DbErrorWrite> InsertBacktracesTx(WriteContext& tx,
                                              const std::vector<EncodedBacktrace>& batch) {
  STELE_ASSIGN_OR_RETURN(
      Statement text,
      tx.connection.Prepare("INSERT INTO t_backtrace_text (component_id, wasm_backtrace) "
                            "SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM t_state WHERE "
                            "execution_id = ?3) ON CONFLICT DO NOTHING"));
  STELE_ASSIGN_OR_RETURN(
      Statement insert,
      tx.connection.Prepare(
          "INSERT INTO t_backtrace (exec_key, version_min_including, version_max_excluding, "
          "text_id) SELECT s.exec_key, ?2, ?3, t.id FROM t_state s, t_backtrace_text t "
          "WHERE s.execution_id = ?1 AND t.component_id = ?4 AND t.wasm_backtrace = ?5 "
          "ON CONFLICT DO NOTHING"));
  for (const EncodedBacktrace& info : batch) {
    text.BindText(1, info.component);
    text.BindText(2, info.backtrace);
    text.BindText(3, info.execution_id);
    STELE_TRY(text.Run());
    text.Reset();
    insert.BindText(1, info.execution_id);
    insert.BindInt64(2, info.version_min_including);
    insert.BindInt64(3, info.version_max_excluding);
    insert.BindText(4, info.component);
    insert.BindText(5, info.backtrace);
    STELE_TRY(insert.Run());
    insert.Reset();
  }
  return {};
}

}  // namespace

Result<void, DbErrorWrite> SqliteConnection::AppendBacktraceBatch(
    const std::vector<core::BacktraceInfo>& batch) {
  if (batch.empty()) return {};
  STELE_ASSIGN_OR_RETURN(std::vector<EncodedBacktrace> encoded, EncodeBacktraces(batch));
  return store_->Write<void, DbErrorWrite>(
      [&](WriteContext& tx) { return InsertBacktracesTx(tx, encoded); });
}

void SqliteConnection::StoreBacktraces(std::vector<core::BacktraceInfo> batch) {
  if (batch.empty()) return;
  auto encoded = EncodeBacktraces(batch);
  if (!encoded) {
    LogDetachedWriteFailure("storing backtraces of " + batch.front().execution_id.ToString(),
                            encoded.error().ToString());
    return;
  }
  std::string what = "storing " + std::to_string(encoded->size()) + " backtraces of " +
                     encoded->front().execution_id;
  // Queued, not awaited: the run's next write (its result) is queued after
  // it, and the writer commits its queue in order.
  store_->WriteDetached(
      [rows = std::move(*encoded)](WriteContext& tx) { return InsertBacktracesTx(tx, rows); },
      std::move(what));
}

Result<void, DbErrorWrite> SqliteConnection::UpgradeExecutionComponent(
    const ExecutionId& execution_id, const core::InputContentDigest& old_digest,
    const core::InputContentDigest& new_digest) {
  return store_->Write<void, DbErrorWrite>([&](WriteContext& tx) {
    return UpgradeComponentTx(tx, execution_id, old_digest, new_digest);
  });
}

}  // namespace stele::storage::sqlite::internal
