// ChildProcess: a child process running `argv`, its stdout readable line by
// line (the W5 engine, the second engine process, the idle probe).
//
// Threading: one owner thread. Ownership: the destructor SIGKILLs the child
// if it still runs and reaps it.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace stele::bench {

class ChildProcess {
 public:
  // Forks and execs argv[0] with argv; its stdout goes to a pipe read here.
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The next line of output, or nullopt at EOF.
  std::optional<std::string> ReadLine();
  // Reads lines until one starts with `prefix`; returns it (nullopt at EOF).
  std::optional<std::string> WaitFor(const std::string& prefix);
  // SIGKILL and reap; idempotent.
  void Kill();

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
};

// The number after `key=` in `line` (0 when absent).
double FieldAfter(const std::string& line, const std::string& key);

}  // namespace stele::bench
