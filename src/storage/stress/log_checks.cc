#include "storage/stress/log_checks.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <variant>

#include "core/json_codec.h"

namespace stele::storage::stress {
namespace {

template <class T>
const T* HistoryAs(const core::ExecutionEvent& event) {
  const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
  return history ? std::get_if<T>(&history->event) : nullptr;
}

const core::ChildExecutionFinished* AsChildResponse(const core::JoinSetResponseEventOuter& r) {
  return std::get_if<core::ChildExecutionFinished>(&r.event.event);
}

std::string Where(const ExecutionLog& log) { return log.execution_id.ToString() + ": "; }

CreateRequest CreateRequestOf(const ExecutionId& id, const core::ExecutionEvent& event) {
  const auto& created = std::get<core::Created>(event.event);
  return CreateRequest{event.created_at,     id,
                       created.ffqn,         created.params,
                       created.parent,       created.scheduled_at,
                       created.component_id, created.metadata,
                       created.scheduled_by, created.policy};
}

// Responses of `log` in arrival order, fed to the oracle on demand.
class ResponseFeeder {
 public:
  ResponseFeeder(DbConnectionTest& oracle, const ExecutionLog& log,
                 std::vector<std::string>& problems)
      : oracle_(oracle), log_(log), problems_(problems) {}

  // Feeds responses until `js` has at least `count` of them or none are left.
  void FeedUntil(const core::JoinSetId& js, size_t count) {
    while (fed_per_js_[js] < count && next_ < log_.responses.size()) FeedOne();
  }
  void FeedRest() {
    while (next_ < log_.responses.size()) FeedOne();
  }

 private:
  void FeedOne() {
    const auto& response = log_.responses[next_++];
    ++fed_per_js_[response.event.join_set_id];
    auto appended = oracle_.AppendResponse(response.created_at, log_.execution_id, response.event);
    if (!appended) {
      problems_.push_back(Where(log_) + "oracle refused response " + core::ToJson(response).dump() +
                          ": " + appended.error().ToString());
    }
  }

  DbConnectionTest& oracle_;
  const ExecutionLog& log_;
  std::vector<std::string>& problems_;
  size_t next_ = 0;
  std::map<core::JoinSetId, size_t> fed_per_js_;
};

}  // namespace

core::PendingState ImpliedPendingState(const ExecutionLog& log) {
  const auto& created = std::get<core::Created>(log.events.front().event);
  const core::InputContentDigest digest = created.component_id.input_digest;
  core::PendingState state{core::PendingStatePendingAt{created.scheduled_at, std::nullopt, digest}};
  std::optional<core::LockedBy> last_lock;
  std::map<core::JoinSetId, size_t> join_nexts;
  for (size_t i = 1; i < log.events.size(); ++i) {
    const auto& event = log.events[i];
    std::visit(
        [&](const auto& e) {
          using E = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<E, core::Locked>) {
            last_lock = core::LockedBy{e.executor_id, e.run_id};
            state.value = core::PendingStateLocked{*last_lock, e.lock_expires_at, digest};
          } else if constexpr (std::is_same_v<E, core::Unlocked> ||
                               std::is_same_v<E, core::TemporarilyFailed> ||
                               std::is_same_v<E, core::TemporarilyTimedOut>) {
            state.value = core::PendingStatePendingAt{e.backoff_expires_at, last_lock, digest};
          } else if constexpr (std::is_same_v<E, core::Finished>) {
            state.value = core::PendingStateFinished{
                event.version.value(), event.created_at,
                core::PendingStateFinishedResultKind::From(e.result), digest};
          } else if constexpr (std::is_same_v<E, core::HistoryEventRequest>) {
            if (const auto* next = std::get_if<core::HistoryJoinNext>(&e.event)) {
              const size_t k = ++join_nexts[next->join_set_id];
              size_t seen = 0;
              const core::JoinSetResponseEventOuter* match = nullptr;
              for (const auto& r : log.responses) {
                if (r.event.join_set_id == next->join_set_id && ++seen == k) {
                  match = &r;
                  break;
                }
              }
              if (match != nullptr) {
                state.value = core::PendingStatePendingAt{
                    std::max(next->run_expires_at, match->created_at), last_lock, digest};
              } else {
                state.value = core::PendingStateBlockedByJoinSet{
                    next->join_set_id, next->run_expires_at, next->closing, digest};
              }
            }
          }
        },
        event.event);
  }
  return state;
}

