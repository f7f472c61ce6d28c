// Retention of the memory backend (DbExternalApi::DeleteFinishedExecutions):
// the reference model of which trees are collectable (storage/retention.h)
// and of what deleting one removes.
#include <algorithm>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "storage/memory/memory_connection.h"
#include "storage/retention.h"

namespace stele::storage::memory::internal {

namespace {

// The journals of the tree of `top` (itself first), in id order: the map
// orders ids by (root, path), so a tree is one contiguous run.
std::vector<std::map<ExecutionId, ExecutionJournal>::iterator> TreeOf(
    std::map<ExecutionId, ExecutionJournal>& journals, const ExecutionId& top) {
  std::vector<std::map<ExecutionId, ExecutionJournal>::iterator> tree;
  for (auto it = journals.lower_bound(top); it != journals.end() && it->first.root() == top.root();
       ++it) {
    tree.push_back(it);
  }
  return tree;
}

RetentionMember MemberOf(const ExecutionJournal& journal) {
  const auto* finished = std::get_if<core::PendingStateFinished>(&journal.pending_state().value);
  return finished ? RetentionMember{true, finished->finished_at} : RetentionMember{};
}

}  // namespace

Result<DeletedExecutions, DbErrorWrite> MemoryConnection::DeleteFinishedExecutions(
    DateTime cutoff, uint32_t batch_size, const std::optional<RetentionCursor>& after) {
  STELE_TRY(ValidateRetentionBatch(batch_size));
  std::lock_guard lock(state_->mu);
  if (state_->closed) return Unexpected(DbErrorGeneric::Close());
  // The candidates in (created_at, id text) order, as the SQL backends
  // page them.
  using Key = std::tuple<DateTime, std::string>;
  std::vector<std::pair<Key, ExecutionId>> candidates;
  for (const auto& [id, journal] : state_->journals) {
    if (!id.IsTopLevel() || journal.created_at() > cutoff) continue;
    Key key{journal.created_at(), id.ToString()};
    if (after && key <= Key{after->created_at, after->execution_id.ToString()}) continue;
    candidates.emplace_back(std::move(key), id);
  }
  std::sort(candidates.begin(), candidates.end());
  if (candidates.size() > batch_size)
    candidates.erase(candidates.begin() + batch_size, candidates.end());

  DeletedExecutions out;
  out.examined = static_cast<uint32_t>(candidates.size());
  if (candidates.size() == batch_size) {
    out.next = RetentionCursor{std::get<0>(candidates.back().first), candidates.back().second};
  }
  for (const auto& [key, top] : candidates) {
    auto tree = TreeOf(state_->journals, top);
    std::vector<RetentionMember> members;
    for (const auto& it : tree) members.push_back(MemberOf(it->second));
    if (!IsCollectable(members, cutoff)) continue;
    for (const auto& it : tree) {
      // The global uniqueness entries of the responses it received: their
      // children and delays are in the tree too.
      for (const core::JoinSetResponseEventOuter& response : it->second.responses()) {
        std::visit(
            [&](const auto& r) {
              using R = std::decay_t<decltype(r)>;
              if constexpr (std::is_same_v<R, core::DelayFinished>) {
                state_->delay_responses.erase(r.delay_id.ToString());
              } else if constexpr (std::is_same_v<R, core::ChildExecutionFinished>) {
                state_->child_responses.erase(r.child_execution_id.ToString());
              }  // a message's id is unique within its execution only
            },
            response.event.event);
      }
      std::erase_if(state_->backtraces, [&](const core::BacktraceInfo& backtrace) {
        return backtrace.execution_id == it->first;
      });
    }
    for (const auto& it : tree) state_->journals.erase(it);
    ++out.deleted_top_level;
    out.deleted += tree.size();
  }
  if (out.deleted > 0) NotifyChanged();
  return out;
}

}  // namespace stele::storage::memory::internal
