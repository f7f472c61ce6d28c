// LocalDispatch: which executor of this process serves which function, so
// that a workflow creating a child can lock it for that executor in the
// same transaction and hand it over directly (eager dispatch).
//
// Without it a child is created pending; the executor serving it is woken,
// locks it in a transaction of its own and only then runs it. With it the
// child's Created and Locked commit with the parent's events (one durable
// commit fewer per step, no wake-up) and the run starts as soon as that
// commit returns. When no executor of the process serves the ffqn, or it has
// no free permit, the child is created pending as before: eager dispatch is
// an optimisation, never a requirement, and executors of other processes
// still lock whatever is pending.
//
// Fairness: eagerly dispatched children take a free permit ahead of older
// pending executions of the same executor. That favours finishing work in
// flight over starting new work, and only while permits are free.
//
// Threading: Add before any run may call TryReserve (setup); TryReserve is
// thread-safe afterwards. Ownership: borrows the ExecTasks, which must
// outlive every run that may reserve on them (stop the workflow executors
// before destroying the tasks they dispatch to; a stopped task reserves
// nothing).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/function_fqn.h"
#include "executor/exec_task.h"

namespace stele::executor {

class LocalDispatch {
 public:
  // A reservation and the task it is for.
  struct Slot {
    ExecTask* task = nullptr;
    ExecTask::Reservation reservation;
  };

  // `task` runs `ffqns`. A later Add for the same ffqn wins.
  void Add(const std::vector<core::FunctionFqn>& ffqns, ExecTask* task);

  // A reserved slot on the task serving `ffqn`, or nullopt (none serves it
  // here, it is stopping, or it has no free permit).
  std::optional<Slot> TryReserve(const core::FunctionFqn& ffqn, DateTime now) const;

  bool empty() const { return tasks_.empty(); }

 private:
  std::unordered_map<std::string, ExecTask*> tasks_;  // by ffqn text
};

}  // namespace stele::executor
