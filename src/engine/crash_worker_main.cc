// stele_sdk_crash_worker: the process the crash-recovery test kills.
//
// Usage: stele_sdk_crash_worker <db path> <output file> <count> [cancel]
// Submits <count> workflows with ids derived from their index (idempotent:
// a restarted process submits the same ids again and gets the same
// executions), runs them, and exits 0 once every one has finished. Each
// workflow sleeps briefly, then calls an activity that appends its index as
// one line to <output file> — at least once per workflow; the event log
// must record each activity's result exactly once.
// With `cancel`, every fourth workflow is cancelled right after the
// submissions; each cancel the engine acknowledged appends the index to
// <output file>.cancels, after the acknowledgement. Such a workflow must
// finish `cancelled`; the others with their index.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "stele/stele.h"

namespace {

constexpr const char* kWorkflow = "crash:test/wf.sleepy";
constexpr const char* kAppend = "crash:test/api.append";

// E_ + a fixed ULID prefix + the index in Crockford base32 (10 chars).
std::string IdOf(int index) {
  static constexpr char kDigits[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  std::string suffix(10, '0');
  for (int pos = 9, value = index; pos >= 0 && value > 0; --pos, value /= 32) {
    suffix[pos] = kDigits[value % 32];
  }
  return "E_01KBNHM5FQW81KP5" + suffix;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && !(argc == 5 && std::string(argv[4]) == "cancel")) {
    std::cerr << "usage: " << argv[0] << " <db> <output file> <count> [cancel]\n";
    return 2;
  }
  const std::string output = argv[2];
  const int count = std::stoi(argv[3]);
  const bool cancel = argc == 5;

  stele::EngineOptions options;
  options.sqlite_path = argv[1];
  options.sqlite_synchronous_full = false;  // a process crash loses nothing in WAL mode
  options.workflow_lock_expiry = std::chrono::milliseconds(1000);
  options.watcher_tick = std::chrono::milliseconds(10);
  options.watcher_leeway = std::chrono::milliseconds(0);
  options.tick_sleep = std::chrono::milliseconds(50);
  auto engine = stele::Engine::Open(options);
  if (!engine) {
    std::cerr << engine.error().ToString() << "\n";
    return 1;
  }
  stele::Engine& e = **engine;
  auto registered = e.RegisterActivity(
      kAppend,
      [output](stele::ActivityContext&, const stele::Json& params) -> stele::ActivityResult {
        std::string line = params.at(0).dump() + "\n";
        int fd = ::open(output.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd < 0) return stele::Unexpected(stele::Json("cannot open output"));
        ssize_t written = ::write(fd, line.data(), line.size());
        ::close(fd);
        if (written != static_cast<ssize_t>(line.size())) {
          return stele::Unexpected(stele::Json("short write"));
        }
        return params.at(0);
      },
      stele::ActivityOptions{.max_retries = 10,
                             .backoff = std::chrono::milliseconds(10),
                             .timeout = std::chrono::milliseconds(1000)});
  if (registered) {
    registered = e.RegisterWorkflow(
        kWorkflow,
        [cancel](stele::WorkflowContext& ctx, stele::Json params) -> stele::Task<stele::Json> {
          // The ones to cancel sleep long enough to be cancelled asleep.
          const bool to_cancel = cancel && params.at(0).get<int>() % 4 == 0;
          co_await ctx.sleep(std::chrono::milliseconds(to_cancel ? 3000 : 20));
          auto r = co_await ctx.call(kAppend, params);
          co_return r.value;
        });
  }
  if (!registered || !e.Start()) {
    std::cerr << "setup failed\n";
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    auto id = e.Submit(kWorkflow, stele::Params(i), {.execution_id = IdOf(i)});
    if (!id) {
      std::cerr << "submit " << i << ": " << id.error().ToString() << "\n";
      return 1;
    }
  }
  std::cout << "submitted " << count << std::endl;
  for (int i = 0; cancel && i < count; i += 4) {
    auto cancelled = e.Cancel(IdOf(i));
    if (!cancelled) {
      if (cancelled.error().kind == stele::Error::Kind::kConflict) continue;  // finished first
      std::cerr << "cancel " << i << ": " << cancelled.error().ToString() << "\n";
      return 1;
    }
    const std::string line = std::to_string(i) + "\n";
    int fd = ::open((output + ".cancels").c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      std::cerr << "cannot record a cancel\n";
      return 1;
    }
    ::close(fd);
  }
  for (int i = 0; i < count; ++i) {
    auto result = e.WaitForResult(IdOf(i), std::chrono::seconds(60));
    if (cancel && i % 4 == 0 && result && result->failed() && result->failure_kind == "cancelled") {
      continue;
    }
    if (!result || !result->ok() || result->value != stele::Json(i)) {
      std::cerr << "workflow " << i << ": "
                << (result ? result->ToString() : result.error().ToString()) << "\n";
      return 1;
    }
  }
  std::cout << "finished " << count << std::endl;
  e.Stop();
  return 0;
}
