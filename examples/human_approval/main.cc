// Human approval: an expense workflow asks a stub activity for a decision.
// No code runs the stub; the workflow waits (unloaded, costing a row) until
// someone writes the result with Engine::Stub — here the "manager" thread.
//
// Usage: stele_example_human_approval [db path]
#include <iostream>
#include <string>
#include <thread>

#include "stele/stele.h"

namespace {

constexpr const char* kApprove = "demo:expenses/manager.approve";

stele::ActivityResult Pay(stele::ActivityContext&, const stele::Json& p) {
  std::cout << "  paying " << p.at(0) << " to " << p.at(1) << "\n";
  return stele::Json("paid");
}

stele::Task<stele::Json> Expense(stele::WorkflowContext& ctx, stele::Json p) {
  auto decision = co_await ctx.call(kApprove, p);
  if (!decision.ok() || decision.value != stele::Json(true)) co_return stele::Json("rejected");
  auto paid = co_await ctx.call("demo:expenses/bank.pay", p);
  co_return paid.value;
}

}  // namespace

int main(int argc, char** argv) {
  auto engine = stele::Engine::Open({.sqlite_path = argc > 1 ? argv[1] : "approval.sqlite"});
  if (!engine) {
    std::cerr << engine.error().ToString() << "\n";
    return 1;
  }
  stele::Engine& e = **engine;
  if (!e.RegisterStub(kApprove) || !e.RegisterActivity("demo:expenses/bank.pay", Pay) ||
      !e.RegisterWorkflow("demo:expenses/flow.submit", Expense) || !e.Start()) {
    return 1;
  }
  auto id = e.Submit("demo:expenses/flow.submit", stele::Params(120, "Grace"));
  if (!id) {
    std::cerr << id.error().ToString() << "\n";
    return 1;
  }
  // The approval request is the workflow's first direct call: its id is
  // deterministic, `<workflow>.o:1-approve_1`.
  const std::string request = *id + ".o:1-approve_1";
  for (int i = 0; i < 1000; ++i) {
    auto status = e.GetStatus(request);
    if (status) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::cout << "waiting for approval: " << request << "\n";
  if (auto written = e.Stub(request, stele::ExecutionResult::Ok(true)); !written) {
    std::cerr << written.error().ToString() << "\n";
    return 1;
  }
  std::cout << "manager approved\n";
  auto result = e.WaitForResult(*id, std::chrono::seconds(30));
  if (!result) {
    std::cerr << result.error().ToString() << "\n";
    return 1;
  }
  std::cout << "result: " << result->ToString() << "\n";
  e.Stop();
  return result->ok() ? 0 : 1;
}
