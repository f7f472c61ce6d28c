#include "cli/print.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json_codec.h"

namespace stele::cli {
namespace {

using core::Json;

// Summaries of other fields are cut at this many bytes; results, reasons
// and details never are.
constexpr size_t kMaxSummary = 300;

std::string Shorten(std::string s, size_t max) {
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

std::string Compact(const Json& j) { return core::SerializeJson(j); }

// A table printed with each column as wide as its widest cell (two spaces
// between columns; the last one is not padded). A row may carry lines
// printed under it, indented past the first column: reasons and details,
// which are long and may hold newlines.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

  void Add(std::vector<std::string> cells, std::vector<std::string> below = {}) {
    cells.resize(headers_.size());
    rows_.push_back(Row{std::move(cells), std::move(below)});
  }

  void Print(std::ostream& out) const {
    std::vector<size_t> widths(headers_.size());
    for (size_t c = 0; c < headers_.size(); ++c) widths[c] = headers_[c].size();
    for (const Row& row : rows_) {
      for (size_t c = 0; c < row.cells.size(); ++c) {
        widths[c] = std::max(widths[c], row.cells[c].size());
      }
    }
    auto line = [&](const std::vector<std::string>& cells) {
      std::string text;
      for (size_t c = 0; c < cells.size(); ++c) {
        text += cells[c];
        if (c + 1 < cells.size()) text += std::string(widths[c] - cells[c].size() + 2, ' ');
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      out << text << "\n";
    };
    line(headers_);
    const std::string indent(widths[0] + 2, ' ');
    for (const Row& row : rows_) {
      line(row.cells);
      for (const std::string& below : row.below) out << indent << below << "\n";
    }
  }

 private:
  struct Row {
    std::vector<std::string> cells;
    std::vector<std::string> below;
  };
  std::vector<std::string> headers_;
  std::vector<Row> rows_;
};

// `label: text`, a line per line of `text` (continuations indented).
void AddLabelled(std::vector<std::string>& lines, std::string_view label, std::string_view text) {
  std::string prefix = std::string(label) + ": ";
  size_t start = 0;
  while (true) {
    size_t nl = text.find('\n', start);
    std::string_view part = text.substr(start, nl == std::string_view::npos ? nl : nl - start);
    lines.push_back(prefix + std::string(part));
    if (nl == std::string_view::npos || nl + 1 == text.size()) break;
    prefix = std::string(label.size() + 2, ' ');
    start = nl + 1;
  }
}

const Json* Find(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// The array `j[key]`, or an empty one.
const Json& ArrayAt(const Json& j, const char* key) {
  static const Json* const kEmpty = new Json(Json::array());
  const Json* found = Find(j, key);
  return found != nullptr && found->is_array() ? *found : *kEmpty;
}

// The first line of a result, and the execution error's reason and detail
// as labelled lines.
std::string ResultSummary(const Json& result, std::vector<std::string>& below) {
  if (const Json* ok = Find(result, "ok")) return "ok " + Compact(*ok);
  if (const Json* err = Find(result, "err")) return "err " + Compact(*err);
  if (const Json* failure = Find(result, "execution_error")) {
    std::string line = "execution error " + Field(*failure, "kind");
    std::string reason = Field(*failure, "reason");
    if (reason.find('\n') == std::string::npos) {
      if (!reason.empty()) line += ": " + reason;
    } else {
      AddLabelled(below, "reason", reason);
    }
    if (std::string detail = Field(*failure, "detail"); !detail.empty()) {
      AddLabelled(below, "detail", detail);
    }
    return line;
  }
  return Compact(result);
}

// "key=value ..." of an event body: reason and detail become lines of their
// own, a result its summary; nulls are left out.
std::string BodySummary(const Json& body, std::vector<std::string>& below) {
  if (!body.is_object()) return Compact(body);
  std::string result;
  std::string rest;
  std::vector<std::string> reasons;
  for (const auto& [key, value] : body.items()) {
    if (value.is_null()) continue;
    if ((key == "reason" || key == "detail") && value.is_string()) {
      AddLabelled(reasons, key, value.get_ref<const std::string&>());
    } else if (key == "result") {
      result = ResultSummary(value, below);
    } else {
      rest += (rest.empty() ? "" : " ") + key + "=" +
              (value.is_string() ? value.get<std::string>() : Compact(value));
    }
  }
  below.insert(below.begin(), reasons.begin(), reasons.end());
  rest = Shorten(std::move(rest), kMaxSummary);
  if (result.empty()) return rest;
  return rest.empty() ? result : result + "  " + rest;
}

// `s` as one shell word.
std::string ShellWord(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                std::string_view("_-.:/@%+=,").find(c) != std::string_view::npos;
    plain = plain && safe;
  }
  if (plain) return s;
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// "next page: stele WORDS... FLAG VALUE": the command that fetches the next
// page, with every flag of this one (the global --api-url and --token come
// from the environment or must be given again; a token is never printed).
void PrintHint(std::ostream& out, std::string words, const std::string& flag,
               const std::string& value) {
  out << "next page: stele " << words << " " << flag << " " << ShellWord(value) << "\n";
}

std::string ShortResultKind(const std::string& kind) {
  if (kind == "execution completed with an error") return "err";
  constexpr std::string_view kTerminated = "execution terminated: ";
  if (kind.rfind(kTerminated, 0) == 0) return kind.substr(kTerminated.size());
  return kind;
}

}  // namespace

std::string Field(const Json& j, const char* key) {
  const Json* v = Find(j, key);
  if (v == nullptr || v->is_null()) return "";
  return v->is_string() ? v->get<std::string>() : Compact(*v);
}

std::string StateLine(const Json& state) {
  if (!state.is_object()) return Compact(state);
  std::string line = Field(state, "status");
  for (const auto& [k, v] : state.items()) {
    if (k == "status") continue;
    line += " " + k + "=" + (v.is_string() ? v.get<std::string>() : Compact(v));
  }
  return line;
}

std::string ResultLine(const Json& result) {
  std::vector<std::string> below;
  std::string line = ResultSummary(result, below);
  for (const std::string& b : below) line += "\n  " + b;
  return line;
}

void PrintExecution(const Json& doc, std::ostream& out) {
  auto row = [&](const char* label, const std::string& value) {
    if (value.empty()) return;
    std::string padded = label;
    padded.resize(std::max<size_t>(padded.size() + 1, 12), ' ');
    out << padded << value << "\n";
  };
  row("Execution:", Field(doc, "execution_id"));
  row("Function:", Field(doc, "ffqn"));
  const Json* state = Find(doc, "pending_state");
  row("State:", state != nullptr ? StateLine(*state) : "");
  row("Created:", Field(doc, "created_at"));
  row("Scheduled:", Field(doc, "first_scheduled_at"));
  row("Component:", Field(doc, "component_digest"));
  if (const Json* result = Find(doc, "result"); result != nullptr && !result->is_null()) {
    row("Result:", ResultLine(*result));
  }
}

void PrintList(const Json& body, const Command& cmd, std::ostream& out) {
  Table table({"EXECUTION", "FUNCTION", "STATE", "CREATED"});
  for (const Json& e : ArrayAt(body, "executions")) {
    const Json* ps = Find(e, "pending_state");
    std::string state = ps != nullptr ? Field(*ps, "status") : "";
    if (state == "finished") {
      if (std::string kind = Field(*ps, "result_kind"); !kind.empty()) {
        state += ": " + ShortResultKind(kind);
      }
    }
    table.Add({Field(e, "execution_id"), Field(e, "ffqn"), state, Field(e, "created_at")});
  }
  table.Print(out);
  if (std::string next = Field(body, "next_cursor"); !next.empty()) {
    const ListFilters& f = cmd.list;
    std::string words = "execution list";
    if (f.ffqn_prefix) words += " --ffqn-prefix " + ShellWord(*f.ffqn_prefix);
    if (f.execution_id_prefix) words += " --id-prefix " + ShellWord(*f.execution_id_prefix);
    if (f.show_derived) words += " --show-derived";
    if (f.hide_finished) words += " --hide-finished";
    if (f.direction) words += " --direction " + *f.direction;
    if (f.length) words += " --length " + std::to_string(*f.length);
    PrintHint(out, words, "--cursor", next);
  }
}

void PrintEvents(const Json& body, const Command& cmd, std::ostream& out) {
  Table table({"VERSION", "CREATED", "EVENT", "DETAILS"});
  for (const Json& item : ArrayAt(body, "events")) {
    const Json* event = Find(item, "event");
    std::string type;
    const Json* payload = event;
    Json history_body;
    if (event != nullptr && event->is_object() && event->size() == 1) {
      type = event->begin().key();
      payload = &event->begin().value();
      // {"history_event": {"event": {"type": "join_next", ...}}}: the inner
      // type says more than "history_event".
      if (const Json* inner = Find(*payload, "event"); type == "history_event" && inner) {
        if (std::string t = Field(*inner, "type"); !t.empty()) type = t;
        history_body = *inner;
        history_body.erase("type");
        payload = &history_body;
      }
    }
    std::vector<std::string> below;
    std::string details = payload != nullptr ? BodySummary(*payload, below) : "";
    table.Add({Field(item, "version"), Field(item, "created_at"), type, details}, below);
  }
  table.Print(out);
  if (std::string next = Field(body, "next_since_version"); !next.empty()) {
    std::string words = "execution events " + ShellWord(cmd.execution_id.value_or(""));
    if (cmd.length) words += " --length " + std::to_string(*cmd.length);
    PrintHint(out, words, "--since-version", next);
  }
}

void PrintResponses(const Json& body, const Command& cmd, std::ostream& out) {
  Table table({"CURSOR", "CREATED", "JOIN SET", "RESPONSE"});
  for (const Json& item : ArrayAt(body, "responses")) {
    // {"cursor": 0, "response": {"created_at", "event": {"join_set_id",
    //  "event": {"type": "child_execution_finished" | "delay_finished", ...}}}}
    const Json* response = Find(item, "response");
    const Json* outer = response != nullptr ? Find(*response, "event") : nullptr;
    const Json* inner = outer != nullptr ? Find(*outer, "event") : nullptr;
    std::vector<std::string> below;
    std::string text;
    const std::string type = inner != nullptr ? Field(*inner, "type") : "";
    const Json* result = inner != nullptr ? Find(*inner, "result") : nullptr;
    if (type == "child_execution_finished") {
      text = "child " + Field(*inner, "child_execution_id") +
             " finished: " + (result != nullptr ? ResultSummary(*result, below) : "");
    } else if (type == "delay_finished") {
      // {"ok": null}: the delay fired; {"err": null}: it was cancelled.
      const bool fired = result != nullptr && Find(*result, "ok") != nullptr;
      text = "delay " + Field(*inner, "delay_id") + (fired ? " fired" : " cancelled");
    } else {
      text = Shorten(response != nullptr ? Compact(*response) : Compact(item), kMaxSummary);
    }
    table.Add({Field(item, "cursor"), response != nullptr ? Field(*response, "created_at") : "",
               outer != nullptr ? Field(*outer, "join_set_id") : "", text},
              below);
  }
  table.Print(out);
  if (std::string next = Field(body, "next_cursor"); !next.empty()) {
    std::string words = "execution responses " + ShellWord(cmd.execution_id.value_or(""));
    if (cmd.length) words += " --length " + std::to_string(*cmd.length);
    PrintHint(out, words, "--cursor", next);
  }
}

void PrintComponents(const Json& body, std::ostream& out) {
  for (const Json& c : ArrayAt(body, "components")) {
    out << Field(c, "name") << "  " << Field(c, "type");
    if (std::string digest = Field(c, "digest"); !digest.empty()) out << "  " << digest;
    out << "\n";
    for (const Json& f : ArrayAt(c, "functions")) {
      out << "  " << (f.is_string() ? f.get<std::string>() : Field(f, "ffqn"));
      if (const Json* params = Find(f, "params")) out << " " << Shorten(Compact(*params), 120);
      out << "\n";
    }
  }
  // [[webhook_wasm]] endpoints: their route instead of functions.
  for (const Json& w : ArrayAt(body, "webhooks")) {
    out << Field(w, "name") << "  " << Field(w, "type");
    if (std::string digest = Field(w, "digest"); !digest.empty()) out << "  " << digest;
    out << "\n  " << Field(w, "route");
    if (Field(w, "auth") == "none") out << "  (auth none)";
    out << "\n";
  }
}

void PrintSchedules(const Json& body, std::ostream& out) {
  Table table({"SCHEDULE", "CRON", "ZONE", "FUNCTION", "STATE", "NEXT TICK"});
  for (const Json& s : ArrayAt(body, "schedules")) {
    const Json* paused = Find(s, "paused");
    const bool is_paused = paused != nullptr && paused->is_boolean() && paused->get<bool>();
    table.Add({Field(s, "name"), Field(s, "schedule"), Field(s, "time_zone"), Field(s, "ffqn"),
               is_paused ? "paused" : "active", Field(s, "next_tick")});
  }
  table.Print(out);
}

void PrintSchedule(const Json& s, std::ostream& out) {
  const Json* paused = Find(s, "paused");
  const bool is_paused = paused != nullptr && paused->is_boolean() && paused->get<bool>();
  const Json* params = Find(s, "params");
  const Json* limit = Find(s, "catch_up_limit");
  out << "Schedule:      " << Field(s, "name") << " (" << Field(s, "source") << ")\n"
      << "Cron:          " << Field(s, "schedule") << " in " << Field(s, "time_zone") << "\n"
      << "Function:      " << Field(s, "ffqn") << " "
      << (params != nullptr ? Shorten(Compact(*params), 200) : "[]") << "\n"
      << "State:         " << (is_paused ? "paused" : "active") << "\n"
      << "Overlap:       " << Field(s, "overlap") << "\n"
      << "Catch-up:      " << Field(s, "catch_up");
  if (Field(s, "catch_up") == "all" && limit != nullptr)
    out << " (at most " << limit->dump() << ")";
  out << "\n"
      << "Last tick:     " << Field(s, "last_tick") << "\n";
  if (std::string id = Field(s, "last_execution_id"); !id.empty()) {
    out << "Last fired:    " << id << "\n";
  }
  if (std::string next = Field(s, "next_tick"); !next.empty()) {
    out << "Next tick:     " << next << "\n";
  }
}

}  // namespace stele::cli
