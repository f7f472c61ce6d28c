// Wake-ups of the PostgreSQL backend (docs/model.md §10,
// docs/postgres.md "Notifications"), in and across processes.
//
// Every write transaction collects its notices (new pending work, a new
// response, a finished execution); after it commits they are fanned out
// locally to the pool's own waiters at once, and sent to the other
// processes with pg_notify on channel `channel` by the pool's NoticeSender
// (notice_sender.h: coalesced, outside the write transactions — PostgreSQL
// serialises notifying commits). Each pool keeps one LISTEN connection
// (Listener) whose thread fans incoming notices out to its waiters.
//
// Notices are hints: a woken waiter re-queries the database. Every wait is
// also bounded by a poll interval, so a notice lost with a dropped listener
// connection costs at most one interval; after the listener reconnects it
// wakes every waiter once (whatever happened meanwhile is re-checked).
//
// A Waiter is registered before its owner checks the database, so a commit
// lands either before the check (and is seen) or after the registration
// (and wakes it).
//
// Threading: thread-safe. A Waiter is waited on by the thread that made it.
// Ownership: the Notifier holds shared_ptrs of registered waiters; a
// Registration unregisters on destruction.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/cancellation.h"
#include "base/time.h"
#include "storage/postgres/pg_conn.h"
#include "storage/watch_registry.h"

namespace stele::storage::postgres::internal {

// One notice. Keys: "f:<ffqn>" and "d:<digest hex>" (pending work; carry
// scheduled_at and the writer's current_time), "r:<execution id>" (new
// response), "x:<execution id>" (finished), "p:<execution id>" (a value
// published, docs/model.md §8.6).
struct Notice {
  std::string key;
  DateTime scheduled_at;
  DateTime current_time;
};

// pg_notify payload of a batch of notices and back ("key|sched|cur" lines).
std::string EncodeNotices(const std::vector<Notice>& notices);
std::vector<Notice> DecodeNotices(std::string_view payload);

enum class WaitEnd { kNotified, kTimeout, kCancelled, kClosed };

class Waiter {
 public:
  // Blocks until woken, closed, cancelled or `until`. A wake that arrived
  // before the call counts (and is consumed).
  WaitEnd Wait(std::chrono::steady_clock::time_point until);

 private:
  friend class Notifier;
  friend class Registration;
  Waiter(std::vector<std::string> keys, std::optional<DateTime> pending_at_or_sooner)
      : keys_(std::move(keys)), pending_at_or_sooner_(pending_at_or_sooner) {}
  void Wake(bool closed, bool cancelled);

  const std::vector<std::string> keys_;
  const std::optional<DateTime> pending_at_or_sooner_;  // pending waiters only
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;   // guarded by mu_
  bool closed_ = false;     // guarded by mu_
  bool cancelled_ = false;  // guarded by mu_
};

class Notifier {
 public:
  // Also fires the callback watches of "x:" / "p:" notices, after the
  // waiters and outside mu_.
  void Notify(const std::vector<Notice>& notices);
  // Wakes every registered waiter and fires every watch (after a listener
  // reconnect: notices may have been lost meanwhile).
  void WakeAll();
  // Releases every waiter (kClosed) now and every waiter registered later;
  // fires every watch.
  void Close();
  // Callback watches (DbConnection::WatchFinished / WatchPublish).
  WatchRegistry& watches() { return watches_; }

 private:
  friend class Registration;
  void Register(const std::shared_ptr<Waiter>& waiter);
  void Unregister(const std::shared_ptr<Waiter>& waiter);

  std::mutex mu_;
  bool closed_ = false;                                                         // guarded by mu_
  std::unordered_map<std::string, std::vector<std::shared_ptr<Waiter>>> keys_;  // guarded by mu_
  WatchRegistry watches_;
};

// A registered waiter for the scope of one wait call; also watches the
// wait's cancellation token.
class Registration {
 public:
  Registration(Notifier& notifier, std::vector<std::string> keys,
               std::optional<DateTime> pending_at_or_sooner,
               const std::optional<CancellationToken>& cancel);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  Waiter& waiter() { return *waiter_; }

 private:
  Notifier& notifier_;
  std::shared_ptr<Waiter> waiter_;
  std::optional<CancellationToken> cancel_;
  uint64_t cancel_id_ = 0;
};

// The LISTEN connection of one pool and its thread. Reconnects with a
// backoff while the server is unreachable.
//
// A LISTEN connection only reads, so a server that stops answering without
// closing it (a stopped backend, a partition: keepalives catch only the
// latter) would leave it waiting for notices forever while waiters trust
// it. So after `check_interval` without hearing from the server it sends
// its LISTEN again (a no-op for the server; it also keeps
// pg_stat_activity's `query` naming the LISTEN) and, without a reply
// within the reply timeout, drops the connection and reconnects. Whenever
// it goes down or comes back it wakes every waiter: they re-check the
// database and then poll at the rate that fits (Store::PollInterval).
class Listener {
 public:
  Listener(std::string conninfo, std::string channel, Notifier& notifier, PgTimeouts timeouts = {},
           std::chrono::milliseconds check_interval = std::chrono::seconds(10));
  ~Listener();  // stops the thread
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  void Stop();
  // Whether the LISTEN is live right now (waiters poll faster otherwise).
  bool healthy() const { return healthy_.load(); }

 private:
  void Run();
  // Connects and LISTENs; nullptr (logged) when that fails.
  std::unique_ptr<PgConn> Connect();
  std::string ListenStatement() const { return "LISTEN \"" + channel_ + "\""; }
  const std::string conninfo_;
  const std::string channel_;
  Notifier& notifier_;
  const PgTimeouts timeouts_;
  const std::chrono::milliseconds check_interval_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> healthy_{false};
  std::thread thread_;
};

}  // namespace stele::storage::postgres::internal
