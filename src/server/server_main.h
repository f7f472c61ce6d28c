// ServerMain: the entry point of `stele server ...`, called by the CLI.
//
// argv[0] is "server", argv[1] is the subcommand:
//   run     [--config PATH]   load the config (built-in defaults when PATH
//                             is the default ./stele.toml and it does not
//                             exist), open the database, start the
//                             executors and serve the HTTP API until
//                             SIGTERM/SIGINT, then shut down gracefully.
//   verify  [--config PATH]   load and validate the config and every
//                             component; print the errors; do not serve.
// Returns the process exit code (0 success, 1 failure, 2 usage error, also
// for a STELE_LOG that is not a log level). `run` logs at STELE_LOG's
// level, info when it is unset.
//
// Threading: call from the main thread only (it installs signal handling
// for SIGTERM/SIGINT while `run` serves). Ownership: nothing escapes.
#pragma once

namespace stele::server {

int ServerMain(int argc, char** argv);

// The entry point of `stele db ...` (db_main.cc): argv[0] is "db", argv[1]
// the subcommand: `check` (the consistency checker, see
// storage/check/consistency_check.h) or `gc` (retention once,
// ExecutionService::CollectFinished). Returns 0 consistent / done,
// 1 findings, 2 usage or config error, 3 database unavailable.
int DbMain(int argc, char** argv);

}  // namespace stele::server
