// A PostgreSQL server that stops answering without closing its connections
// (a stopped process, a network partition) must not hang a caller: every
// wait on the server is bounded (pg_conn.h, PostgresOptions::
// statement_timeout), a timed-out statement is cancelled and its connection
// dropped, and the pool, and its listener, carry on with new connections.
//
// "Stops answering" is made real two ways, both on this test's own
// sessions only (other tests may share the cluster):
//   - a statement that waits: pg_sleep, or a row lock held by another
//     session — the server is alive, the statement just does not finish;
//   - SIGSTOP of the backend process serving one of the pool's connections
//     (found in pg_stat_activity by the name the pool gives it): its kernel
//     still acknowledges every packet, so TCP keepalives see nothing and
//     only the reply timeout can tell. A StoppedBackend is always resumed —
//     when it goes out of scope, and by a watchdog process should this
//     test process die first.
//
// No assertion is on how long anything took beyond a generous upper bound
// (a call returns at all, and long before its deadline would have).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "storage/differential/postgres_test_fixture.h"
#include "storage/postgres/pg_conn.h"
#include "storage/postgres/postgres_pool.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::postgres {
namespace {

using conformance::CreateLocked;
using conformance::CreateReq;
using conformance::FinishedReq;
using conformance::kT0;
using conformance::Must;
using conformance::NewId;
using conformance::OkResult;
using conformance::Runner;
using internal::Params;
using internal::PgConn;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A call facing a silent server must return within this (its reply
// timeout is 1-2 s here): generous for a loaded 2-core machine, and far
// below the waits that a missing bound would sit out (forever, or a
// wait's deadline).
constexpr auto kCallBound = 60s;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// SIGSTOPs one backend process of the test cluster while it lives.
class StoppedBackend {
 public:
  // Why `pid` cannot be stopped from here, if it cannot: it must be a local
  // PostgreSQL backend serving database `dbname` (its process title says
  // so), and ours to signal.
  static std::optional<std::string> CannotStop(int64_t pid, const std::string& dbname) {
    const std::string proc = "/proc/" + std::to_string(pid);
    const std::string comm = ReadFile(proc + "/comm");
    const std::string cmdline = ReadFile(proc + "/cmdline");
    if (comm != "postgres\n" || cmdline.find(" " + dbname + " ") == std::string::npos) {
      return "backend " + std::to_string(pid) +
             " is not a local process of this server (is the server on another machine?)";
    }
    if (::kill(static_cast<pid_t>(pid), 0) != 0) {
      return "cannot signal backend " + std::to_string(pid) + " (not root, nor the server's user)";
    }
    return std::nullopt;
  }

  explicit StoppedBackend(int64_t pid) : pid_(static_cast<pid_t>(pid)) {
    // The watchdog resumes the backend even if this process dies with it
    // stopped: a stopped backend keeps its locks and would stall the
    // cluster's shutdown. The child only sleeps and signals
    // (async-signal-safe, as a fork of a threaded process requires).
    watchdog_ = ::fork();
    if (watchdog_ == 0) {
      timespec left{120, 0};
      while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
      }
      ::kill(pid_, SIGCONT);
      ::_exit(0);
    }
    stopped_ = ::kill(pid_, SIGSTOP) == 0;
    EXPECT_TRUE(stopped_) << "SIGSTOP " << pid_ << ": " << std::strerror(errno);
  }
  ~StoppedBackend() {
    Resume();
    if (watchdog_ > 0) {
      ::kill(watchdog_, SIGKILL);
      ::waitpid(watchdog_, nullptr, 0);
    }
  }
  StoppedBackend(const StoppedBackend&) = delete;
  StoppedBackend& operator=(const StoppedBackend&) = delete;

  void Resume() {
    if (stopped_) ::kill(pid_, SIGCONT);
    stopped_ = false;
  }

 private:
  pid_t pid_;
  pid_t watchdog_ = -1;
  bool stopped_ = false;
};

class PostgresTimeoutTest : public PostgresPoolTest {
 protected:
  // The one session of `dbname` named `application_name` that is idle
  // (waits up to 30 s for it to be); -1 if there is none or several.
  int64_t TheIdleSession(internal::PgConn& admin, const std::string& dbname,
                         const std::string& condition) {
    for (auto limit = Clock::now() + 30s; Clock::now() < limit;) {
      const std::set<int64_t> pids = IdleSessions(admin, dbname, condition);
      if (pids.size() == 1) return *pids.begin();
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "no single idle session of " << dbname << " with " << condition;
    return -1;
  }
  // Waits (bounded) until no session of `dbname` matches `condition`.
  bool AwaitNoSession(internal::PgConn& admin, const std::string& dbname,
                      const std::string& condition) {
    for (auto limit = Clock::now() + 30s; Clock::now() < limit;) {
      auto res = admin.Exec(
          "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1 AND (" + condition + ")",
          Params().Text(dbname));
      if (res && res->Int(0, 0) == 0) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
};

void ExpectTimeoutError(const DbErrorGeneric& error, const char* call) {
  EXPECT_EQ(error.kind(), DbErrorGeneric::Kind::kUncategorized) << call;
  EXPECT_NE(error.reason().find("within the statement timeout"), std::string::npos)
      << call << ": the error does not name the timeout: " << error.ToString();
}

// Like conformance::Must, for a connection of our own.
std::unique_ptr<PgConn> MustConnect(const std::string& conninfo, const char* name,
                                    internal::PgTimeouts timeouts = {}) {
  auto conn = PgConn::Connect(conninfo, nullptr, name, timeouts);
  if (!conn) throw std::runtime_error("cannot connect: " + conn.error().message);
  return std::move(*conn);
}

int SocketOption(int socket, int level, int name) {
  int value = -1;
  socklen_t size = sizeof(value);
  EXPECT_EQ(::getsockopt(socket, level, name, &value, &size), 0) << std::strerror(errno);
  return value;
}

std::string ConninfoValue(PgConn& conn, const std::string& key) {
  std::string value;
  PQconninfoOption* options = PQconninfo(conn.raw());
  for (PQconninfoOption* o = options; o != nullptr && o->keyword != nullptr; ++o) {
    if (key == o->keyword && o->val != nullptr) value = o->val;
  }
  PQconninfoFree(options);
  return value;
}

// Connections get TCP keepalives, tcp_user_timeout and a connect timeout
// — as set on the socket, not just asked for — unless the connection
// string sets its own, which win.
TEST_F(PostgresTimeoutTest, KeepalivesAndConnectTimeoutAreDefaultsTheConninfoOverrides) {
  auto conn = MustConnect(admin_, "stele", {.reply = 30s, .connect = 7s});
  const int socket = PQsocket(conn->raw());
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  ASSERT_EQ(::getsockname(socket, reinterpret_cast<sockaddr*>(&address), &size), 0);
  if (address.ss_family != AF_INET && address.ss_family != AF_INET6) {
    GTEST_SKIP() << "the test server is reached over a Unix socket: no TCP options to check";
  }
  EXPECT_EQ(SocketOption(socket, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(SocketOption(socket, IPPROTO_TCP, TCP_KEEPIDLE), 30);
  EXPECT_EQ(SocketOption(socket, IPPROTO_TCP, TCP_KEEPINTVL), 10);
  EXPECT_EQ(SocketOption(socket, IPPROTO_TCP, TCP_KEEPCNT), 3);
  EXPECT_EQ(SocketOption(socket, IPPROTO_TCP, TCP_USER_TIMEOUT), 30000);
  if (std::getenv("PGCONNECT_TIMEOUT") == nullptr) {
    EXPECT_EQ(ConninfoValue(*conn, "connect_timeout"), "7");
  }

  auto own =
      MustConnect(admin_ + " keepalives_idle=77 tcp_user_timeout=4321 connect_timeout=3", "stele");
  const int own_socket = PQsocket(own->raw());
  EXPECT_EQ(SocketOption(own_socket, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(SocketOption(own_socket, IPPROTO_TCP, TCP_KEEPIDLE), 77);
  EXPECT_EQ(SocketOption(own_socket, IPPROTO_TCP, TCP_KEEPCNT), 3);  // the default stays
  EXPECT_EQ(SocketOption(own_socket, IPPROTO_TCP, TCP_USER_TIMEOUT), 4321);
  EXPECT_EQ(ConninfoValue(*own, "connect_timeout"), "3");

  auto off = MustConnect(admin_ + " keepalives=0", "stele");
  EXPECT_EQ(SocketOption(PQsocket(off->raw()), SOL_SOCKET, SO_KEEPALIVE), 0);
}

// A statement the server does not finish in time: the call returns with
// kTimeout, the connection is given up, and the statement is cancelled on
// the server (a closed socket alone would not stop it: the server notices
// only when it next talks to the client). For scripts and pipelines both.
TEST_F(PostgresTimeoutTest, AStatementPastTheReplyTimeoutFailsAndIsCancelled) {
  auto admin = Admin();
  ASSERT_NE(admin, nullptr);
  auto current = admin->Exec("SELECT current_database()");
  ASSERT_TRUE(current.has_value());
  const std::string dbname = current->Str(0, 0);
  for (const bool pipeline : {false, true}) {
    SCOPED_TRACE(pipeline ? "pipeline" : "script");
    const std::string name = pipeline ? "stele_timeout_pipeline" : "stele_timeout_script";
    auto conn = MustConnect(admin_, name.c_str(), {.reply = 1s});
    const auto start = Clock::now();
    std::optional<internal::PgError> error;
    if (pipeline) {
      auto res = conn->Exec("SELECT pg_sleep(600)");
      if (!res) error = res.error();
    } else {
      auto res = conn->ExecScript("SELECT pg_sleep(600)");
      if (!res) error = res.error();
    }
    EXPECT_LT(Clock::now() - start, kCallBound);
    ASSERT_TRUE(error.has_value()) << "a 10 min sleep finished within the 1 s reply timeout";
    EXPECT_EQ(error->kind, internal::PgError::Kind::kTimeout) << error->message;
    ExpectTimeoutError(error->ToGeneric(), "sleep");
    EXPECT_TRUE(conn->TimedOut());
    EXPECT_TRUE(conn->IsBroken());
    // `conn` is still open: only the cancel request can end the sleep.
    EXPECT_TRUE(
        AwaitNoSession(*admin, dbname, "application_name = '" + name + "' AND state = 'active'"))
        << "the sleep was not cancelled";
  }
}

// A write blocked in the server (on a row lock another session holds)
// fails with a clear error within the bound, is cancelled, and the pool
// goes on: retried with the same version, as the contract's callers do,
// the write succeeds — the timed-out attempt was still reading under
// its lock, so it cannot have committed.
TEST_F(PostgresTimeoutTest, AWriteBlockedOnALockTimesOutAndIsCancelled) {
  const std::string conninfo = EmptyDatabase();
  const std::string dbname = databases_.back();
  auto pool = Must(PostgresPool::Open(
      PostgresOptions{.conninfo = conninfo, .max_connections = 2, .statement_timeout = 1s}));
  auto db = Must(pool->ConnectionTest());
  const ExecutionId id = NewId();
  const Version v = CreateLocked(*db, id, kT0, Runner::New(), kT0 + 1h);

  auto blocker = MustConnect(conninfo, "stele_test_blocker");
  ASSERT_TRUE(blocker->ExecScript("BEGIN"));
  ASSERT_TRUE(blocker->Exec("SELECT 1 FROM t_state WHERE execution_id = $1 FOR UPDATE",
                            Params().Text(id.ToString())));

  const auto start = Clock::now();
  auto appended = db->Append(id, v, FinishedReq(kT0 + 1s, OkResult()));
  EXPECT_LT(Clock::now() - start, kCallBound);
  ASSERT_FALSE(appended.has_value()) << "the append went through a held row lock";
  ASSERT_EQ(appended.error().kind(), DbErrorWrite::Kind::kGeneric) << appended.error().ToString();
  ExpectTimeoutError(appended.error().generic(), "Append");

  // Cancelled: no session of the pool waits for the lock any more, while
  // the blocker still holds it.
  auto admin = Admin();
  ASSERT_NE(admin, nullptr);
  EXPECT_TRUE(AwaitNoSession(*admin, dbname, "wait_event_type = 'Lock'"))
      << "the timed-out statement still waits in the server";
  ASSERT_TRUE(blocker->ExecScript("ROLLBACK"));

  // The caller's retry, same version.
  auto retried = db->Append(id, v, FinishedReq(kT0 + 1s, OkResult()));
  ASSERT_TRUE(retried.has_value()) << retried.error().ToString();
  EXPECT_TRUE(db->WaitForFinishedResult(id, WaitOptions::For(10s)).has_value());
  EXPECT_LE(pool->Stats().connections, 2u);
}

// The backend serving the pool's only connection is stopped (SIGSTOP). A
// write on it fails within the bound with an error naming the timeout;
// the pool, its old connection dropped, serves the next calls on a new
// one at once, while the old backend is still stopped. The timed-out
// write's outcome is unknown (the stopped backend has it in its socket
// and may run it when resumed): after resuming it, the caller's retry
// finds it either done (IllegalState: the id exists) or not (the retry
// creates it) — never twice, never lost. Nothing acknowledged is lost.
TEST_F(PostgresTimeoutTest, AStoppedBackendFailsItsCallAndThePoolGoesOn) {
  const std::string conninfo = EmptyDatabase();
  const std::string dbname = databases_.back();
  auto pool = Must(PostgresPool::Open(PostgresOptions{
      .conninfo = conninfo, .max_connections = 1, .acquire_timeout = 5s, .statement_timeout = 2s}));
  auto db = Must(pool->ConnectionTest());
  auto admin = Admin();
  ASSERT_NE(admin, nullptr);
  std::vector<ExecutionId> acknowledged;
  for (int i = 0; i < 5; ++i) {
    acknowledged.push_back(NewId());
    Must(db->Create(CreateReq(acknowledged.back(), kT0)));
  }
  const ExecutionId running = NewId();
  const Version running_version = CreateLocked(*db, running, kT0, Runner::New(), kT0 + 1h);

  const int64_t pid = TheIdleSession(*admin, dbname, "application_name = 'stele'");
  ASSERT_GT(pid, 0);
  if (auto why = StoppedBackend::CannotStop(pid, dbname)) STELE_POSTGRES_TEST_UNAVAILABLE(*why);
  std::optional<StoppedBackend> stopped;
  stopped.emplace(pid);

  const ExecutionId unknown = NewId();
  const auto start = Clock::now();
  auto created = db->Create(CreateReq(unknown, kT0));
  EXPECT_LT(Clock::now() - start, kCallBound);
  ASSERT_FALSE(created.has_value()) << "a stopped backend answered";
  ASSERT_EQ(created.error().kind(), DbErrorWrite::Kind::kGeneric) << created.error().ToString();
  ExpectTimeoutError(created.error().generic(), "Create");

  // The pool goes on, on a new connection, the old backend still stopped.
  auto read = db->Get(acknowledged.front());
  EXPECT_TRUE(read.has_value()) << read.error().ToString();
  acknowledged.push_back(NewId());
  auto after = db->Create(CreateReq(acknowledged.back(), kT0));
  ASSERT_TRUE(after.has_value()) << after.error().ToString();
  auto finished = db->Append(running, running_version, FinishedReq(kT0 + 1s, OkResult()));
  ASSERT_TRUE(finished.has_value()) << finished.error().ToString();

  // Resumed, the old backend finds its client gone and exits.
  stopped.reset();
  EXPECT_TRUE(AwaitNoSession(*admin, dbname, "pid = " + std::to_string(pid)))
      << "the resumed backend did not exit";

  // The timed-out create: done exactly once, after the caller's retry.
  const bool committed_late = db->GetPendingState(unknown).has_value();
  auto retried = db->Create(CreateReq(unknown, kT0));
  if (committed_late) {
    ASSERT_FALSE(retried.has_value()) << "created twice";
    EXPECT_TRUE(retried.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kIllegalState))
        << retried.error().ToString();
  } else {
    ASSERT_TRUE(retried.has_value()) << retried.error().ToString();
  }
  auto log = Must(db->Get(unknown));
  EXPECT_EQ(log.events.size(), 1u);
  std::cout << "the timed-out create " << (committed_late ? "had" : "had not")
            << " committed when its backend resumed\n";

  // Nothing acknowledged is lost, as another process sees it.
  auto fresh = Must(PostgresPool::Open(PostgresOptions{.conninfo = conninfo}));
  auto check = Must(fresh->ConnectionTest());
  for (const ExecutionId& id : acknowledged) {
    EXPECT_TRUE(check->GetPendingState(id).has_value()) << id.ToString() << " is lost";
  }
  EXPECT_TRUE(check->WaitForFinishedResult(running, WaitOptions::For(10s)).has_value());
}

// The backend of a pool's LISTEN connection is stopped: the listener's
// check gets no reply, it reconnects, and a waiter of that pool is still
// woken by another pool's write — with polling so slow (10 min, 2 min
// while the listener is down) that within the 90 s wait only the
// listener can do it. Checked to fail with listener_check_interval 1 h.
TEST_F(PostgresTimeoutTest, AListenerWhoseBackendStopsIsReplacedAndWaitersStillWake) {
  const std::string conninfo = EmptyDatabase();
  const std::string dbname = databases_.back();
  constexpr const char* kWaiterName = "stele_test_waiter";
  auto waiter_pool = Must(
      PostgresPool::Open(PostgresOptions{.conninfo = conninfo + " application_name=" + kWaiterName,
                                         .poll_interval = 600s,
                                         .statement_timeout = 2s,
                                         .listener_check_interval = 1s}));
  auto writer_pool = Must(PostgresPool::Open(PostgresOptions{.conninfo = conninfo}));
  auto waiter = Must(waiter_pool->Connection());
  auto writer = Must(writer_pool->Connection());
  auto admin = Admin();
  ASSERT_NE(admin, nullptr);
  const ExecutionId id = NewId();
  const Version v = CreateLocked(*writer, id, kT0, Runner::New(), kT0 + 1h);

  const std::string listener_condition =
      std::string("application_name = '") + kWaiterName + "' AND query LIKE 'LISTEN%'";
  const int64_t pid = TheIdleSession(*admin, dbname, listener_condition);
  ASSERT_GT(pid, 0);
  if (auto why = StoppedBackend::CannotStop(pid, dbname)) STELE_POSTGRES_TEST_UNAVAILABLE(*why);
  StoppedBackend stopped(pid);

  // The wait starts; once it has checked the database (a session of the
  // waiter pool other than a listener went idle after it began), the
  // writer finishes the execution.
  auto began = admin->Exec("SELECT clock_timestamp()::text");
  ASSERT_TRUE(began.has_value());
  const std::string since = began->Str(0, 0);
  std::optional<Result<core::SupportedFunctionReturnValue, DbErrorReadWithTimeout>> result;
  Clock::duration waited{};
  std::thread waiting([&] {
    const auto start = Clock::now();
    result.emplace(waiter->WaitForFinishedResult(id, WaitOptions::For(90s)));
    waited = Clock::now() - start;
  });
  bool checked = false;
  for (auto limit = Clock::now() + 30s; !checked && Clock::now() < limit;) {
    auto res = admin->Exec(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 "
        "AND state = 'idle' AND query NOT LIKE 'LISTEN%' AND state_change > $3::timestamptz",
        Params().Text(dbname).Text(kWaiterName).Text(since));
    checked = res.has_value() && res->Int(0, 0) > 0;
    if (!checked) std::this_thread::sleep_for(2ms);
  }
  EXPECT_TRUE(checked) << "the wait did not check the database within 30 s";
  Must(writer->Append(id, v, FinishedReq(kT0 + 1s, OkResult())));
  waiting.join();
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->has_value()) << "the waiter was not woken: " << result->error().ToString();
  EXPECT_LT(waited, 90s) << "the wait ran to its deadline";

  // A new LISTEN session of the waiter pool replaced the stopped one.
  std::set<int64_t> fresh;
  for (auto limit = Clock::now() + 30s; fresh.empty() && Clock::now() < limit;) {
    fresh = IdleSessions(*admin, dbname, listener_condition + " AND pid <> " + std::to_string(pid));
    if (fresh.empty()) std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(fresh.size(), 1u) << "the listener did not reconnect";
  stopped.Resume();
  EXPECT_TRUE(AwaitNoSession(*admin, dbname, "pid = " + std::to_string(pid)))
      << "the resumed listener backend did not exit";
}

}  // namespace
}  // namespace stele::storage::postgres
