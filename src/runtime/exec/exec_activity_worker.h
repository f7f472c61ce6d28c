// ExecActivityWorker: activities implemented by a host command, run once
// per attempt (docs/exec_activities.md is the user-facing contract).
//
// Per attempt the command `argv` is spawned (process.h: no shell, own process
// group, nothing inherited but the configured environment) with
//   STELE_FFQN=<ffqn>  STELE_EXECUTION_ID=<id>  STELE_ATTEMPT=<1-based n>
// added to its environment; the params JSON array is written to its stdin,
// which is then closed. Its stdout must be `{"ok": v}` or `{"err": v}`
// (whitespace around it allowed) and its exit status 0. Mapping:
//   {"ok": v}                   WorkerOk(ReturnValueOk) — v checked against
//                               the declared return type, mismatch = trap
//   {"err": v}, retry_on_err and the attempt can be retried
//                               ActivityReturnedError (retried)
//   {"err": v} otherwise, and   WorkerOk(ReturnValueErr) (the final result)
//   {"err": v, "retryable": false}
//   non-zero exit, death by signal, stdout not {"ok"}/{"err"} JSON,
//   output over a cap, executable missing   ActivityTrap (retried, then final)
//   ctx.cancel fired            the group is killed and reaped; returns
//                               FatalError(kCancelled), which the executor
//                               records as the timeout, the shutdown unlock
//                               or the (already committed) cancellation
//   the lock deadline passed    killed by the supervisor on its own clock
//                               (process.h); TemporaryTimeout, recorded
//                               like the executor's own timeout
//   params not matching the declared param types   FatalError(kParamsParsingError)
// Stderr lines are logged at info level, tagged with the execution id; the
// tail of stderr is the detail of a trap.
//
// The process layer gets the run's deadline (ctx.execution_deadline, read
// against the worker's Clock and turned into a steady-clock instant), so the
// command is killed at the deadline even when the executor cannot do it
// (the server stuck or dead).
//
// Threading: Run is thread-safe (no mutable state); each call blocks its
// executor thread until the process ends or ctx.cancel fires.
// Ownership: the worker owns its config and shares the Clock; share the
// worker as shared_ptr<Worker>.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "core/function_type.h"
#include "executor/worker.h"

namespace stele::runtime::exec {

struct ExecActivityConfig {
  // The functions this command serves (at least one, distinct ffqns). One
  // command may serve several: it tells them apart by STELE_FFQN.
  std::vector<core::FunctionSignature> functions;
  // The command; argv[0] is a path, or a name searched in the PATH of the
  // child's environment (see process.h). Non-empty.
  std::vector<std::string> argv;
  // Where it runs; empty: the server's working directory.
  std::string working_dir;
  // Names whose values are copied from the server's environment when the
  // worker is created (absent names are skipped).
  std::vector<std::string> env_allow_list;
  // Fixed values; they win over allow-listed ones. STELE_FFQN,
  // STELE_EXECUTION_ID and STELE_ATTEMPT are reserved.
  std::map<std::string, std::string> env;
  std::size_t max_stdout_bytes = 1 << 20;
  std::size_t max_stderr_bytes = 64 << 10;
  // An `err` result is retried (while retries remain) rather than final.
  bool retry_on_err = true;
  // Exit statuses that are permanent failures: the trap is final at once
  // (docs/exec_activities.md), e.g. 64 for a usage error.
  std::vector<int> non_retryable_exit_codes;
};

class ExecActivityWorker : public executor::Worker {
 public:
  // Validates the config (see the field comments; env names non-empty
  // without '=' or NUL, caps > 0), checks that the supervisor executable
  // is there (process.h, FindSupervisor) and snapshots the allow-listed
  // environment. `clock` is the executor's: the lock deadline is on it.
  static Result<std::shared_ptr<ExecActivityWorker>, std::string> Create(
      ExecActivityConfig config, SharedClock clock = SystemClock::Shared());

  executor::WorkerResult Run(executor::WorkerContext ctx) override;
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

  const ExecActivityConfig& config() const { return config_; }

 private:
  ExecActivityWorker(ExecActivityConfig config, std::vector<std::string> base_env,
                     SharedClock clock);
  const core::FunctionSignature* Find(const core::FunctionFqn& ffqn) const;

  const ExecActivityConfig config_;
  // "NAME=value" of the allow list and the fixed env, without the STELE_ ones.
  const std::vector<std::string> base_env_;
  const SharedClock clock_;
  std::vector<core::FunctionFqn> ffqns_;
};

}  // namespace stele::runtime::exec
