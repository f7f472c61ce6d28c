// Disk full and read-only databases, on real SQLite files (issue 8;
// docs/reliability.md "Disk full and read-only databases").
//
// A full disk: as root, the database lives on a small tmpfs (mount(2)) and
// a ballast file takes the rest of its space; deleting the ballast is
// "space returns". Without root (no mount), the test is skipped and
// SqliteFullPagesTest below simulates SQLITE_FULL with
// `PRAGMA max_page_count`, which makes SQLite fail exactly as on a full
// disk. A read-only database: as root (who ignores file modes) a tmpfs
// remounted read-only, otherwise chmod.
//
// What must hold: writes fail with a clear error (the API: 503
// `database_unavailable` naming the cause), nothing is half-written (a
// failed submission does not exist and can be repeated with the same id),
// reads keep working, the same process continues once space returns, and
// the consistency checker (`stele db check`) finds the file clean.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "server/reliability_test_util.h"
#include "storage/check/consistency_check.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::server {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::kEcho;

// Mounts a tmpfs of `size` ("4m") at `dir`; the reason when not possible
// (not root, no CAP_SYS_ADMIN in a container).
std::optional<std::string> MountTmpfs(const std::filesystem::path& dir, const std::string& size) {
  std::filesystem::create_directories(dir);
  const std::string data = "size=" + size + ",mode=0755";
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, data.c_str()) != 0) {
    return "cannot mount a tmpfs at " + dir.string() + " (" + std::strerror(errno) +
           "); the test needs root";
  }
  return std::nullopt;
}

// Fills the file system of `path` with a file of zeros until ENOSPC, then
// gives `spare` bytes back; returns the size of the file.
size_t FillDisk(const std::filesystem::path& path, size_t spare) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_GE(fd, 0) << std::strerror(errno);
  if (fd < 0) return 0;
  std::string chunk(4096, '\0');
  size_t written = 0;
  for (;;) {
    const ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  written = written > spare ? written - spare : 0;
  EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(written)), 0) << std::strerror(errno);
  ::close(fd);
  return written;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The checker over the file, as `stele db check --sqlite PATH` runs it.
storage::check::CheckReport CheckFile(const std::filesystem::path& path) {
  storage::sqlite::SqliteOptions options;
  options.path = path.string();
  auto pool = storage::sqlite::SqlitePool::Open(options);
  EXPECT_TRUE(pool) << pool.error().ToString();
  if (!pool) return {};
  auto api = (*pool)->ExternalApiConn();
  EXPECT_TRUE(api);
  auto report = storage::check::CheckStore(**api);
  EXPECT_TRUE(report) << report.error();
  (*pool)->Close();
  return report ? *report : storage::check::CheckReport{};
}

class DiskTest : public testing::ServerTest {
 protected:
  void TearDown() override {
    StopServer();
    if (mounted_) ::umount2(mnt().c_str(), MNT_DETACH);
    testing::ServerTest::TearDown();
  }
  std::filesystem::path mnt() const { return dir_ / "mnt"; }
  void Mount(const std::string& size) {
    if (auto why = MountTmpfs(mnt(), size)) GTEST_SKIP() << *why;
    mounted_ = true;
  }
  std::string SqliteOn(const std::filesystem::path& file) {
    return "sqlite = \"" + file.string() + "\"\nsqlite_synchronous = \"normal\"\n";
  }
  core::Json Submission(const std::string& id, const std::string& value) {
    return {{"ffqn", kEcho}, {"params", {value}}, {"execution_id", id}};
  }
  core::Json AwaitResult(const std::string& id) {
    auto res = Get("/v1/executions/" + id + "/result?timeout=30");
    EXPECT_TRUE(res);
    if (!res) return core::Json();
    EXPECT_EQ(res->status, 200) << res->body;
    return Body(res)["result"];
  }

  bool mounted_ = false;
};