std::vector<std::string> CheckLog(const ExecutionLog& log) {
  std::vector<std::string> problems;
  if (log.events.empty()) {
    problems.push_back(Where(log) + "empty log");
    return problems;
  }
  for (size_t i = 0; i < log.events.size(); ++i) {
    const auto& event = log.events[i];
    if (event.version != Version(static_cast<Version::Type>(i))) {
      problems.push_back(Where(log) + "event #" + std::to_string(i) + " has version " +
                         event.version.ToString() + " (versions must be 0..n without gaps)");
    }
    const bool is_created = std::holds_alternative<core::Created>(event.event);
    if (is_created != (i == 0)) {
      problems.push_back(Where(log) + "Created must be exactly the event at version 0 (found " +
                         std::string(core::ExecutionRequestVariantName(event.event)) + " at " +
                         std::to_string(i) + ")");
    }
    if (std::holds_alternative<core::Finished>(event.event) && i + 1 != log.events.size()) {
      problems.push_back(Where(log) + "Finished at version " + std::to_string(i) +
                         " is followed by more events");
    }
  }
  if (!std::holds_alternative<core::Created>(log.events.front().event)) return problems;
  const auto size = static_cast<Version::Type>(log.events.size());
  const bool finished = std::holds_alternative<core::Finished>(log.events.back().event);
  // next_version is the version of the next append; once Finished it stops
  // advancing (Obelisk leaves it at the Finished event's version).
  if (finished ? (log.next_version != Version(size - 1) && log.next_version != Version(size))
               : log.next_version != Version(size)) {
    problems.push_back(Where(log) + "next_version " + log.next_version.ToString() + " with " +
                       std::to_string(size) + " events");
  }
  const core::PendingState implied = ImpliedPendingState(log);
  if (!(implied == log.pending_state)) {
    problems.push_back(Where(log) + "pending state " + core::ToJson(log.pending_state).dump() +
                       " but the log implies " + core::ToJson(implied).dump());
  }
  return problems;
}

std::vector<std::string> CheckParentChildResponses(const LogMap& logs) {
  std::vector<std::string> problems;
  for (const auto& [id, log] : logs) {
    // Children this parent requested, by id string, with their join set.
    std::map<std::string, core::JoinSetId> requested;
    for (const auto& event : log.events) {
      if (const auto* request = HistoryAs<core::HistoryJoinSetRequest>(event)) {
        if (const auto* child = std::get_if<core::ChildExecutionRequest>(&request->request)) {
          requested.emplace(child->child_execution_id.ToString(), request->join_set_id);
        }
      }
    }
    std::set<std::string> responded;
    for (const auto& response : log.responses) {
      const auto* child = AsChildResponse(response);
      if (child == nullptr) continue;
      const std::string child_id = child->child_execution_id.ToString();
      if (!responded.insert(child_id).second) {
        problems.push_back(Where(log) + "two responses for child " + child_id);
      }
      auto req = requested.find(child_id);
      if (req == requested.end()) {
        problems.push_back(Where(log) + "response for child " + child_id +
                           " that it never requested");
      } else if (req->second != response.event.join_set_id) {
        problems.push_back(Where(log) + "response for " + child_id + " in join set " +
                           response.event.join_set_id.ToString() + ", requested in " +
                           req->second.ToString());
      }
      auto child_log = logs.find(ExecutionId(child->child_execution_id));
      if (child_log == logs.end()) {
        problems.push_back(Where(log) + "response for child " + child_id + " that does not exist");
        continue;
      }
      const auto& events = child_log->second.events;
      const auto v = child->finished_version.value();
      const core::Finished* finished =
          v < events.size() ? std::get_if<core::Finished>(&events[v].event) : nullptr;
      if (finished == nullptr) {
        problems.push_back(Where(log) + "response for child " + child_id + " names version " +
                           std::to_string(v) + ", which is not the child's Finished event");
      } else if (!(finished->result == child->result)) {
        problems.push_back(Where(log) + "response for child " + child_id +
                           " carries a result different from the child's Finished event");
      }
    }
    // Every finished child of this parent must have responded (atomically).
    for (const auto& [child_id, js] : requested) {
      auto parsed = ExecutionId::Parse(child_id);
      if (!parsed) continue;
      auto child_log = logs.find(*parsed);
      if (child_log == logs.end()) {
        problems.push_back(Where(log) + "requested child " + child_id + " does not exist");
        continue;
      }
      const auto& child_events = child_log->second.events;
      const bool child_finished = !child_events.empty() &&
                                  std::holds_alternative<core::Finished>(child_events.back().event);
      if (child_finished && responded.count(child_id) == 0) {
        problems.push_back(Where(log) + "child " + child_id +
                           " finished but the parent has no response for it");
      }
    }
  }
  return problems;
}

