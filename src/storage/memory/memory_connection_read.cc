// Reads and lists of the memory backend, each a consistent snapshot taken
// under the state's mutex.
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <variant>

#include "core/list_key.h"
#include "storage/memory/memory_connection.h"

namespace stele::storage::memory::internal {

namespace {

// The cursor value compared with a row's primary key. Execution ids compare
// by their list key (core::ListKey), as the SQL backends compare
// their t_state.list_key column.
DateTime CursorKey(DateTime t) { return t; }
std::string CursorKey(const ExecutionId& id) { return core::ListKey(id); }

template <class Key>
bool PassesCursor(const Key& key, const Key& cursor, bool newer, bool including) {
  if (newer) return including ? key >= cursor : key > cursor;
  return including ? key <= cursor : key < cursor;
}

// One page of `rows`, always returned in descending order of
// (primary key, id text). NewerThan takes the `length` rows right after the
// cursor, OlderThan the `length` rows right before it.
template <class Cursor, class PrimaryKey>
std::vector<ExecutionWithState> PageOfExecutions(
    std::vector<ExecutionWithState> rows, const core::Pagination<std::optional<Cursor>>& page,
    const PrimaryKey& primary) {
  const bool newer =
      page.direction == core::Pagination<std::optional<Cursor>>::Direction::kNewerThan;
  if (page.cursor) {
    auto cursor = CursorKey(*page.cursor);
    std::erase_if(rows, [&](const ExecutionWithState& row) {
      return !PassesCursor(primary(row), cursor, newer, page.including_cursor);
    });
  }
  auto sort_key = [&](const ExecutionWithState& row) {
    return std::make_pair(primary(row), row.execution_id.ToString());
  };
  std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    return newer ? sort_key(a) < sort_key(b) : sort_key(b) < sort_key(a);
  });
  if (rows.size() > page.length) rows.erase(rows.begin() + page.length, rows.end());
  if (newer) std::reverse(rows.begin(), rows.end());
  return rows;
}

bool Covers(const core::BacktraceInfo& backtrace, Version version) {
  return backtrace.version_min_including <= version && version < backtrace.version_max_excluding;
}

}  // namespace

Result<core::ExecutionEvent, DbErrorRead> MemoryConnection::GetLastExecutionEvent(
    const ExecutionId& execution_id) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  const ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorRead::NotFound());
  return journal->events().back();
}

Result<core::ExecutionEvent, DbErrorRead> MemoryConnection::GetExecutionEvent(
    const ExecutionId& execution_id, Version version) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  const ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr || version.value() >= journal->events().size()) {
    return Unexpected(DbErrorRead::NotFound());
  }
  return journal->events()[version.value()];
}

Result<core::PendingState, DbErrorRead> MemoryConnection::GetPendingState(
    const ExecutionId& execution_id) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  const ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorRead::NotFound());
  return journal->pending_state();
}

Result<ExecutionLog, DbErrorRead> MemoryConnection::Get(const ExecutionId& execution_id) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  const ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorRead::NotFound());
  return journal->ToLog();
}

Result<std::vector<ExpiredTimer>, DbErrorGeneric> MemoryConnection::GetExpiredTimers(DateTime at) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  std::vector<ExpiredTimer> expired;
  for (const auto& [id, journal] : state_->journals) {
    if (std::optional<ExpiredLock> lock_timer = journal.ExpiredLockAt(at)) {
      expired.emplace_back(std::move(*lock_timer));
    }
  }
  for (const auto& [id, journal] : state_->journals) {
    for (ExpiredDelay& delay : journal.ExpiredDelaysAt(at)) expired.emplace_back(std::move(delay));
  }
  for (const auto& [id, journal] : state_->journals) {
    if (auto deadline = journal.ExpiredDeadlineAt(at)) expired.emplace_back(std::move(*deadline));
  }
  return expired;
}

Result<std::vector<ExecutionWithState>, DbErrorGeneric> MemoryConnection::ListExecutions(
    const std::optional<core::FunctionFqn>& ffqn, bool top_level_only,
    const core::ExecutionListPagination& pagination) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  std::vector<ExecutionWithState> rows;
  for (const auto& [id, journal] : state_->journals) {
    if (ffqn && journal.created().ffqn != *ffqn) continue;
    if (top_level_only && !id.IsTopLevel()) continue;
    rows.push_back(journal.ToExecutionWithState());
  }
  return std::visit(
      [&](const auto& page) {
        using Cursor = typename std::decay_t<decltype(page.cursor)>::value_type;
        if constexpr (std::is_same_v<Cursor, DateTime>) {
          return PageOfExecutions(std::move(rows), page,
                                  [](const ExecutionWithState& row) { return row.created_at; });
        } else {
          return PageOfExecutions(std::move(rows), page, [](const ExecutionWithState& row) {
            return core::ListKey(row.execution_id);
          });
        }
      },
      pagination);
}

