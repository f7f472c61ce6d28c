// Throw-away databases for tests of the PostgreSQL backend (conformance,
// differential and unit tests).
//
// The server comes from STELE_TEST_POSTGRES_URL: a libpq connection string
// or URI of a role allowed to CREATE DATABASE (scripts/with_postgres.sh
// starts a throw-away cluster and sets it). Without it, tests skip with
// UnavailableReason() — or fail, under STELE_REQUIRE_POSTGRES_TESTS=1
// (STELE_POSTGRES_TEST_UNAVAILABLE below), so that a CI stage meant to run
// them cannot pass with every PostgreSQL test silently skipped.
//
// Speed: a fresh pool gets a fresh *schema* in the server's database
// (search_path set through the connection's options, its own NOTIFY
// channel), created and migrated in milliseconds and dropped with the
// pool; a fresh database (CREATE DATABASE, a file copy plus checkpoint
// work: about a second on a loaded machine) is kept for tests that need
// one, e.g. migrations. CreateFreshDatabase copies a migrated template.
//
// Threading: thread-safe. Ownership: a pool from OpenFreshPool drops its
// schema when destroyed; the template database is dropped at process exit.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "storage/db_errors.h"
#include "storage/db_pool.h"
#include "storage/postgres/postgres_pool.h"

namespace stele::storage::postgres::testing {

// STELE_TEST_POSTGRES_URL, if set and non-empty.
std::optional<std::string> AdminConninfo();
// Why tests are skipped when AdminConninfo() is nullopt.
std::string UnavailableReason();
// STELE_REQUIRE_POSTGRES_TESTS=1: a PostgreSQL test that cannot run (no
// server, or something else it needs) fails instead of skipping.
bool PostgresTestsRequired();

// `conninfo` with its database name replaced by `dbname`.
Result<std::string, DbErrorGeneric> WithDatabase(const std::string& conninfo,
                                                 const std::string& dbname);

// A fresh, migrated, empty database; returns its name.
// REQUIRES: AdminConninfo().
Result<std::string, DbErrorGeneric> CreateFreshDatabase();
// Drops it (terminating remaining sessions).
void DropDatabase(const std::string& dbname);

// `conninfo` with search_path set to `schema` (libpq `options`).
Result<std::string, DbErrorGeneric> WithSearchPath(const std::string& conninfo,
                                                   const std::string& schema);
void DropSchema(const std::string& schema);

// A PostgresPool on a fresh schema (options.conninfo and options.channel
// are replaced); the pool drops the schema when destroyed. nullptr when no server is
// configured; an error when the server fails.
Result<std::unique_ptr<DbPool>, DbErrorGeneric> OpenFreshPool(PostgresOptions options = {});

}  // namespace stele::storage::postgres::testing

// Ends the current gtest test (or its SetUp) because a PostgreSQL test
// cannot run here, for `reason` (streamable): skipped, or failed when
// PostgresTestsRequired(). For use in test code, which includes gtest.
#define STELE_POSTGRES_TEST_UNAVAILABLE(reason)                                           \
  do {                                                                                    \
    if (::stele::storage::postgres::testing::PostgresTestsRequired()) {                   \
      GTEST_FAIL() << reason                                                              \
                   << " [STELE_REQUIRE_POSTGRES_TESTS=1: the PostgreSQL tests must run, " \
                      "not skip]";                                                        \
    }                                                                                     \
    GTEST_SKIP() << reason;                                                               \
  } while (false)
