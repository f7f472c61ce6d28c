#include "storage/testing/conformance.h"

#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {

namespace {

// "Conformance/LockTest" + "Sorts/memory" → "LockTest.Sorts", the key of
// BackendFactory::skipped_tests.
std::string CurrentTestKey() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string suite = info->test_suite_name();
  std::string name = info->name();
  if (auto slash = suite.find('/'); slash != std::string::npos) suite = suite.substr(slash + 1);
  if (auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(0, slash);
  return suite + "." + name;
}

std::string MakeScratchDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "stele_conformance_XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) return "";
  return std::string(buffer.data());
}

}  // namespace

void ConformanceTest::SetUp() {
  const BackendFactory& backend = GetParam();
  if (auto skipped = backend.skipped_tests.find(CurrentTestKey());
      skipped != backend.skipped_tests.end()) {
    GTEST_SKIP() << backend.name << " skips this test: " << skipped->second;
  }
  scratch_dir_ = MakeScratchDir();
  ASSERT_FALSE(scratch_dir_.empty()) << "cannot create a scratch directory";
  pool_ = backend.open(scratch_dir_);
  if (pool_ == nullptr) {
    const std::string why = backend.name + " backend unavailable" +
                            (backend.unavailable_reason ? ": " + backend.unavailable_reason() : "");
    if (backend.required && backend.required()) {
      GTEST_FAIL() << why << " [required here: this backend's tests must run, not skip]";
    }
    GTEST_SKIP() << why;
  }
  auto db = pool_->ConnectionTest();
  ASSERT_THAT(db, IsOk());
  db_ = *std::move(db);
}

void ConformanceTest::TearDown() {
  db_.reset();
  if (pool_ != nullptr) pool_->Close();
  pool_.reset();
  if (!scratch_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(scratch_dir_, ignored);
  }
}

void PrintTo(const BackendFactory& backend, std::ostream* os) { *os << backend.name; }

std::string BackendName(const ::testing::TestParamInfo<BackendFactory>& info) {
  return info.param.name;
}

}  // namespace stele::storage::conformance
