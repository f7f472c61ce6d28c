// Human-readable output of the client commands (docs/cli.md, "Output"):
// tables whose columns are as wide as their widest cell, so that long ids
// and ffqns never run into the next column; results and failure reasons
// printed whole (a reason or detail gets its own indented lines); next-page
// hints that repeat the whole command, flags included.
//
// Input documents are the API's (docs/api.md) as core::Json, whose objects
// keep their key order: a result prints with its keys in the order the
// function returned them. Missing or mistyped fields print as empty cells,
// never fail.
//
// Threading: pure functions over values; thread-compatible.
#pragma once

#include <ostream>
#include <string>

#include "cli/args.h"
#include "core/json.h"

namespace stele::cli {

// `j[key]` as text: a string as is, another value as compact JSON, "" when
// absent or null.
std::string Field(const core::Json& j, const char* key);

// "locked run_id=Run_... lock_expires_at=..." from {"status": "locked", ...}.
std::string StateLine(const core::Json& state);

// "ok VALUE", "err VALUE" or "execution error KIND: REASON" from a result
// document, then the execution error's detail on indented lines.
std::string ResultLine(const core::Json& result);

void PrintExecution(const core::Json& doc, std::ostream& out);
// `cmd` is the list command that fetched `body`: its flags go into the hint.
void PrintList(const core::Json& body, const Command& cmd, std::ostream& out);
void PrintEvents(const core::Json& body, const Command& cmd, std::ostream& out);
void PrintResponses(const core::Json& body, const Command& cmd, std::ostream& out);
void PrintComponents(const core::Json& body, std::ostream& out);
// `schedule list` ({"schedules": [...]}) and `schedule get` (one schedule).
void PrintSchedules(const core::Json& body, std::ostream& out);
void PrintSchedule(const core::Json& schedule, std::ostream& out);

}  // namespace stele::cli
