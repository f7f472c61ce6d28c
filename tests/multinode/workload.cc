#include "workload.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "base/time.h"
#include "core/ids.h"

namespace stele::multinode {
namespace {

constexpr const char* kSumOfSquares = "math:squares/api.sum-of-squares";

// Runs fn(i) for i in [0, count) on `threads` threads.
void ParallelFor(size_t count, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < count; i = next++) fn(i);
    });
  }
  for (auto& th : pool) th.join();
}

std::optional<int64_t> Micros(const json& text) {
  if (!text.is_string()) return std::nullopt;
  auto t = ParseRfc3339(text.get<std::string>());
  if (!t) return std::nullopt;
  return t->time_since_epoch().count();
}

// The `ok` value of a result as an unsigned number (children return a u64).
std::optional<uint64_t> OkNumber(const json& result) {
  if (!result.is_object() || !result.contains("ok")) return std::nullopt;
  const json& v = result["ok"];
  // Results have one shape in every API answer (docs/api.md): {"ok": 4}.
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  return std::nullopt;
}

// Fetches every page of GET `path`?...; `key` is the array field; `cursor`
// names the query parameter and the reply field that continue it.
std::optional<json> FetchAll(const Targets& targets, size_t hint, const std::string& path,
                             const std::string& key, const std::string& param,
                             const std::string& next_field, std::string* error) {
  json all = json::array();
  std::string cursor;
  for (int page = 0; page < 1000; ++page) {
    std::string url = path + "?length=1000" + (cursor.empty() ? "" : "&" + param + "=" + cursor);
    int port = targets.Port(hint + static_cast<size_t>(page));
    HttpReply reply = HttpGetRetrying(port, url);
    if (reply.status != 200) {
      *error = "GET " + url + " -> " + std::to_string(reply.status) + " " + reply.body;
      return std::nullopt;
    }
    json body = json::parse(reply.body, nullptr, false);
    if (body.is_discarded() || !body.contains(key)) {
      *error = "GET " + url + ": unexpected body " + reply.body;
      return std::nullopt;
    }
    for (auto& item : body[key]) all.push_back(std::move(item));
    if (!body.contains(next_field)) return all;
    cursor = body[next_field].is_string() ? body[next_field].get<std::string>()
                                          : body[next_field].dump();
  }
  *error = "GET " + path + ": too many pages";
  return std::nullopt;
}

// The checks common to workflows and children: Created first, exactly one
// Finished and it is the last event; lock exclusion. Returns the Finished
// event's result (null if none).
json CheckLog(const std::string& id, const json& events, Report* report) {
  report->events += static_cast<int>(events.size());
  if (events.empty() || !events[0]["event"].contains("created")) {
    report->errors.push_back(id + ": the log does not start with Created");
  }
  int finished = 0;
  json result;
  for (const auto& e : events) {
    if (e["event"].contains("finished")) {
      ++finished;
      result = e["event"]["finished"]["result"];
    }
  }
  if (finished != 1) {
    report->errors.push_back(id + ": " + std::to_string(finished) + " Finished events");
  } else if (!events.back()["event"].contains("finished")) {
    report->errors.push_back(id + ": an event follows Finished");
  }
  CheckLocks(id, events, report);
  return result;
}

}  // namespace

Targets::Targets(Cluster& cluster) {
  for (int i = 0; i < cluster.size(); ++i) {
    ports_.push_back(cluster.node(i).port());
    live_.push_back(std::make_unique<std::atomic<bool>>(true));
  }
}

void Targets::Remove(int node) { *live_[static_cast<size_t>(node)] = false; }

std::vector<int> Targets::LiveNodes() const {
  std::vector<int> out;
  for (size_t i = 0; i < live_.size(); ++i) {
    if (*live_[i]) out.push_back(static_cast<int>(i));
  }
  return out;
}

int Targets::Port(size_t hint) const {
  std::vector<int> live = LiveNodes();
  if (live.empty()) return 0;
  return ports_[static_cast<size_t>(live[hint % live.size()])];
}

std::vector<Workflow> MakeWorkflows(int count) {
  std::vector<Workflow> workflows(static_cast<size_t>(count));
  for (size_t i = 0; i < workflows.size(); ++i) {
    workflows[i] = {core::ExecutionId::Generate().ToString(), 1 + i % 3};
  }
  return workflows;
}

