// kill -9 at a random moment loses no acknowledged write (label `crash`).
//
// Each round starts stele_crash_writer (crash_writer_main.cc) on the same
// SQLite file (synchronous=FULL), waits until it is writing, SIGKILLs it
// after a random 50–500 ms, then reopens the file in this process with the
// integrity check on and checks:
//  - every write the writer acknowledged (its ack file) is in the store, at
//    that version, of that kind; every acknowledged child response too;
//  - every log is well formed: versions 0..n without gaps, Created first,
//    at most one Finished and only last (no child finished twice);
//  - every stored pending state (Get and GetPendingState) is the one the
//    log implies, and the whole store equals a replay of its events through
//    a fresh memory backend (ExecutionLog by ExecutionLog);
//  - no parent has two responses for a child, and every finished child has
//    its response (finish and response are one transaction).
// A last round lets the writer run to completion on the reopened file and
// checks that it made progress on executions left behind by the kills.
//
// The seed of the kill delays is printed; STELE_CRASH_SEED reproduces it,
// STELE_CRASH_ROUNDS changes the number of rounds (default 6).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "core/json_codec.h"
#include "storage/memory/memory_pool.h"
#include "storage/sqlite/sqlite_pool.h"
#include "storage/stress/log_checks.h"
#include "storage/stress/workload.h"

extern char** environ;

