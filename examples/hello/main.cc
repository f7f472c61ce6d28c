// The smallest complete libstele program (the one README.md shows): a
// durable workflow calling an activity and sleeping, on a SQLite file.
#include <chrono>
#include <iostream>
#include <string>

#include "stele/stele.h"

stele::ActivityResult Greet(stele::ActivityContext&, const stele::Json& params) {
  return stele::Json("hello, " + params.at(0).get<std::string>());
}

stele::Task<stele::Json> Welcome(stele::WorkflowContext& ctx, stele::Json params) {
  auto greeting = co_await ctx.call("demo:hello/api.greet", params);  // a durable child
  co_await ctx.sleep(std::chrono::seconds(1));                        // a durable timer
  co_return greeting.value;
}

int main(int argc, char** argv) {
  auto engine = stele::Engine::Open({.sqlite_path = argc > 1 ? argv[1] : "hello.sqlite"});
  if (!engine) return 1;
  stele::Engine& e = **engine;
  if (!e.RegisterActivity("demo:hello/api.greet", Greet) ||
      !e.RegisterWorkflow("demo:hello/api.welcome", Welcome) || !e.Start()) {
    return 1;
  }
  // The job's own id makes the submission idempotent: killed mid-sleep and
  // started again, the program resumes this execution instead of starting
  // a second one (use one id per job, e.g. stored with the order it serves).
  auto id = e.Submit("demo:hello/api.welcome", stele::Params("Ada"),
                     {.execution_id = "E_01KBNHM5FQW81KP5Y3XMNX31K4"});
  if (!id) return 1;
  std::cerr << "submitted " << *id << "\n";
  // After a crash, a step the dead process held resumes once its lease ends.
  auto result = e.WaitForResult(*id, std::chrono::seconds(60));
  std::cout << (result ? result->ToString() : result.error().ToString()) << "\n";
  return result && result->ok() ? 0 : 1;
}
