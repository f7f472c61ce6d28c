// The backends the conformance suite runs against: the only file of the
// suite that names concrete backends. Adding a backend is one entry below
// (plus its `if(TARGET ...)` block in CMakeLists.txt, which defines the
// STELE_CONFORMANCE_HAVE_<BACKEND> macro only when the backend is built).
//
// A backend that needs outside resources (PostgreSQL: a server named by the
// STELE_TEST_POSTGRES_* variables) returns nullptr from `open` when they
// are absent, and the test is skipped with `unavailable_reason`.
#include <memory>
#include <string>
#include <vector>

#include "storage/memory/memory_pool.h"
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

#ifdef STELE_CONFORMANCE_HAVE_SQLITE
#include "storage/sqlite/sqlite_pool.h"
#endif
#ifdef STELE_CONFORMANCE_HAVE_POSTGRES
#include "storage/postgres/test_database.h"
#endif

namespace stele::storage::conformance {

const std::vector<BackendFactory>& ConformanceBackends() {
  static const std::vector<BackendFactory>* backends = new std::vector<BackendFactory>{
      {"memory",
       [](const std::string& /*scratch_dir*/) -> std::unique_ptr<DbPool> {
         return memory::MemoryPool::Create();
       }},
#ifdef STELE_CONFORMANCE_HAVE_SQLITE
      {"sqlite",
       [](const std::string& scratch_dir) -> std::unique_ptr<DbPool> {
         sqlite::SqliteOptions options;
         options.path = scratch_dir + "/stele.sqlite";
         // Semantics do not depend on durability; skip the fsyncs.
         options.synchronous = sqlite::SqliteOptions::Synchronous::kNormal;
         return Must(sqlite::SqlitePool::Open(options));  // an error fails the test
       }},
#endif
#ifdef STELE_CONFORMANCE_HAVE_POSTGRES
      // A fresh schema per test (created and migrated in milliseconds,
      // dropped with the pool); the server comes from
      // STELE_TEST_POSTGRES_URL, set by scripts/with_postgres.sh. Without it
      // every test skips with the reason below (fails under
      // STELE_REQUIRE_POSTGRES_TESTS=1).
      {"postgres",
       [](const std::string& /*scratch_dir*/) -> std::unique_ptr<DbPool> {
         return Must(postgres::testing::OpenFreshPool());  // nullptr: unconfigured
       },
       [] { return postgres::testing::UnavailableReason(); },
       [] { return postgres::testing::PostgresTestsRequired(); }},
#endif
  };
  return *backends;
}

}  // namespace stele::storage::conformance
