#include "bench/workloads/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace stele::bench {

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  out_ = fdopen(fds[0], "r");
}

ChildProcess::~ChildProcess() {
  Kill();
  if (out_) fclose(out_);
}

std::optional<std::string> ChildProcess::ReadLine() {
  char buf[4096];
  if (!fgets(buf, sizeof(buf), out_)) return std::nullopt;
  std::string line(buf);
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

std::optional<std::string> ChildProcess::WaitFor(const std::string& prefix) {
  while (auto line = ReadLine()) {
    if (line->rfind(prefix, 0) == 0) return line;
  }
  return std::nullopt;
}

void ChildProcess::Kill() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

double FieldAfter(const std::string& line, const std::string& key) {
  auto pos = line.find(key + "=");
  if (pos == std::string::npos) return 0;
  return std::strtod(line.c_str() + pos + key.size() + 1, nullptr);
}

}  // namespace stele::bench
