#include "executor/local_dispatch.h"

namespace stele::executor {

void LocalDispatch::Add(const std::vector<core::FunctionFqn>& ffqns, ExecTask* task) {
  for (const core::FunctionFqn& ffqn : ffqns) tasks_[ffqn.ToString()] = task;
}

std::optional<LocalDispatch::Slot> LocalDispatch::TryReserve(const core::FunctionFqn& ffqn,
                                                             DateTime now) const {
  auto it = tasks_.find(ffqn.ToString());
  if (it == tasks_.end()) return std::nullopt;
  std::optional<ExecTask::Reservation> reservation = it->second->TryReserve(now);
  if (!reservation) return std::nullopt;
  return Slot{it->second, *std::move(reservation)};
}

}  // namespace stele::executor
