// NativeActivityWorker: runs C++ activity callables (stele/activity.h) as an
// executor::Worker. One worker serves a group of activities that share
// ActivityOptions (the executor copies one retry config into every lock).
//
// Mapping of one attempt (docs/model.md §5.4):
//   ok(v)                      WorkerOk(ReturnValueOk{v})
//   err(e), retry_on_err       ActivityReturnedError(e): retried while
//                              retries remain, then e is the result
//   err(e), !retry_on_err or   WorkerOk(ReturnValueErr{e}) — final at once
//   ctx.NonRetryable(e)
//   exception thrown           ActivityTrap("activity threw: <what>")
//   ran past the deadline      the executor's watchdog fires the token and
//                              records TemporaryTimeout whatever returns
//   cancelled by the API       the DB already holds Finished(cancelled) and
//                              the executor's CancelRegistry fired the
//                              token; the write of this attempt loses the
//                              version fence
//
// Threading: Run is called concurrently; the worker is immutable after
// construction. Ownership: owns its callables.
#pragma once

#include <string>
#include <vector>

#include "core/function_fqn.h"
#include "executor/worker.h"
#include "stele/activity.h"

namespace stele::runtime::native {

struct NativeActivity {
  core::FunctionFqn ffqn;
  ActivityFn fn;
};

class NativeActivityWorker final : public executor::Worker {
 public:
  NativeActivityWorker(std::vector<NativeActivity> activities, ActivityOptions options);

  executor::WorkerResult Run(executor::WorkerContext ctx) override;
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

 private:
  const ActivityFn* Find(const core::FunctionFqn& ffqn) const;

  std::vector<NativeActivity> activities_;
  std::vector<core::FunctionFqn> ffqns_;
  ActivityOptions options_;
};

}  // namespace stele::runtime::native
