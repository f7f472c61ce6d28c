#include "storage/check/consistency_check.h"

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <variant>

#include "core/json_codec.h"
#include "storage/memory/execution_journal.h"

namespace stele::storage::check {
namespace {

// One read of an execution: its state before and after, its responses and
// its events (responses are read before the events, so every response found
// has its request among the events).
struct Snapshot {
  core::PendingState state_before;
  core::PendingState state;
  std::vector<core::JoinSetResponseEventOuter> responses;
  std::vector<uint32_t> cursors;
  std::vector<core::ExecutionEvent> events;
};

std::string ReadError(const DbErrorRead& e) { return e.ToString(); }

template <class T>
const T* HistoryAs(const core::ExecutionEvent& event) {
  const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
  return history ? std::get_if<T>(&history->event) : nullptr;
}

// nullopt when the execution does not exist.
Result<std::optional<Snapshot>, std::string> Read(DbExternalApi& db, const ExecutionId& id,
                                                  const CheckOptions& options) {
  Snapshot snap;
  auto before = db.GetPendingState(id);
  if (!before) {
    if (before.error().IsNotFound()) return std::optional<Snapshot>();
    return Unexpected(ReadError(before.error()));
  }
  snap.state_before = std::move(*before);

  uint32_t cursor = 0;
  bool first = true;
  while (true) {
    auto page = db.ListResponses(
        id, core::Pagination<uint32_t>::NewerThan(options.response_page, cursor, first));
    if (!page) return Unexpected(ReadError(page.error()));
    for (auto& r : *page) {
      snap.cursors.push_back(r.cursor);
      snap.responses.push_back(std::move(r.event));
    }
    if (page->size() < options.response_page || page->empty()) break;
    cursor = page->back().cursor;
    first = false;
  }

  Version since(0);
  while (true) {
    auto page = db.ListExecutionEvents(id, since, options.event_page, false);
    if (!page) return Unexpected(ReadError(page.error()));
    for (auto& e : *page) snap.events.push_back(std::move(e));
    if (page->size() < options.event_page || page->empty()) break;
    since = snap.events.back().version.Increment();
  }

  auto after = db.GetPendingState(id);
  if (!after) return Unexpected(ReadError(after.error()));
  snap.state = std::move(*after);
  return std::optional<Snapshot>(std::move(snap));
}

// Versions, Created, Finished, cursors. Returns false when the log is too
// malformed to replay.
bool CheckShape(const Snapshot& snap, std::vector<std::string>& out) {
  bool replayable = true;
  if (snap.events.empty()) {
    out.push_back("the execution has a state but no events");
    return false;
  }
  for (size_t i = 0; i < snap.events.size(); ++i) {
    const auto& event = snap.events[i];
    if (event.version != Version(static_cast<Version::Type>(i))) {
      out.push_back("versions are not gap-free: event #" + std::to_string(i) + " has version " +
                    event.version.ToString());
      replayable = false;
      break;  // every later event is off as well
    }
  }
  for (size_t i = 0; i < snap.events.size(); ++i) {
    const bool is_created = std::holds_alternative<core::Created>(snap.events[i].event);
    if (i == 0 && !is_created) {
      out.push_back("the first event is " +
                    std::string(core::ExecutionRequestVariantName(snap.events[0].event)) +
                    ", not Created");
      replayable = false;
    } else if (i > 0 && is_created) {
      out.push_back("a second Created event at version " + snap.events[i].version.ToString());
      replayable = false;
    }
    if (std::holds_alternative<core::Finished>(snap.events[i].event) &&
        i + 1 != snap.events.size()) {
      out.push_back("Finished at version " + snap.events[i].version.ToString() +
                    " is followed by " + std::to_string(snap.events.size() - i - 1) +
                    " more event(s)");
      replayable = false;
    }
  }
  for (size_t i = 0; i < snap.cursors.size(); ++i) {
    if (snap.cursors[i] != i) {
      out.push_back("response cursors are not gap-free: response #" + std::to_string(i) +
                    " has cursor " + std::to_string(snap.cursors[i]));
      break;
    }
  }
  return replayable;
}

// The pending state the log implies, by replaying it through the reference
// model. Responses are fed in arrival order, each just before the first
// JoinNext that needs it (the state after a JoinNext does not depend on
// whether its response came before or after it). Errors: why the reference
// model refused an event.
Result<core::PendingState, std::string> Derive(const ExecutionId& id, const Snapshot& snap) {
  const auto& head = snap.events.front();
  const auto& created = std::get<core::Created>(head.event);
  memory::internal::ExecutionJournal journal(CreateRequest{
      head.created_at, id, created.ffqn, created.params, created.parent, created.scheduled_at,
      created.component_id, created.metadata, created.scheduled_by, created.policy});
  size_t next = 0;
  std::map<core::JoinSetId, size_t> fed;
  std::map<core::JoinSetId, size_t> join_nexts;
  auto feed_until = [&](const core::JoinSetId& js, size_t count) {
    while (fed[js] < count && next < snap.responses.size()) {
      const auto& r = snap.responses[next++];
      ++fed[r.event.join_set_id];
      journal.AddResponse(r.created_at, r.event);
    }
  };
  for (size_t i = 1; i < snap.events.size(); ++i) {
    const auto& event = snap.events[i];
    if (const auto* join_next = HistoryAs<core::HistoryJoinNext>(event)) {
      feed_until(join_next->join_set_id, ++join_nexts[join_next->join_set_id]);
    }
    auto appended = journal.Append(event.version, AppendRequest{event.created_at, event.event});
    if (!appended) {
      return Unexpected("the reference model refuses " +
                        core::ExecutionRequestToString(event.event) + " at version " +
                        event.version.ToString() + ": " + appended.error().ToString());
    }
  }
  while (next < snap.responses.size()) {
    const auto& r = snap.responses[next++];
    journal.AddResponse(r.created_at, r.event);
  }
  return journal.pending_state();
}

void CheckPendingState(const ExecutionId& id, const Snapshot& snap, std::vector<std::string>& out) {
  auto derived = Derive(id, snap);
  if (!derived) {
    out.push_back(derived.error());
    return;
  }
  // The component digest may legitimately differ from the Created event's
  // (UpgradeExecutionComponent); the log does not record upgrades.
  const core::InputContentDigest stored_digest = snap.state.ComponentIdInputDigest();
  std::visit([&](auto& s) { s.component_id_input_digest = stored_digest; }, derived->value);
  if (!(*derived == snap.state)) {
    out.push_back("stored pending state " + core::ToJson(snap.state).dump() +
                  " differs from the one the log implies " + core::ToJson(*derived).dump());
  }
}

// Responses against requests, children against their parent.
Result<void, std::string> CheckJoinSets(DbExternalApi& db, const Snapshot& snap,
                                        std::vector<std::string>& out) {
  std::set<core::JoinSetId> created_sets;
  std::map<core::JoinSetId, size_t> requests;
  std::map<core::JoinSetId, size_t> join_nexts;
  std::map<std::string, core::JoinSetId> children;  // child id → join set
  std::map<std::string, core::JoinSetId> delays;    // delay id → join set
  for (const auto& event : snap.events) {
    if (const auto* create = HistoryAs<core::HistoryJoinSetCreate>(event)) {
      if (!created_sets.insert(create->join_set_id).second) {
        out.push_back("join set " + create->join_set_id.ToString() + " created twice");
      }
    } else if (const auto* request = HistoryAs<core::HistoryJoinSetRequest>(event)) {
      const auto& js = request->join_set_id;
      // A channel's join set is never created (docs/model.md §2.2).
      if (created_sets.count(js) == 0 && js.kind() != core::JoinSetKind::kMessages) {
        out.push_back("request at version " + event.version.ToString() + " in join set " +
                      js.ToString() + ", which was not created before");
      }
      ++requests[js];
      if (const auto* child = std::get_if<core::ChildExecutionRequest>(&request->request)) {
        if (!children.emplace(child->child_execution_id.ToString(), js).second) {
          out.push_back("child " + child->child_execution_id.ToString() + " requested twice");
        }
      } else if (const auto* delay = std::get_if<core::DelayRequest>(&request->request)) {
        if (!delays.emplace(delay->delay_id.ToString(), js).second) {
          out.push_back("delay " + delay->delay_id.ToString() + " requested twice");
        }
      }
    } else if (const auto* join_next = HistoryAs<core::HistoryJoinNext>(event)) {
      ++join_nexts[join_next->join_set_id];
    }
  }
  for (const auto& [js, count] : join_nexts) {
    // A channel's JoinNexts consume messages, which answer no request.
    if (js.kind() == core::JoinSetKind::kMessages) continue;
    if (count > requests[js]) {
      out.push_back("join set " + js.ToString() + " has " + std::to_string(count) +
                    " JoinNext event(s) but only " + std::to_string(requests[js]) + " request(s)");
    }
  }

  std::map<core::JoinSetId, size_t> responses_per_set;
  std::set<std::string> responded_children;
  std::set<std::string> responded_delays;
  std::set<std::string> message_ids;
  for (const auto& response : snap.responses) {
    const auto& js = response.event.join_set_id;
    // A message answers no request: only the others are counted against
    // the requests of their join set.
    if (const auto* message = std::get_if<core::MessageReceived>(&response.event.event)) {
      if (!message_ids.insert(message->message_id).second) {
        out.push_back("message " + message->message_id + " was delivered more than once");
      }
      if (js.kind() != core::JoinSetKind::kMessages) {
        out.push_back("message " + message->message_id + " in join set " + js.ToString() +
                      ", which is not a channel's");
      }
      continue;
    }
    ++responses_per_set[js];
    if (const auto* delay = std::get_if<core::DelayFinished>(&response.event.event)) {
      const std::string delay_id = delay->delay_id.ToString();
      if (!responded_delays.insert(delay_id).second) {
        out.push_back("delay " + delay_id + " has more than one response");
      }
      auto req = delays.find(delay_id);
      if (req == delays.end()) {
        out.push_back("response for delay " + delay_id + ", which was never requested");
      } else if (req->second != js) {
        out.push_back("response for delay " + delay_id + " in join set " + js.ToString() +
                      ", requested in " + req->second.ToString());
      }
      continue;
    }
    const auto& child = std::get<core::ChildExecutionFinished>(response.event.event);
    const std::string child_id = child.child_execution_id.ToString();
    if (!responded_children.insert(child_id).second) {
      out.push_back("the result of child " + child_id + " is recorded more than once");
    }
    auto req = children.find(child_id);
    if (req == children.end()) {
      out.push_back("response for child " + child_id + ", which was never requested");
    } else if (req->second != js) {
      out.push_back("response for child " + child_id + " in join set " + js.ToString() +
                    ", requested in " + req->second.ToString());
    }
    auto state = db.GetPendingState(ExecutionId(child.child_execution_id));
    if (!state) {
      if (!state.error().IsNotFound()) return Unexpected(ReadError(state.error()));
      out.push_back("response for child " + child_id + ", which does not exist");
      continue;
    }
    const auto* finished = std::get_if<core::PendingStateFinished>(&state->value);
    if (finished == nullptr) {
      out.push_back("response for child " + child_id + ", which is not finished (" +
                    std::string(state->StateName()) + ")");
    } else if (finished->version != child.finished_version.value()) {
      out.push_back("response for child " + child_id + " names version " +
                    child.finished_version.ToString() + ", the child finished at version " +
                    std::to_string(finished->version));
    }
  }
  for (const auto& [js, count] : responses_per_set) {
    if (count > requests[js]) {
      out.push_back("join set " + js.ToString() + " has " + std::to_string(count) +
                    " response(s) but only " + std::to_string(requests[js]) + " request(s)");
    }
  }
  for (const auto& [child_id, js] : children) {
    if (responded_children.count(child_id) != 0) continue;
    auto parsed = ExecutionId::Parse(child_id);
    if (!parsed) continue;  // cannot happen: the id came from a parsed event
    auto state = db.GetPendingState(*parsed);
    if (!state) {
      if (!state.error().IsNotFound()) return Unexpected(ReadError(state.error()));
      out.push_back("requested child " + child_id + " does not exist");
    } else if (state->IsFinished()) {
      out.push_back("child " + child_id + " finished but its result was never recorded here");
    }
  }
  return {};
}

}  // namespace

Result<std::vector<Finding>, std::string> CheckExecution(DbExternalApi& db, const ExecutionId& id,
                                                         const CheckOptions& options,
                                                         CheckReport* counters) {
  const std::string id_text = id.ToString();
  std::vector<std::string> problems;
  for (int attempt = 0;; ++attempt) {
    problems.clear();
    auto snap = Read(db, id, options);
    if (!snap) return Unexpected(snap.error());
    if (!snap->has_value()) {
      problems.push_back("listed, but its state cannot be read (not found)");
      break;
    }
    const Snapshot& s = **snap;
    if (CheckShape(s, problems)) CheckPendingState(id, s, problems);
    if (!s.events.empty()) STELE_TRY(CheckJoinSets(db, s, problems));
    if (counters != nullptr && (problems.empty() || attempt + 1 >= options.max_attempts)) {
      counters->events += s.events.size();
      counters->responses += s.responses.size();
    }
    // A finished execution no longer changes: its findings are final. A
    // live one may have moved while it was read; read it again.
    const bool settled = s.state.IsFinished() && s.state_before == s.state;
    if (problems.empty() || settled || attempt + 1 >= options.max_attempts) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * (attempt + 1)));
  }
  std::vector<Finding> findings;
  findings.reserve(problems.size());
  for (auto& p : problems) findings.push_back(Finding{id_text, std::move(p)});
  return findings;
}

Result<CheckReport, std::string> CheckStore(DbExternalApi& db, const CheckOptions& options,
                                            const std::function<void(uint64_t)>& progress) {
  CheckReport report;
  std::optional<ExecutionId> cursor;
  while (true) {
    auto page = db.ListExecutions(std::nullopt, /*top_level_only=*/false,
                                  core::Pagination<std::optional<ExecutionId>>::OlderThan(
                                      options.execution_page, cursor, false));
    if (!page) return Unexpected(page.error().ToString());
    for (const auto& row : *page) {
      auto findings = CheckExecution(db, row.execution_id, options, &report);
      if (!findings) return Unexpected(findings.error());
      ++report.executions;
      for (auto& f : *findings) {
        if (report.findings.size() >= options.max_findings) {
          report.truncated = true;
          break;
        }
        report.findings.push_back(std::move(f));
      }
      if (progress) progress(report.executions);
    }
    if (page->size() < options.execution_page || page->empty()) break;
    cursor = page->back().execution_id;
  }
  return report;
}

}  // namespace stele::storage::check