TEST_F(DiskTest, FullDiskGives503AndNothingHalfWrittenThenRecovers) {
  Mount("4m");
  if (IsSkipped()) return;
  const std::filesystem::path db = mnt() / "stele.sqlite";
  ASSERT_TRUE(StartServer("max_body_bytes = 1048576", SqliteOn(db)));

  // Some work before the disk fills up.
  std::vector<std::string> before;
  for (int i = 0; i < 10; ++i) {
    before.push_back(core::ExecutionId::Generate().ToString());
    auto res = Post("/v1/executions", Submission(before.back(), "before " + std::to_string(i)));
    ASSERT_EQ(res->status, 201) << res->body;
  }
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(AwaitResult(before[i]), core::Json({{"ok", "before " + std::to_string(i)}}));
  }

  const size_t ballast = FillDisk(mnt() / "ballast", 256 * 1024);
  ASSERT_GT(ballast, 0u);

  // Submissions of 32 KiB each until the database cannot grow any more.
  const std::string big(32 * 1024, 'x');
  std::vector<std::string> accepted;
  std::vector<std::string> refused;
  for (int i = 0; i < 400 && refused.size() < 5; ++i) {
    const std::string id = core::ExecutionId::Generate().ToString();
    auto res = Post("/v1/executions", Submission(id, big + std::to_string(i)));
    ASSERT_TRUE(res);
    if (res->status == 201) {
      accepted.push_back(id);
      continue;
    }
    ASSERT_EQ(res->status, 503) << res->body;
    EXPECT_EQ(ErrorKind(res), "database_unavailable");
    EXPECT_THAT(ErrorMessage(res), HasSubstr("database or disk is full")) << res->body;
    EXPECT_EQ(res->get_header_value("Retry-After").empty(), false) << "a retry hint";
    refused.push_back(id);
  }
  ASSERT_FALSE(refused.empty()) << "the disk never filled up (" << accepted.size() << " accepted)";
  std::cout << "[ disk    ] " << ballast << " bytes of ballast; " << accepted.size()
            << " submissions accepted, then " << refused.size() << " refused with 503\n";

  // Nothing half-written: a refused submission does not exist; reads work.
  for (const auto& id : refused) {
    auto res = Get("/v1/executions/" + id);
    EXPECT_EQ(res->status, 404) << id << ": " << res->body;
  }
  EXPECT_EQ(Get("/v1/executions?length=5")->status, 200);
  EXPECT_EQ(Get("/v1/executions/" + before[0])->status, 200);

  // Space returns: the same server continues. A refused id is new (201).
  std::filesystem::remove(mnt() / "ballast");
  for (const auto& id : refused) {
    auto res = Post("/v1/executions", Submission(id, "after"));
    ASSERT_EQ(res->status, 201) << res->body;
  }
  for (const auto& id : refused) EXPECT_EQ(AwaitResult(id), core::Json({{"ok", "after"}}));
  for (const auto& id : accepted) {
    core::Json result = AwaitResult(id);
    ASSERT_TRUE(result.contains("ok")) << result.dump();
    EXPECT_EQ(result["ok"].get<std::string>().substr(0, big.size()), big);
  }
  StopServer();

  const storage::check::CheckReport report = CheckFile(db);
  EXPECT_THAT(report.findings, IsEmpty());
  EXPECT_EQ(report.executions, before.size() + accepted.size() + refused.size());
}

// A database file that cannot be written is refused at start with the
// cause, and nothing in it changes; writable again, it serves as before.
TEST_F(DiskTest, ReadOnlyDatabaseIsRefusedClearlyAndUntouched) {
  const bool root = ::geteuid() == 0;
  if (root) {
    Mount("8m");
    if (IsSkipped()) return;
  } else {
    std::filesystem::create_directories(mnt());
  }
  const std::filesystem::path db = mnt() / "stele.sqlite";
  ASSERT_TRUE(StartServer("", SqliteOn(db)));
  const std::string id = core::ExecutionId::Generate().ToString();
  ASSERT_EQ(Post("/v1/executions", Submission(id, "kept"))->status, 201);
  EXPECT_EQ(AwaitResult(id), core::Json({{"ok", "kept"}}));
  StopServer();
  ASSERT_FALSE(std::filesystem::exists(mnt() / "stele.sqlite-wal")) << "closed cleanly";
  const std::string bytes = ReadFile(db);

  auto make_read_only = [&](bool read_only) {
    if (root) {
      const unsigned long flags = MS_REMOUNT | (read_only ? MS_RDONLY : 0);  // NOLINT
      ASSERT_EQ(::mount("tmpfs", mnt().c_str(), "tmpfs", flags, "size=8m"), 0)
          << std::strerror(errno);
    } else {
      ::chmod(db.c_str(), read_only ? 0444 : 0644);
      ::chmod(mnt().c_str(), read_only ? 0555 : 0755);
    }
  };
  make_read_only(true);
  auto started = StartServer("", SqliteOn(db));
  ASSERT_FALSE(started) << "a read-only database was opened for writing";
  std::cout << "[ ro      ] " << started.error() << "\n";
  EXPECT_THAT(started.error(), HasSubstr(db.string()));
  EXPECT_THAT(started.error(), HasSubstr("is not writable"));
  make_read_only(false);
  EXPECT_EQ(ReadFile(db), bytes) << "the refused open changed the file";

  ASSERT_TRUE(StartServer("", SqliteOn(db)));
  EXPECT_EQ(AwaitResult(id), core::Json({{"ok", "kept"}}));
  const std::string next = core::ExecutionId::Generate().ToString();
  ASSERT_EQ(Post("/v1/executions", Submission(next, "next"))->status, 201);
  EXPECT_EQ(AwaitResult(next), core::Json({{"ok", "next"}}));
  StopServer();
  const storage::check::CheckReport report = CheckFile(db);
  EXPECT_THAT(report.findings, IsEmpty());
  EXPECT_EQ(report.executions, 2u);
}