namespace stele::storage::stress {
namespace {

namespace fs = std::filesystem;

struct Acks {
  // "<id> <version>" -> variant tag
  std::map<std::pair<std::string, Version::Type>, std::string> events;
  // (parent, child) -> finished version
  std::map<std::pair<std::string, std::string>, Version::Type> responses;
  bool ready = false;
  bool done = false;
};

// Reads complete lines of an ack file into `acks`.
void ReadAcks(const fs::path& path, Acks& acks) {
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream lines(content);
  std::string line;
  const bool complete_last = !content.empty() && content.back() == '\n';
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  if (!complete_last && !all.empty()) all.pop_back();  // torn by the kill
  for (const auto& l : all) {
    std::istringstream words(l);
    std::string kind;
    words >> kind;
    if (kind == "ready") {
      acks.ready = true;
    } else if (kind == "done") {
      acks.done = true;
    } else if (kind == "ack") {
      std::string id, variant;
      Version::Type version = 0;
      words >> id >> version >> variant;
      acks.events[{id, version}] = variant;
    } else if (kind == "resp") {
      std::string parent, child;
      Version::Type version = 0;
      words >> parent >> child >> version;
      acks.responses[{parent, child}] = version;
    }
  }
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class Writer {
 public:
  Writer(const fs::path& db, const fs::path& acks, const fs::path& err, uint64_t seed,
         long iterations) {
    std::vector<std::string> args = {STELE_CRASH_WRITER,
                                     "--db",
                                     db.string(),
                                     "--acks",
                                     acks.string(),
                                     "--seed",
                                     std::to_string(seed),
                                     "--threads",
                                     "3",
                                     "--iterations",
                                     std::to_string(iterations)};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    spawn_error_ = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
  }
  bool started() const { return spawn_error_ == 0; }
  // Non-blocking: has the process ended? Fills status.
  bool Exited(int& status) {
    if (reaped_) {
      status = status_;
      return true;
    }
    pid_t r = waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) reaped_ = true;
    status = status_;
    return reaped_;
  }
  int KillAndWait() {
    if (!reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
      reaped_ = true;
    }
    return status_;
  }
  int Wait() {
    if (!reaped_) {
      waitpid(pid_, &status_, 0);
      reaped_ = true;
    }
    return status_;
  }
  ~Writer() {
    if (started()) KillAndWait();
  }

 private:
  pid_t pid_ = -1;
  int spawn_error_ = 0;
  int status_ = 0;
  bool reaped_ = false;
};

uint64_t Seed() {
  const char* env = std::getenv("STELE_CRASH_SEED");
  return env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
}

int Rounds() {
  const char* env = std::getenv("STELE_CRASH_ROUNDS");
  int rounds = env ? std::atoi(env) : 6;
  return rounds > 0 ? rounds : 6;
}

struct Verified {
  size_t executions = 0;
  size_t pending_now = 0;  // PendingAt executions anyone may lock
  std::set<std::string> pending_ids;
  LogMap logs;
};

// Reopens the store and checks everything; returns what it saw.
Verified VerifyStore(const fs::path& db, const Acks& acks) {
  Verified out;
  sqlite::SqliteOptions options;
  options.path = db.string();
  options.synchronous = sqlite::SqliteOptions::Synchronous::kFull;
  options.integrity_check_at_open = true;
  auto pool = sqlite::SqlitePool::Open(options);
  EXPECT_TRUE(pool.has_value()) << "reopening after the kill: " << pool.error().ToString();
  if (!pool) return out;
  auto conn = (*pool)->ConnectionTest();
  EXPECT_TRUE(conn.has_value());
  if (!conn) return out;
  auto logs = ReadAllLogs(**conn);
  EXPECT_TRUE(logs.has_value()) << logs.error();
  if (!logs) return out;

  std::vector<std::string> problems;
  std::map<std::string, const ExecutionLog*> by_id;
  for (const auto& [id, log] : *logs) by_id[id.ToString()] = &log;
  for (const auto& [key, variant] : acks.events) {
    const auto& [id, version] = key;
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      problems.push_back(id + ": acknowledged (v" + std::to_string(version) + " " + variant +
                         ") but missing after the crash");
      continue;
    }
    const auto& events = it->second->events;
    if (version >= events.size()) {
      problems.push_back(id + ": acknowledged v" + std::to_string(version) + " " + variant +
                         " lost; the log has " + std::to_string(events.size()) + " events");
    } else if (core::ExecutionRequestVariantTag(events[version].event) != variant) {
      problems.push_back(id + ": v" + std::to_string(version) + " acknowledged as " + variant +
                         ", stored as " +
                         std::string(core::ExecutionRequestVariantTag(events[version].event)));
    }
  }
  for (const auto& [key, version] : acks.responses) {
    const auto& [parent, child] = key;
    auto it = by_id.find(parent);
    bool found = false;
    if (it != by_id.end()) {
      for (const auto& r : it->second->responses) {
        const auto* c = std::get_if<core::ChildExecutionFinished>(&r.event.event);
        if (c && c->child_execution_id.ToString() == child &&
            c->finished_version.value() == version) {
          found = true;
        }
      }
    }
    if (!found) problems.push_back(parent + ": acknowledged response of " + child + " lost");
  }
  for (const auto& [id, log] : *logs) {
    for (const auto& p : CheckLog(log)) problems.push_back(p);
    auto state = (*conn)->GetPendingState(id);
    if (!state) {
      problems.push_back(id.ToString() + ": GetPendingState: " + state.error().ToString());
    } else if (!(*state == log.pending_state)) {
      problems.push_back(id.ToString() + ": GetPendingState " + core::ToJson(*state).dump() +
                         " differs from Get's " + core::ToJson(log.pending_state).dump());
    }
    if (const auto* p = std::get_if<core::PendingStatePendingAt>(&log.pending_state.value)) {
      (void)p;
      ++out.pending_now;
      out.pending_ids.insert(id.ToString());
    }
  }
  for (const auto& p : CheckParentChildResponses(*logs)) problems.push_back(p);
  auto oracle = memory::MemoryPool::Create();
  for (const auto& p : CompareWithOracle(*oracle, *logs)) problems.push_back(p);

