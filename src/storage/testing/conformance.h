// The backend-agnostic storage conformance suite (docs/model.md §11): one
// set of tests, written only against the abstract storage interfaces, run
// against every backend listed by ConformanceBackends().
//
// Each test gets a fresh pool opened in a fresh scratch directory, which is
// removed afterwards. Test names carry the backend name, e.g.
//   Conformance/LockTest.LockPendingSortsByScheduledAt/memory
// so `--gtest_filter='*/sqlite'` runs one backend.
//
// Adding a backend is one entry in conformance_backends.cc, the only file
// that names concrete backends.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "storage/db_pool.h"

namespace stele::storage::conformance {

struct BackendFactory {
  // Part of every test name; [A-Za-z0-9_] only (a gtest requirement).
  std::string name;
  // Opens a fresh, empty database that may keep its files in `scratch_dir`
  // (an empty directory owned by the test). Returning nullptr means the
  // backend is unavailable here (say, no PostgreSQL server configured): the
  // test is then skipped with `unavailable_reason()`, if set.
  std::function<std::unique_ptr<DbPool>(const std::string& scratch_dir)> open;
  // Optional: why `open` returned nullptr, printed with the skip.
  std::function<std::string()> unavailable_reason = nullptr;
  // Optional: whether an unavailable backend fails the test instead (e.g.
  // STELE_REQUIRE_POSTGRES_TESTS=1, set where the server is expected).
  std::function<bool()> required = nullptr;
  // Explicit skip list: test name (e.g. "LockTest.LockPendingSortsByScheduledAt")
  // → the reason the backend cannot pass it. Empty for a conforming backend.
  std::map<std::string, std::string> skipped_tests = {};
};

// Every backend the suite runs against (defined in conformance_backends.cc).
const std::vector<BackendFactory>& ConformanceBackends();

// Gives each test a fresh pool and a DbConnectionTest on it.
class ConformanceTest : public ::testing::TestWithParam<BackendFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  DbPool& pool() { return *pool_; }
  // The connection most tests use; other roles come from pool().
  DbConnectionTest& db() { return *db_; }
  const std::string& scratch_dir() const { return scratch_dir_; }

 private:
  std::string scratch_dir_;
  std::unique_ptr<DbPool> pool_;
  std::unique_ptr<DbConnectionTest> db_;
};

// Prints the backend name (instead of the bytes of the struct).
void PrintTo(const BackendFactory& backend, std::ostream* os);

// gtest parameter name: the backend name.
std::string BackendName(const ::testing::TestParamInfo<BackendFactory>& info);

}  // namespace stele::storage::conformance

// Runs `suite` (a ConformanceTest subclass or alias) on every backend. Put
// it once in the test file that defines the suite's TEST_Ps.
#define STELE_INSTANTIATE_CONFORMANCE_SUITE(suite)                               \
  INSTANTIATE_TEST_SUITE_P(                                                      \
      Conformance, suite,                                                        \
      ::testing::ValuesIn(::stele::storage::conformance::ConformanceBackends()), \
      ::stele::storage::conformance::BackendName)
