// NativeActivityWorker: runs C++ activity callables (stele/activity.h) as an
// executor::Worker. One worker serves a group of activities that share
// ActivityOptions (the executor copies one retry config into every lock).
//
// Mapping of one attempt (reference/obelisk.md §2.9):
//   ok(v)                      WorkerOk(ReturnValueOk{v})
//   err(e), retry_on_err       ActivityReturnedError(e): retried while
//                              retries remain, then e is the result
//   err(e), !retry_on_err      WorkerOk(ReturnValueErr{e}) — final at once
//   exception thrown           ActivityTrap("activity threw: <what>")
//   ran past the deadline      the executor's watchdog fires the token and
//                              records TemporaryTimeout whatever returns
//   cancelled by the API       the DB already holds Finished(cancelled);
//                              the write of this attempt loses the race
//
// Threading: Run is called concurrently; the worker is immutable after
// construction and the RunningActivities registry is thread-safe.
// Ownership: shares the RunningActivities registry with the Engine.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/cancellation.h"
#include "core/function_fqn.h"
#include "executor/worker.h"
#include "stele/activity.h"

namespace stele::runtime::native {

// Tokens of the activity attempts running in this process, by execution id,
// so that Engine::Cancel can stop one at once (the DB write is the truth;
// this is only a prompt).
class RunningActivities {
 public:
  void Add(const std::string& id, const CancellationToken& token);
  void Remove(const std::string& id);
  // Fires the token of `id` if it runs here.
  void Cancel(const std::string& id);

 private:
  std::mutex mu_;
  std::multimap<std::string, CancellationToken> running_;  // guarded by mu_
};

struct NativeActivity {
  core::FunctionFqn ffqn;
  ActivityFn fn;
};

class NativeActivityWorker final : public executor::Worker {
 public:
  NativeActivityWorker(std::vector<NativeActivity> activities, ActivityOptions options,
                       std::shared_ptr<RunningActivities> running);

  executor::WorkerResult Run(executor::WorkerContext ctx) override;
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

 private:
  const ActivityFn* Find(const core::FunctionFqn& ffqn) const;

  std::vector<NativeActivity> activities_;
  std::vector<core::FunctionFqn> ffqns_;
  ActivityOptions options_;
  std::shared_ptr<RunningActivities> running_;
};

}  // namespace stele::runtime::native
