// stele_crash_writer: the victim process of stele_storage_crash_tests.
//
// Opens a SQLite store with synchronous=FULL and runs the stress workload
// (workload.h) on several threads — creating executions, locking them,
// appending events, finishing children with their parent's response — and
// after every write the store acknowledged appends one line to the ack file:
//
//   ready                                  the store is open
//   ack <execution_id> <version> <variant>  an acknowledged event
//   resp <parent_id> <child_id> <version>   an acknowledged child response
//   done                                   --iterations reached (clean exit)
//
// Lines are written with one write(2) each on an O_APPEND descriptor, so
// they reach the kernel before the next database call and survive SIGKILL
// (the test kills processes, not machines). A contract violation seen by
// the workload is printed to stderr and ends the process with status 3.
//
// Usage: stele_crash_writer --db PATH --acks PATH [--seed N] [--threads N]
//                           [--iterations N]   (per thread; 0 = until killed)
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/sqlite/sqlite_pool.h"
#include "storage/stress/workload.h"

namespace stele::storage::stress {
namespace {

class AckWriter final : public WorkloadObserver {
 public:
  explicit AckWriter(int fd) : fd_(fd) {}

  void Line(const std::string& line) {
    const std::string text = line + "\n";
    std::lock_guard lock(mu_);
    size_t off = 0;
    while (off < text.size()) {
      ssize_t n = ::write(fd_, text.data() + off, text.size() - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::cerr << "crash_writer: write to ack file failed: " << std::strerror(errno) << "\n";
        std::_Exit(4);
      }
      off += static_cast<size_t>(n);
    }
  }

  void OnAck(const ExecutionId& id, Version version, const core::ExecutionEvent& event) override {
    Line("ack " + id.ToString() + " " + version.ToString() + " " +
         std::string(core::ExecutionRequestVariantTag(event.event)));
  }
  void OnResponseAck(const ExecutionId& parent, const core::ExecutionIdDerived& child,
                     Version finished_version) override {
    Line("resp " + parent.ToString() + " " + child.ToString() + " " + finished_version.ToString());
  }
  void OnLocked(const LockedExecution& locked, DateTime) override {
    const Version at(locked.next_version.value() - 1);
    Line("ack " + locked.execution_id.ToString() + " " + at.ToString() + " locked");
  }
  void OnReleasing(const ExecutionId&, const core::RunId&) override {}
  void OnFinished(const ExecutionId&) override {}
  void OnProblem(const std::string& problem) override {
    std::cerr << "crash_writer: " << problem << "\n";
    std::_Exit(3);
  }

 private:
  int fd_;
  std::mutex mu_;
};

int Main(int argc, char** argv) {
  std::string db_path;
  std::string acks_path;
  uint64_t seed = 1;
  int threads = 3;
  long iterations = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--db") {
      db_path = value;
    } else if (flag == "--acks") {
      acks_path = value;
    } else if (flag == "--seed") {
      seed = std::strtoull(value, nullptr, 10);
    } else if (flag == "--threads") {
      threads = std::atoi(value);
    } else if (flag == "--iterations") {
      iterations = std::atol(value);
    } else {
      std::cerr << "crash_writer: unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (db_path.empty() || acks_path.empty() || threads < 1) {
    std::cerr << "usage: stele_crash_writer --db PATH --acks PATH [--seed N] [--threads N] "
                 "[--iterations N]\n";
    return 2;
  }
  const int fd = ::open(acks_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::cerr << "crash_writer: cannot open " << acks_path << ": " << std::strerror(errno) << "\n";
    return 2;
  }
  sqlite::SqliteOptions options;
  options.path = db_path;
  options.synchronous = sqlite::SqliteOptions::Synchronous::kFull;
  options.integrity_check_at_open = true;
  auto pool = sqlite::SqlitePool::Open(options);
  if (!pool) {
    std::cerr << "crash_writer: open failed: " << pool.error().ToString() << "\n";
    return 1;
  }
  AckWriter acks(fd);
  acks.Line("ready");

  WorkerOptions worker_options;
  worker_options.children_per_parent = 2;
  worker_options.lock_batch = 4;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto conn = (*pool)->Connection();
      if (!conn) acks.OnProblem("Connection: " + conn.error().ToString());
      Worker worker(**conn, acks, seed * 1000 + static_cast<uint64_t>(t), worker_options);
      for (long i = 0; iterations == 0 || i < iterations; ++i) {
        if (i % 3 == 0) {
          worker.CreateParent();
        } else {
          worker.CreateActivity();
        }
        worker.LockAndProcess();
      }
    });
  }
  for (auto& w : workers) w.join();
  (*pool)->Close();
  acks.Line("done");
  ::close(fd);
  return 0;
}

}  // namespace
}  // namespace stele::storage::stress

int main(int argc, char** argv) { return stele::storage::stress::Main(argc, argv); }