void Submit(const Targets& targets, const std::vector<Workflow>& workflows,
            std::atomic<int>* submitted, std::vector<std::string>* errors) {
  std::mutex mu;
  ParallelFor(workflows.size(), 4, [&](size_t i) {
    const Workflow& w = workflows[i];
    json body = {{"ffqn", kSumOfSquares}, {"params", {w.n}}, {"execution_id", w.id}};
    HttpReply reply;
    auto deadline = Clock::now() + std::chrono::seconds(60);
    for (size_t attempt = 0;; ++attempt) {
      reply = HttpPost(targets.Port(i + attempt), "/v1/executions", body.dump());
      // 201 created; 200 when a retry finds the first attempt committed.
      if (reply.status == 201 || reply.status == 200) {
        ++*submitted;
        return;
      }
      if ((reply.status != 0 && reply.status < 500) || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::lock_guard lock(mu);
    errors->push_back("submit " + w.id + " -> " + std::to_string(reply.status) + " " + reply.body);
  });
}

std::map<std::string, json> AwaitAll(const Targets& targets, const std::vector<Workflow>& workflows,
                                     std::chrono::seconds limit, std::atomic<int>* finished) {
  std::map<std::string, json> results;
  std::mutex mu;
  const auto deadline = Clock::now() + limit;
  // More waiters than nodes' HTTP threads would only queue; 6 keep every
  // node busy answering while leaving it threads for the test's own calls.
  ParallelFor(workflows.size(), 6, [&](size_t i) {
    const Workflow& w = workflows[i];
    for (size_t attempt = 0; Clock::now() < deadline; ++attempt) {
      int port = targets.Port(i + attempt);
      HttpReply reply =
          HttpGet(port, "/v1/executions/" + w.id + "/result?timeout=20", std::chrono::seconds(30));
      if (reply.status == 200) {
        json body = json::parse(reply.body, nullptr, false);
        std::lock_guard lock(mu);
        results[w.id] = body.is_discarded() ? json(reply.body) : body["result"];
        ++*finished;
        return;
      }
      if (reply.status != 408) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  return results;
}

void CheckLocks(const std::string& id, const json& events, Report* report) {
  std::optional<std::pair<std::string, std::string>> holder;  // (executor, run)
  int64_t held_until = 0;
  for (const auto& e : events) {
    const json& ev = e["event"];
    auto at = Micros(e["created_at"]);
    if (!at) {
      report->errors.push_back(id + ": event without a valid created_at: " + e.dump());
      return;
    }
    if (ev.contains("locked")) {
      const json& l = ev["locked"];
      std::pair<std::string, std::string> by{l.value("executor_id", ""), l.value("run_id", "")};
      auto expires = Micros(l["lock_expires_at"]);
      if (!expires) {
        report->errors.push_back(id + ": Locked without lock_expires_at: " + e.dump());
        return;
      }
      ++report->locks_by_executor[by.first];
      if (holder && *holder != by) {
        if (*at < held_until) {
          report->errors.push_back(
              id + ": locked by " + by.first + " at " + e["created_at"].dump() + " while " +
              holder->first + " held it until " + FormatRfc3339(DateTimeFromMicros(held_until)) +
              " (version " + e["version"].dump() + ")");
        }
        report->takeovers.push_back({id, holder->first, by.first});
      }
      holder = by;
      held_until = *expires;
    } else if (ev.contains("unlocked") || ev.contains("temporarily_failed") ||
               ev.contains("temporarily_timed_out") || ev.contains("finished")) {
      holder.reset();
    } else if (ev.contains("history_event")) {
      const json& h = ev["history_event"]["event"];
      // A JoinNext keeps the lease until run_expires_at (== its own time
      // when the run is unloaded at once).
      if (holder && h.value("type", "") == "join_next") {
        auto until = Micros(h["run_expires_at"]);
        if (until) held_until = *until;
      }
    }
  }
}

Report Verify(const Targets& targets, const std::vector<Workflow>& workflows,
              const std::map<std::string, json>& results) {
  Report report;
  std::mutex mu;
  ParallelFor(workflows.size(), 4, [&](size_t i) {
    const Workflow& w = workflows[i];
    Report local;
    std::string error;
    auto done = [&] {
      if (!error.empty()) local.errors.push_back(error);
      std::lock_guard lock(mu);
      report.errors.insert(report.errors.end(), local.errors.begin(), local.errors.end());
      for (const auto& [k, v] : local.locks_by_executor) report.locks_by_executor[k] += v;
      report.takeovers.insert(report.takeovers.end(), local.takeovers.begin(),
                              local.takeovers.end());
      report.children += local.children;
      report.events += local.events;
    };
    const uint64_t want_sum = w.n * (w.n + 1) * (2 * w.n + 1) / 6;
    auto it = results.find(w.id);
    if (it == results.end()) {
      local.errors.push_back(w.id + ": never finished");
    } else {
      const json& ok = it->second.contains("ok") ? it->second["ok"] : json();
      json value = ok.is_string() ? json::parse(ok.get<std::string>(), nullptr, false) : ok;
      if (!value.is_object() || value.value("n", uint64_t{0}) != w.n ||
          value.value("sum_of_squares", uint64_t{0}) != want_sum) {
        local.errors.push_back(w.id + ": result " + it->second.dump() + ", want n=" +
                               std::to_string(w.n) + " sum_of_squares=" + std::to_string(want_sum));
      }
    }
    auto events = FetchAll(targets, i, "/v1/executions/" + w.id + "/events", "events",
                           "since_version", "next_since_version", &error);
    if (!events) return done();
    CheckLog(w.id, *events, &local);
    std::vector<std::string> requested;
    for (const auto& e : *events) {
      if (!e["event"].contains("history_event")) continue;
      const json& h = e["event"]["history_event"]["event"];
      if (h.value("type", "") == "join_set_request" &&
          h["request"].value("type", "") == "child_execution_request") {
        requested.push_back(h["request"].value("child_execution_id", ""));
      }
    }
    std::set<std::string> distinct(requested.begin(), requested.end());
    if (requested.size() != w.n || distinct.size() != w.n) {
      local.errors.push_back(w.id + ": " + std::to_string(requested.size()) + " child requests (" +
                             std::to_string(distinct.size()) + " distinct), want " +
                             std::to_string(w.n));
    }
    auto responses = FetchAll(targets, i, "/v1/executions/" + w.id + "/responses", "responses",
                              "cursor", "next_cursor", &error);
    if (!responses) return done();
    std::multiset<std::string> answered;
    std::multiset<uint64_t> values;
    for (const auto& r : *responses) {
      const json& inner = r["response"]["event"]["event"];
      if (inner.value("type", "") != "child_execution_finished") continue;
      answered.insert(inner.value("child_execution_id", ""));
      if (auto v = OkNumber(inner["result"])) values.insert(*v);
    }
    std::multiset<uint64_t> want_values;
    for (uint64_t x = 1; x <= w.n; ++x) want_values.insert(x * x);
    if (answered != std::multiset<std::string>(distinct.begin(), distinct.end()) ||
        values != want_values) {
      local.errors.push_back(w.id + ": responses " + responses->dump() + " do not answer each of " +
                             std::to_string(w.n) + " children once with its square");
    }
    for (const auto& child : distinct) {
      ++local.children;
      auto child_events = FetchAll(targets, i, "/v1/executions/" + child + "/events", "events",
                                   "since_version", "next_since_version", &error);
      if (!child_events) return done();
      json result = CheckLog(child, *child_events, &local);
      if (!OkNumber(result)) local.errors.push_back(child + ": result " + result.dump());
    }
    done();
  });

  // Nothing else was created: exactly the submitted workflows and their children.
  std::string error;
  auto all = [&]() -> std::optional<json> {
    json out = json::array();
    std::string cursor;
    for (int page = 0; page < 1000; ++page) {
      std::string url = "/v1/executions?show_derived=true&length=1000" +
                        (cursor.empty() ? std::string() : "&cursor=" + cursor);
      HttpReply reply = HttpGetRetrying(targets.Port(static_cast<size_t>(page)), url);
      json body = json::parse(reply.body, nullptr, false);
      if (reply.status != 200 || body.is_discarded()) {
        error = "GET " + url + " -> " + std::to_string(reply.status) + " " + reply.body;
        return std::nullopt;
      }
      for (auto& e : body["executions"]) out.push_back(std::move(e));
      if (!body.contains("next_cursor")) return out;
      cursor = body["next_cursor"].get<std::string>();
    }
    return std::nullopt;
  }();
  if (!all) {
    report.errors.push_back("listing failed: " + error);
  } else {
    size_t top = 0, derived = 0;
    std::set<std::string> ids;
    for (const auto& e : *all) {
      std::string id = e.value("execution_id", "");
      ids.insert(id);
      (id.find('.') == std::string::npos ? top : derived)++;
    }
    uint64_t want_children = 0;
    for (const auto& w : workflows) want_children += w.n;
    if (top != workflows.size() || derived != want_children || ids.size() != all->size()) {
      report.errors.push_back("the database lists " + std::to_string(top) + " workflows and " +
                              std::to_string(derived) + " children (" + std::to_string(ids.size()) +
                              " distinct ids), want " + std::to_string(workflows.size()) + " and " +
                              std::to_string(want_children));
    }
  }
  return report;
}

}  // namespace stele::multinode