std::vector<std::string> CompareWithOracle(DbPool& oracle_pool, const LogMap& logs) {
  std::vector<std::string> problems;
  auto conn = oracle_pool.ConnectionTest();
  if (!conn) return {"oracle: " + conn.error().ToString()};
  DbConnectionTest& oracle = **conn;

  // Parents before children: a child is created by its parent's
  // ChildExecutionRequest, exactly as the original write did.
  std::vector<const ExecutionLog*> order;
  for (const auto& [id, log] : logs) order.push_back(&log);
  std::stable_sort(order.begin(), order.end(), [](const ExecutionLog* a, const ExecutionLog* b) {
    return a->execution_id.path().size() < b->execution_id.path().size();
  });
  std::set<std::string> created;  // ids created in the oracle

  for (const ExecutionLog* log_ptr : order) {
    const ExecutionLog& log = *log_ptr;
    if (log.events.empty() || !std::holds_alternative<core::Created>(log.events.front().event)) {
      problems.push_back(Where(log) + "cannot replay a log that does not start with Created");
      continue;
    }
    if (created.insert(log.execution_id.ToString()).second) {
      auto c = oracle.Create(CreateRequestOf(log.execution_id, log.events.front()));
      if (!c) {
        problems.push_back(Where(log) + "oracle Create: " + c.error().ToString());
        continue;
      }
    }
    ResponseFeeder feeder(oracle, log, problems);
    std::map<core::JoinSetId, size_t> join_nexts;
    bool failed = false;
    for (size_t i = 1; i < log.events.size() && !failed; ++i) {
      const auto& event = log.events[i];
      const AppendRequest req{event.created_at, event.event};
      Result<Version, DbErrorWrite> appended = Unexpected(DbErrorWrite::NotFound());
      if (const auto* next = HistoryAs<core::HistoryJoinNext>(event)) {
        feeder.FeedUntil(next->join_set_id, ++join_nexts[next->join_set_id]);
      }
      if (std::holds_alternative<core::Locked>(event.event)) {
        // A lock after a blocking JoinNext was possible only once its
        // response had arrived.
        auto state = oracle.GetPendingState(log.execution_id);
        if (state) {
          if (const auto* blocked =
                  std::get_if<core::PendingStateBlockedByJoinSet>(&state->value)) {
            feeder.FeedUntil(blocked->join_set_id, join_nexts[blocked->join_set_id]);
          }
        }
      }
      const auto* request = HistoryAs<core::HistoryJoinSetRequest>(event);
      const auto* child_request =
          request ? std::get_if<core::ChildExecutionRequest>(&request->request) : nullptr;
      if (child_request != nullptr) {
        auto child_log = logs.find(ExecutionId(child_request->child_execution_id));
        std::vector<CreateRequest> children;
        if (child_log != logs.end() && !child_log->second.events.empty() &&
            created.insert(child_log->first.ToString()).second) {
          children.push_back(CreateRequestOf(child_log->first, child_log->second.events.front()));
        }
        appended = oracle.AppendBatchCreateNewExecution(event.created_at, {req}, log.execution_id,
                                                        event.version, children);
      } else {
        appended = oracle.Append(log.execution_id, event.version, req);
      }
      if (!appended) {
        problems.push_back(Where(log) + "oracle refused event v" + event.version.ToString() + " " +
                           core::ToJson(event.event).dump() + ": " + appended.error().ToString());
        failed = true;
      }
    }
    if (failed) continue;
    feeder.FeedRest();
  }

  for (const auto& [id, log] : logs) {
    auto replayed = oracle.Get(id);
    if (!replayed) {
      problems.push_back(Where(log) + "oracle Get: " + replayed.error().ToString());
      continue;
    }
    if (!(replayed->events == log.events)) {
      problems.push_back(Where(log) + "events differ from the oracle's replay");
    }
    if (!(replayed->responses == log.responses)) {
      problems.push_back(Where(log) + "responses differ from the oracle's replay");
    }
    if (replayed->next_version != log.next_version) {
      problems.push_back(Where(log) + "next_version " + log.next_version.ToString() +
                         ", oracle says " + replayed->next_version.ToString());
    }
    if (!(replayed->pending_state == log.pending_state)) {
      problems.push_back(Where(log) + "pending state " + core::ToJson(log.pending_state).dump() +
                         ", oracle says " + core::ToJson(replayed->pending_state).dump());
    }
  }
  return problems;
}

Result<std::vector<ExecutionId>, DbErrorGeneric> ListAllExecutionIds(DbExternalApi& db) {
  std::vector<ExecutionId> ids;
  std::set<ExecutionId> seen;
  constexpr uint16_t kPage = 1000;
  std::optional<ExecutionId> cursor;
  while (true) {
    auto page = db.ListExecutions(
        std::nullopt, /*top_level_only=*/false,
        core::Pagination<std::optional<ExecutionId>>::OlderThan(kPage, cursor, false));
    if (!page) return Unexpected(page.error());
    for (const auto& execution : *page) {
      if (seen.insert(execution.execution_id).second) ids.push_back(execution.execution_id);
    }
    if (page->size() < kPage) break;
    cursor = page->back().execution_id;
  }
  return ids;
}

Result<LogMap, std::string> ReadAllLogs(DbConnectionTest& db) {
  auto ids = ListAllExecutionIds(db);
  if (!ids) return Unexpected("ListExecutions: " + ids.error().ToString());
  LogMap logs;
  for (const auto& id : *ids) {
    auto log = db.Get(id);
    if (!log) return Unexpected("Get " + id.ToString() + ": " + log.error().ToString());
    logs.emplace(id, std::move(*log));
  }
  return logs;
}

std::string DescribeLog(const ExecutionLog& log) {
  std::ostringstream out;
  out << "== " << log.execution_id.ToString() << " next_version " << log.next_version.ToString()
      << " state " << core::ToJson(log.pending_state).dump() << "\n";
  for (const auto& event : log.events) out << "  " << core::ToJson(event).dump() << "\n";
  for (const auto& response : log.responses) {
    out << "  response " << core::ToJson(response).dump() << "\n";
  }
  return out.str();
}

}  // namespace stele::storage::stress
