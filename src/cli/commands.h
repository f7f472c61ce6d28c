// The client commands of `stele`: CliMain parses argv, runs one command
// against the server's HTTP API and maps the outcome to an exit code
// (ExitCode in cli/args.h, documented in docs/cli.md).
//
// Output: results go to `out` (human-readable, or one JSON document per line
// with --json); diagnostics go to `err`. Nothing is sent when parsing fails.
//
// Threading: call from one thread; a command runs synchronously.
// Ownership: borrows the streams for the duration of the call.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cli/args.h"

namespace stele::cli {

// Runs an already parsed command; returns the exit code.
int RunCommand(const Command& command, std::ostream& out, std::ostream& err);

// `args` excludes argv[0] and the `server` branch (handled by main.cc).
int CliMain(const std::vector<std::string>& args, const EnvLookup& env, std::ostream& out,
            std::ostream& err);

}  // namespace stele::cli