  EXPECT_TRUE(problems.empty()) << problems.size() << " problem(s) after the crash";
  for (size_t i = 0; i < problems.size() && i < 30; ++i) {
    ADD_FAILURE() << problems[i];
    auto it = by_id.find(problems[i].substr(0, problems[i].find(':')));
    if (i < 3 && it != by_id.end()) ADD_FAILURE() << DescribeLog(*it->second);
  }
  out.executions = logs->size();
  out.logs = std::move(*logs);
  (*pool)->Close();
  return out;
}

TEST(CrashTest, SigkillLosesNoAcknowledgedWrite) {
  const uint64_t seed = Seed();
  const int rounds = Rounds();
  std::cout << "seed " << seed << ", " << rounds << " rounds (STELE_CRASH_SEED to reproduce)\n";
  std::mt19937_64 rng(seed);
  const fs::path dir =
      fs::temp_directory_path() / ("stele-crash-" + core::ExecutionId::Generate().ToString());
  fs::create_directories(dir);
  const fs::path db = dir / "crash.sqlite";
  Acks acks;  // accumulated over all rounds: acknowledged writes never go away

  for (int round = 0; round < rounds; ++round) {
    const fs::path ack_file = dir / ("acks-" + std::to_string(round) + ".txt");
    const fs::path err_file = dir / ("writer-" + std::to_string(round) + ".log");
    const auto delay = std::chrono::milliseconds(50 + rng() % 451);
    Writer writer(db, ack_file, err_file, seed + static_cast<uint64_t>(round), 0);
    ASSERT_TRUE(writer.started()) << "cannot start " << STELE_CRASH_WRITER;
    // Wait until the store is open and the writer is writing.
    Acks round_acks;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int status = 0;
    while (!round_acks.ready) {
      ASSERT_FALSE(writer.Exited(status))
          << "writer ended before it was ready (status " << status << "):\n"
          << ReadFile(err_file);
      ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "writer never became ready";
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      ReadAcks(ack_file, round_acks);
    }
    std::this_thread::sleep_for(delay);
    ASSERT_FALSE(writer.Exited(status))
        << "writer ended before the kill (status " << status << "):\n"
        << ReadFile(err_file);
    status = writer.KillAndWait();
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << ReadFile(err_file);
    round_acks = Acks{};
    ReadAcks(ack_file, round_acks);
    acks.events.insert(round_acks.events.begin(), round_acks.events.end());
    acks.responses.insert(round_acks.responses.begin(), round_acks.responses.end());
    Verified v = VerifyStore(db, acks);
    std::cout << "round " << round << ": killed after " << delay.count() << " ms, "
              << round_acks.events.size() << " acks this round, " << acks.events.size()
              << " in total, " << v.executions << " executions stored, " << v.pending_now
              << " pending\n";
    if (HasFailure()) {
      std::cout << "writer log:\n" << ReadFile(err_file);
      return;
    }
  }

  // The writer continues on the reopened file and finishes a bounded run.
  Verified before = VerifyStore(db, acks);
  const fs::path ack_file = dir / "acks-final.txt";
  const fs::path err_file = dir / "writer-final.log";
  {
    Writer writer(db, ack_file, err_file, seed + 999, 20);
    ASSERT_TRUE(writer.started());
    const int status = writer.Wait();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << ":\n"
                                                               << ReadFile(err_file);
  }
  Acks final_acks;
  ReadAcks(ack_file, final_acks);
  EXPECT_TRUE(final_acks.done);
  size_t continued = 0;  // writes to executions left pending by the kills
  for (const auto& [key, variant] : final_acks.events) {
    if (before.pending_ids.count(key.first) && key.second > 0) ++continued;
  }
  acks.events.insert(final_acks.events.begin(), final_acks.events.end());
  acks.responses.insert(final_acks.responses.begin(), final_acks.responses.end());
  Verified after = VerifyStore(db, acks);
  std::cout << "final run: " << final_acks.events.size() << " acks, " << continued
            << " on executions left pending by the kills, " << after.executions
            << " executions stored\n";
  if (before.pending_now > 0) {
    EXPECT_GT(continued, 0u) << "the writer did not pick up any of the " << before.pending_now
                             << " executions left pending";
  }
  EXPECT_GT(after.executions, before.executions);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace stele::storage::stress