Result<std::vector<core::ExecutionEvent>, DbErrorRead> MemoryConnection::ListExecutionEvents(
    const ExecutionId& execution_id, Version since, Version::Type max_length,
    bool include_backtrace_id) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  const ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorRead::NotFound());
  std::vector<core::ExecutionEvent> events;
  for (const core::ExecutionEvent& event : journal->events()) {
    if (event.version < since) continue;
    if (events.size() >= max_length) break;
    events.push_back(event);
    if (!include_backtrace_id) continue;
    // The backtrace covering this version, identified by the version its
    // range starts at.
    for (const core::BacktraceInfo& backtrace : state_->backtraces) {
      if (backtrace.execution_id == execution_id && Covers(backtrace, event.version)) {
        events.back().backtrace_id = backtrace.version_min_including;
        break;
      }
    }
  }
  return events;
}

Result<ExecutionCounts, DbErrorGeneric> MemoryConnection::CountExecutionsByState() {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  ExecutionCounts counts;
  for (const auto& [id, journal] : state_->journals) {
    if (journal.pending_state().paused && !journal.pending_state().IsFinished()) {
      ++counts.paused;
      continue;
    }
    std::visit(
        [&](const auto& s) {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, core::PendingStatePendingAt>) ++counts.pending_at;
          if constexpr (std::is_same_v<S, core::PendingStateLocked>) ++counts.locked;
          if constexpr (std::is_same_v<S, core::PendingStateBlockedByJoinSet>)
            ++counts.blocked_by_join_set;
          if constexpr (std::is_same_v<S, core::PendingStateFinished>) ++counts.finished;
        },
        journal.pending_state().value);
  }
  return counts;
}

Result<PendingCounts, DbErrorGeneric> MemoryConnection::CountPendingByFfqns(
    const std::vector<core::FunctionFqn>& ffqns, DateTime now) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  PendingCounts counts;
  for (const auto& [id, journal] : state_->journals) {
    const core::FunctionFqn& ffqn = journal.created().ffqn;
    if (std::find(ffqns.begin(), ffqns.end(), ffqn) == ffqns.end()) continue;
    const core::PendingState& state = journal.pending_state();
    if (const auto* pending = state.RunnablePendingAt()) {
      ++(pending->scheduled_at <= now ? counts.due : counts.scheduled_later);
    } else if (std::holds_alternative<core::PendingStateLocked>(state.value)) {
      ++counts.locked;
    }
  }
  return counts;
}

Result<std::vector<DigestCount>, DbErrorGeneric> MemoryConnection::CountPendingByComponentDigest() {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  std::map<core::InputContentDigest, uint64_t> by_digest;
  for (const auto& [id, journal] : state_->journals) {
    if (journal.pending_state().RunnablePendingAt() != nullptr) {
      ++by_digest[journal.component_digest()];
    }
  }
  std::vector<DigestCount> counts;
  for (const auto& [digest, count] : by_digest) counts.push_back(DigestCount{digest, count});
  return counts;
}

Result<std::vector<ResponseWithCursor>, DbErrorRead> MemoryConnection::ListResponses(
    const ExecutionId& execution_id, const core::Pagination<uint32_t>& pagination) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  const ExecutionJournal* journal = FindJournal(execution_id);
  if (journal == nullptr) return Unexpected(DbErrorRead::NotFound());
  const bool newer = pagination.direction == core::Pagination<uint32_t>::Direction::kNewerThan;
  std::vector<ResponseWithCursor> page;
  const auto& responses = journal->responses();
  for (uint32_t cursor = 0; cursor < responses.size(); ++cursor) {
    if (PassesCursor(cursor, pagination.cursor, newer, pagination.including_cursor)) {
      page.push_back(ResponseWithCursor{responses[cursor], cursor});
    }
  }
  // NewerThan: the first `length` after the cursor; OlderThan: the last
  // `length` before it. Either way in arrival order.
  if (page.size() > pagination.length) {
    if (newer) {
      page.erase(page.begin() + pagination.length, page.end());
    } else {
      page.erase(page.begin(), page.end() - pagination.length);
    }
  }
  return page;
}

Result<core::BacktraceInfo, DbErrorRead> MemoryConnection::GetBacktrace(
    const ExecutionId& execution_id, BacktraceFilter filter) {
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  const core::BacktraceInfo* found = nullptr;
  for (const core::BacktraceInfo& backtrace : state_->backtraces) {
    if (backtrace.execution_id != execution_id) continue;
    bool better = false;
    switch (filter.kind) {
      case BacktraceFilter::Kind::kFirst:
        better = found == nullptr || backtrace.version_min_including < found->version_min_including;
        break;
      case BacktraceFilter::Kind::kLast:
        better = found == nullptr || backtrace.version_min_including > found->version_min_including;
        break;
      case BacktraceFilter::Kind::kSpecific:
        better = found == nullptr && Covers(backtrace, filter.version);
        break;
    }
    if (better) found = &backtrace;
  }
  if (found == nullptr) return Unexpected(DbErrorRead::NotFound());
  return *found;
}

}  // namespace stele::storage::memory::internal
