// The fixture of the PostgreSQL-specific tests (postgres_*_test.cc): a real
// server from STELE_TEST_POSTGRES_URL (scripts/with_postgres.sh), empty
// databases made per test and dropped after it, and the admin queries the
// tests use to disturb a pool (pg_stat_activity, pg_terminate_backend).
// Without a server every test skips (fails under
// STELE_REQUIRE_POSTGRES_TESTS=1).
//
// Threading: a fixture is used from its test's thread; Admin() gives each
// caller its own connection. Ownership: the databases die with the fixture.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/postgres/pg_conn.h"
#include "storage/postgres/postgres_pool.h"
#include "storage/postgres/test_database.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::postgres {

class PostgresPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto admin = testing::AdminConninfo();
    if (!admin) STELE_POSTGRES_TEST_UNAVAILABLE(testing::UnavailableReason());
    admin_ = *admin;
  }
  void TearDown() override {
    for (const auto& name : databases_) testing::DropDatabase(name);
  }
  // An empty database (no schema): its conninfo. Its name is
  // databases_.back().
  std::string EmptyDatabase() {
    const std::string name =
        "stele_unit_" + std::to_string(::getpid()) + "_" + std::to_string(databases_.size());
    auto admin = Admin();
    (void)admin->ExecScript("DROP DATABASE IF EXISTS " + name);
    EXPECT_TRUE(admin->ExecScript("CREATE DATABASE " + name).has_value());
    databases_.push_back(name);
    return conformance::Must(testing::WithDatabase(admin_, name));
  }
  // A connection of the admin role to the server's own database (never to
  // a test database, so cutting a test database's sessions spares it).
  std::unique_ptr<internal::PgConn> Admin() {
    auto conn = internal::PgConn::Connect(admin_);
    EXPECT_TRUE(conn.has_value()) << (conn ? "" : conn.error().message);
    return conn ? std::move(*conn) : nullptr;
  }
  // Backend pids of the idle sessions of `dbname` (done with their last
  // statement) that also match `condition`, SQL over pg_stat_activity's
  // columns: e.g. "application_name = 'stele listener'" (pg_conn.h names
  // each connection) or "query LIKE 'LISTEN%'".
  std::set<int64_t> IdleSessions(internal::PgConn& admin, const std::string& dbname,
                                 const std::string& condition) {
    std::set<int64_t> pids;
    auto res = admin.Exec(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND state = 'idle' "
        "AND (" +
            condition + ")",
        internal::Params().Text(dbname));
    EXPECT_TRUE(res.has_value()) << (res ? "" : res.error().message);
    if (!res) return pids;
    for (int row = 0; row < res->rows(); ++row) pids.insert(res->Int(row, 0));
    return pids;
  }
  // Waits (bounded by `limit`, polling every 20 ms) until `count` sessions
  // of `dbname` have run LISTEN (and are idle after it), none of them in
  // `excluded`; returns them (fewer when the limit passed).
  std::set<int64_t> AwaitListeners(internal::PgConn& admin, const std::string& dbname, size_t count,
                                   const std::set<int64_t>& excluded,
                                   std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::set<int64_t> fresh;
    while (true) {
      fresh.clear();
      for (int64_t pid : IdleSessions(admin, dbname, "query LIKE 'LISTEN%'")) {
        if (!excluded.contains(pid)) fresh.insert(pid);
      }
      if (fresh.size() >= count || std::chrono::steady_clock::now() >= deadline) return fresh;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // pg_terminate_backend of every session of `dbname`; how many.
  int64_t TerminateSessions(internal::PgConn& admin, const std::string& dbname) {
    auto killed = admin.Exec(
        "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1",
        internal::Params().Text(dbname));
    EXPECT_TRUE(killed.has_value()) << (killed ? "" : killed.error().message);
    return killed ? killed->Int(0, 0) : 0;
  }

  std::string admin_;
  std::vector<std::string> databases_;
};

// The pool's notices_sent once it is non-zero, or 0 after `bound`. The
// notice sender counts a batch after PostgreSQL took it, so a waiter in
// another pool can be woken by that batch before the count moves.
inline uint64_t NoticesSentWithin(const PostgresPool& pool, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  uint64_t sent = pool.Stats().notices_sent;
  while (sent == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    sent = pool.Stats().notices_sent;
  }
  return sent;
}

}  // namespace stele::storage::postgres