// Without root: SQLITE_FULL through `PRAGMA max_page_count` (the pages the
// file may have), on the storage contract directly. The writes that do not
// fit fail with a Generic error naming the cause and leave nothing behind;
// the same process reopens the file with room and continues.
TEST(SqliteFullPagesTest, FullDatabaseFailsCleanlyAndRecovers) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("stele_full_pages_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  storage::sqlite::SqliteOptions options;
  options.path = (dir / "full.sqlite").string();
  options.synchronous = storage::sqlite::SqliteOptions::Synchronous::kNormal;
  {
    auto pool = storage::sqlite::SqlitePool::Open(options);  // creates the schema
    ASSERT_TRUE(pool) << pool.error().ToString();
    (*pool)->Close();
  }
  const uintmax_t schema_bytes = std::filesystem::file_size(options.path);
  const uintmax_t page_size = 4096;
  options.extra_pragmas = {{"max_page_count", std::to_string(schema_bytes / page_size + 8)}};
  auto pool = storage::sqlite::SqlitePool::Open(options);
  ASSERT_TRUE(pool) << pool.error().ToString();
  auto db = (*pool)->Connection();
  ASSERT_TRUE(db);
  const DateTime now = SystemClock::Instance().Now();
  const core::ComponentId component{core::ComponentType::kActivityNative, "c", Sha256Digest("c")};
  auto create = [&](const core::ExecutionId& id, size_t bytes) {
    return (*db)->Create(storage::CreateRequest{now,
                                                id,
                                                testing::Ffqn(kEcho),
                                                core::Json::array({std::string(bytes, 'p')}),
                                                std::nullopt,
                                                now,
                                                component,
                                                {},
                                                std::nullopt});
  };
  std::vector<core::ExecutionId> created;
  std::optional<core::ExecutionId> refused;
  for (int i = 0; i < 200 && !refused; ++i) {
    const core::ExecutionId id = core::ExecutionId::Generate();
    auto r = create(id, 3000);
    if (r) {
      created.push_back(id);
      continue;
    }
    EXPECT_EQ(r.error().kind(), storage::DbErrorWrite::Kind::kGeneric) << r.error().ToString();
    EXPECT_THAT(r.error().ToString(), HasSubstr("database or disk is full"));
    refused = id;
  }
  ASSERT_TRUE(refused) << "max_page_count was never reached";
  auto missing = (*db)->GetPendingState(*refused);
  ASSERT_FALSE(missing) << "a refused Create left something behind";
  EXPECT_TRUE(missing.error().IsNotFound()) << missing.error().ToString();
  for (const auto& id : created) EXPECT_TRUE((*db)->GetPendingState(id)) << id.ToString();
  db->reset();
  (*pool)->Close();

  options.extra_pragmas.clear();  // space returns
  auto reopened = storage::sqlite::SqlitePool::Open(options);
  ASSERT_TRUE(reopened) << reopened.error().ToString();
  auto db2 = (*reopened)->Connection();
  ASSERT_TRUE(db2);
  ASSERT_TRUE((*db2)->Create(storage::CreateRequest{now,
                                                    *refused,
                                                    testing::Ffqn(kEcho),
                                                    core::Json::array({"again"}),
                                                    std::nullopt,
                                                    now,
                                                    component,
                                                    {},
                                                    std::nullopt}));
  db2->reset();
  (*reopened)->Close();
  const storage::check::CheckReport report = CheckFile(options.path);
  EXPECT_THAT(report.findings, IsEmpty());
  EXPECT_EQ(report.executions, created.size() + 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stele::server
