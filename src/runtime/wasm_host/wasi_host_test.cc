// The WASI preview 1 subset of wasm activities (wasi_host.h), through real
// guests built against wasi-libc (testdata/test_activities.c) run by the
// executor on SQLite: output captured to the log, clocks, random bytes,
// args and env from the config, proc_exit.
#include "runtime/wasm_host/wasi_host.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/log.h"
#include "runtime/wasm_host/wasm_host_test_util.h"

namespace stele::runtime::wasm_host::testing {
namespace {

using core::Json;

uint64_t Nanos(std::chrono::system_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}
uint64_t Nanos(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

class WasiHostTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override {
    env_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Env& Start(WasiConfig wasi = {}, uint32_t max_retries = 0) {
    EnvConfig config;
    config.workflows = LoadOrDie(STELE_TEST_WORKFLOWS_WASM, "test_workflows", GuestKind::kWorkflow);
    config.activities =
        LoadOrDie(STELE_TEST_ACTIVITIES_WASM, "test_activities", GuestKind::kActivity);
    config.activity_max_retries = max_retries;
    config.activity_options.wasi = std::move(wasi);
    env_ = std::make_unique<Env>(dir_, std::move(config));
    return *env_;
  }
  Json Ok(const core::ExecutionId& id) {
    auto result = env_->Await(id);
    const auto* ok = std::get_if<core::ReturnValueOk>(&result);
    EXPECT_TRUE(ok && ok->ok) << "not ok";
    return ok && ok->ok ? *ok->ok : Json();
  }
  std::filesystem::path dir_;
  std::unique_ptr<Env> env_;
};

// Runs `body` with the log at INFO and returns what was logged.
template <class F>
std::string Logged(F body) {
  const LogLevel before = GetLogLevel();
  SetLogLevel(LogLevel::kInfo);
  ::testing::internal::CaptureStderr();
  body();
  std::string logged = ::testing::internal::GetCapturedStderr();
  SetLogLevel(before);
  return logged;
}

TEST_F(WasiHostTest, StdoutAndStderrAreLoggedLineByLineWithTheExecutionId) {
  Env& env = Start();
  core::ExecutionId id = core::ExecutionId::Generate();
  const std::string logged = Logged([&] {
    env.Submit("testing:wasm/act.stdio", Json::array({"Ada"}), id);
    EXPECT_EQ(Ok(id), Json("written"));
  });
  const std::string prefix = id.ToString() + " ";
  for (const std::string line :
       {"[stdout] out 1: Ada", "[stdout] out 2: Ada", "[stderr] err: Ada", "[stdout] partial"}) {
    EXPECT_NE(logged.find(prefix + line + "\n"), std::string::npos) << line << "\n" << logged;
  }
}

// stdout and stderr look like a terminal to the guest, so wasi-libc's stdio
// writes every complete line at once; a reactor never exits (nothing
// flushes at the end), so full buffering would lose them.
TEST_F(WasiHostTest, LinesPrintedWithoutFlushReachTheLog) {
  Env& env = Start();
  core::ExecutionId id = core::ExecutionId::Generate();
  const std::string logged = Logged([&] {
    env.Submit("testing:wasm/act.lines", Json::array({3}), id);
    EXPECT_EQ(Ok(id), Json(3));
  });
  for (const std::string line : {"line 1", "line 2", "line 3"}) {
    EXPECT_NE(logged.find(id.ToString() + " [stdout] " + line + "\n"), std::string::npos)
        << line << "\n"
        << logged;
  }
}

TEST_F(WasiHostTest, OutputBeyondTheCapIsDroppedAndCounted) {
  WasiConfig wasi;
  wasi.max_captured_output = 12;
  Env& env = Start(std::move(wasi));
  core::ExecutionId id = core::ExecutionId::Generate();
  const std::string logged = Logged([&] {
    env.Submit("testing:wasm/act.stdio", Json::array({"Ada"}), id);
    EXPECT_EQ(Ok(id), Json("written"));
  });
  // 38 bytes are written: the first line (11) and one more byte are kept,
  // whatever the guest's buffering, and 26 are dropped.
  EXPECT_NE(logged.find(id.ToString() + " [stdout] out 1: Ada\n"), std::string::npos) << logged;
  EXPECT_EQ(logged.find("out 2: Ada"), std::string::npos) << logged;
  EXPECT_NE(logged.find(id.ToString() + ": 26 bytes of output dropped"), std::string::npos)
      << logged;
}

TEST_F(WasiHostTest, ClocksAreTheHostsRealtimeAndMonotonicClocks) {
  Env& env = Start();
  const auto wall_before = std::chrono::system_clock::now();
  const auto steady_before = std::chrono::steady_clock::now();
  auto id = env.Submit("testing:wasm/act.clock", Json::array());
  Json values = Ok(id);
  const auto steady_after = std::chrono::steady_clock::now();
  const auto wall_after = std::chrono::system_clock::now();
  ASSERT_TRUE(values.is_array() && values.size() == 5) << values.dump();
  const uint64_t realtime = values[0], mono1 = values[1], mono2 = values[2];
  EXPECT_GE(realtime, Nanos(wall_before));
  EXPECT_LE(realtime, Nanos(wall_after));
  // The same CLOCK_MONOTONIC as this process's steady_clock, never going back.
  EXPECT_GE(mono1, Nanos(steady_before));
  EXPECT_LE(mono1, mono2);
  EXPECT_LE(mono2, Nanos(steady_after));
  EXPECT_EQ(values[3], Json(1000)) << "resolution in ns";
  EXPECT_EQ(values[4], Json(28)) << "EINVAL for an unknown clock id";
}

TEST_F(WasiHostTest, RandomGetFillsTheBufferAndRefusesHugeRequests) {
  Env& env = Start();
  auto id = env.Submit("testing:wasm/act.random", Json::array());
  Json values = Ok(id);
  ASSERT_TRUE(values.is_array() && values.size() == 3) << values.dump();
  const std::string a = values[0], b = values[1];
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(b.size(), 64u);
  // 256 random bits each: equal or all-zero only if random_get did nothing.
  EXPECT_NE(a, b);
  EXPECT_NE(a, std::string(64, '0'));
  EXPECT_EQ(values[2], Json(28)) << "EINVAL above 1 MiB";
  // Another attempt gets other bytes.
  auto again = env.Submit("testing:wasm/act.random", Json::array());
  Json other = Ok(again);
  EXPECT_NE(other[0], values[0]);
}

TEST_F(WasiHostTest, ArgsComeFromTheConfig) {
  WasiConfig wasi;
  wasi.args = {"greet.wasm", "--name", "Zoë Ada", ""};
  Env& env = Start(std::move(wasi));
  auto id = env.Submit("testing:wasm/act.args", Json::array());
  EXPECT_EQ(Ok(id), Json::array({"greet.wasm", "--name", "Zoë Ada", ""}));
}

TEST_F(WasiHostTest, NoArgsConfiguredIsAnEmptyArgv) {
  Env& env = Start();
  auto id = env.Submit("testing:wasm/act.args", Json::array());
  EXPECT_EQ(Ok(id), Json::array());
}

TEST_F(WasiHostTest, NoEnvConfiguredIsAnEmptyEnvironment) {
  Env& env = Start();
  auto id = env.Submit("testing:wasm/act.env", Json::array());
  EXPECT_EQ(Ok(id), Json("unset"));
}

// A run's table holds only the WASI functions its module imports (built
// for every attempt); without a module, all of them (what a module may
// import at all).
TEST(WasiImportsTest, ARunsTableHoldsWhatItsModuleImports) {
  auto component = LoadOrDie(STELE_TEST_ACTIVITIES_WASM, "test_activities", GuestKind::kActivity);
  wasm::ImportTable all;
  AddWasiImports(all, std::make_shared<WasiState>());
  wasm::ImportTable run;
  AddWasiImports(run, std::make_shared<WasiState>(), component->module.get());
  size_t imported = 0;
  for (const wasm::ImportSignature& imp : component->module->imports()) {
    if (imp.module != kWasiModule) continue;
    ++imported;
    const wasm::HostFunction* fn = run.Find(imp.module, imp.name);
    ASSERT_NE(fn, nullptr) << imp.name;
    EXPECT_EQ(fn->type, imp.type) << imp.name;
  }
  EXPECT_GT(imported, 0u);
  EXPECT_EQ(run.functions.size(), imported);
  EXPECT_GT(all.functions.size(), imported);
  EXPECT_NE(all.Find(kWasiModule, "path_open"), nullptr);
}

}  // namespace
}  // namespace stele::runtime::wasm_host::testing
