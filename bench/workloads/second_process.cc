// The second engine process (STELE_BENCH_PROCESSES=2): the same bench
// engine on the same database in another process, so that the executors of
// both processes share the work while the driver submits and awaits.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "bench/workloads/child_process.h"
#include "bench/workloads/workloads.h"

namespace stele::bench {

struct SecondEngine::Impl {
  explicit Impl(const std::vector<std::string>& argv) : child(argv) {}
  ChildProcess child;
};

SecondEngine::SecondEngine(const Knobs& knobs, const DbTarget& db,
                           const std::string& effects_path) {
  if (knobs.processes < 2) return;
  impl_ = std::make_unique<Impl>(
      std::vector<std::string>{knobs.self, "--engine-only", db.Encode(), effects_path});
  if (!impl_->child.WaitFor("ready")) {
    std::fprintf(stderr, "workloads: the second engine process did not start\n");
    std::exit(1);
  }
}

SecondEngine::~SecondEngine() { Stop(); }

void SecondEngine::Stop() {
  if (impl_) impl_->child.Kill();
  impl_.reset();
}

int EngineOnlyMain(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: --engine-only <db> <effects>\n");
    return 2;
  }
  auto engine = OpenBenchEngine(DbTarget::Decode(argv[2]), argv[3]);
  if (!engine) {
    std::fprintf(stderr, "engine-only: %s\n", engine.error().ToString().c_str());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  // Runs until the driver kills it (SIGKILL: like a crash, which W5 and the
  // lock expiry handle; the driver waits for every result first).
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace stele::bench
