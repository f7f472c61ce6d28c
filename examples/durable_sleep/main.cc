// A durable sleep: the workflow sleeps, and while it does it costs a row in
// the database, not a thread. Kill the program during the sleep and start
// it again with the same database: the same execution (same id) wakes up at
// the time it was due and finishes.
//
// Usage: stele_example_durable_sleep [db path] [seconds]
#include <iostream>
#include <string>

#include "stele/stele.h"

namespace {

stele::Task<stele::Json> Reminder(stele::WorkflowContext& ctx, stele::Json p) {
  ctx.log("sleeping " + p.at(0).dump() + " s");
  co_await ctx.sleep(std::chrono::seconds(p.at(0).get<int>()));
  co_return stele::Json("time to stretch, " + p.at(1).get<std::string>());
}

}  // namespace

int main(int argc, char** argv) {
  auto engine = stele::Engine::Open({.sqlite_path = argc > 1 ? argv[1] : "durable-sleep.sqlite"});
  if (!engine) {
    std::cerr << engine.error().ToString() << "\n";
    return 1;
  }
  stele::Engine& e = **engine;
  if (!e.RegisterWorkflow("demo:reminders/api.remind", Reminder) || !e.Start()) return 1;
  const int seconds = argc > 2 ? std::stoi(argv[2]) : 2;
  // A fixed id: a restarted program resubmits it and gets the same execution.
  auto id = e.Submit("demo:reminders/api.remind", stele::Params(seconds, "Ada"),
                     {.execution_id = "E_01KBNHM5FQW81KP5Y3XMNX31K4"});
  if (!id) {
    std::cerr << id.error().ToString() << "\n";
    return 1;
  }
  // Flushed: whoever watches for this line (a person, a test) may kill the
  // program right after it.
  std::cout << "submitted " << *id << std::endl;
  if (auto status = e.GetStatus(*id)) std::cout << "status: " << status->description << "\n";
  auto result = e.WaitForResult(*id, std::chrono::seconds(seconds + 30));
  if (!result) {
    std::cerr << result.error().ToString() << "\n";
    return 1;
  }
  std::cout << "result: " << result->ToString() << "\n";
  e.Stop();
  return 0;
}
