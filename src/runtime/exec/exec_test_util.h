// Helpers of the exec runtime tests: a scratch directory per test, and
// process liveness read from /proc (zombies count as dead: a killed
// straggler is reaped by whoever inherited it, possibly much later).
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace stele::runtime::exec::testing {

class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("stele-exec-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

  // Writes an executable /bin/sh script and returns its path.
  std::string Script(const std::string& name, const std::string& body) const {
    std::string file = File(name);
    std::ofstream(file) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(file, std::filesystem::perms::owner_all);
    return file;
  }

 private:
  std::filesystem::path path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The fields after "pid (comm)" of /proc/<pid>/stat: state ppid pgrp ...
inline std::vector<std::string> StatFields(const std::string& stat_path) {
  std::string stat = ReadFile(stat_path);
  std::vector<std::string> fields;
  auto close = stat.rfind(')');
  if (close == std::string::npos) return fields;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  while (rest >> field) fields.push_back(field);
  return fields;
}

// Alive: exists and is not a zombie.
inline bool IsAlive(pid_t pid) {
  auto fields = StatFields("/proc/" + std::to_string(pid) + "/stat");
  return !fields.empty() && fields[0] != "Z" && fields[0] != "X";
}

// Whether `pid` is dead within `bound`. A SIGKILLed process dies
// asynchronously: kill() returns before it has finished exiting.
inline bool EventuallyDead(pid_t pid, std::chrono::seconds bound = std::chrono::seconds(20)) {
  auto until = std::chrono::steady_clock::now() + bound;
  while (IsAlive(pid)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Live (non-zombie) processes whose process group is `pgid`.
inline std::vector<pid_t> LiveMembersOfGroup(pid_t pgid) {
  std::vector<pid_t> members;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto fields = StatFields(entry.path().string() + "/stat");
    if (fields.size() < 3 || fields[0] == "Z" || fields[0] == "X") continue;
    if (fields[2] == std::to_string(pgid)) members.push_back(std::stoi(name));
  }
  return members;
}

// Whether the group `pgid` has no live member within `bound` (see
// EventuallyDead).
inline bool EventuallyEmptyGroup(pid_t pgid,
                                 std::chrono::seconds bound = std::chrono::seconds(20)) {
  auto until = std::chrono::steady_clock::now() + bound;
  while (!LiveMembersOfGroup(pgid).empty()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Waits (bounded, to keep a broken test from hanging) until `path` holds a
// complete line; returns its content.
inline std::string WaitForLine(const std::string& path,
                               std::chrono::seconds bound = std::chrono::seconds(20)) {
  auto until = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < until) {
    std::string text = ReadFile(path);
    if (!text.empty() && text.back() == '\n') return text;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "timed out waiting for " << path;
  return {};
}

}  // namespace stele::runtime::exec::testing
