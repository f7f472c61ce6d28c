#include "storage/postgres/notifier.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <utility>

#include "base/log.h"

namespace stele::storage::postgres::internal {

std::string EncodeNotices(const std::vector<Notice>& notices) {
  std::string out;
  for (const Notice& notice : notices) {
    out += notice.key;
    out += '\x1f';
    out += std::to_string(ToMicros(notice.scheduled_at));
    out += '\x1f';
    out += std::to_string(ToMicros(notice.current_time));
    out += '\n';
  }
  return out;
}

std::vector<Notice> DecodeNotices(std::string_view payload) {
  std::vector<Notice> notices;
  while (!payload.empty()) {
    size_t end = payload.find('\n');
    std::string_view line = payload.substr(0, end);
    payload = end == std::string_view::npos ? std::string_view() : payload.substr(end + 1);
    size_t a = line.find('\x1f');
    size_t b = a == std::string_view::npos ? a : line.find('\x1f', a + 1);
    if (b == std::string_view::npos) continue;
    Notice notice;
    notice.key = std::string(line.substr(0, a));
    notice.scheduled_at = DateTimeFromMicros(
        std::strtoll(std::string(line.substr(a + 1, b - a - 1)).c_str(), nullptr, 10));
    notice.current_time =
        DateTimeFromMicros(std::strtoll(std::string(line.substr(b + 1)).c_str(), nullptr, 10));
    notices.push_back(std::move(notice));
  }
  return notices;
}

// --- Waiter -----------------------------------------------------------------

WaitEnd Waiter::Wait(std::chrono::steady_clock::time_point until) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, until, [this] { return notified_ || closed_ || cancelled_; });
  if (closed_) return WaitEnd::kClosed;
  if (cancelled_) return WaitEnd::kCancelled;
  if (notified_) {
    notified_ = false;
    return WaitEnd::kNotified;
  }
  return WaitEnd::kTimeout;
}

void Waiter::Wake(bool closed, bool cancelled) {
  std::lock_guard lock(mu_);
  notified_ = true;
  closed_ = closed_ || closed;
  cancelled_ = cancelled_ || cancelled;
  cv_.notify_all();
}

// --- Notifier ---------------------------------------------------------------

void Notifier::Notify(const std::vector<Notice>& notices) {
  std::vector<std::shared_ptr<Waiter>> woken;
  {
    std::lock_guard lock(mu_);
    for (const Notice& notice : notices) {
      auto it = keys_.find(notice.key);
      if (it == keys_.end()) continue;
      for (const auto& waiter : it->second) {
        // Pending work wakes only waiters for whom it is due (by their own
        // horizon or by the writer's clock).
        if (waiter->pending_at_or_sooner_ &&
            notice.scheduled_at > std::max(*waiter->pending_at_or_sooner_, notice.current_time)) {
          continue;
        }
        woken.push_back(waiter);
      }
    }
  }
  for (const auto& waiter : woken) waiter->Wake(false, false);
  for (const Notice& notice : notices) {
    std::string_view key = notice.key;
    if (key.starts_with("x:")) watches_.FireFinished(std::string(key.substr(2)));
    if (key.starts_with("p:")) watches_.FirePublished(std::string(key.substr(2)));
  }
}

void Notifier::WakeAll() {
  std::vector<std::shared_ptr<Waiter>> woken;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, waiters] : keys_) {
      woken.insert(woken.end(), waiters.begin(), waiters.end());
    }
  }
  for (const auto& waiter : woken) waiter->Wake(false, false);
  watches_.FireAll();
}

void Notifier::Close() {
  std::vector<std::shared_ptr<Waiter>> woken;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (const auto& [key, waiters] : keys_) {
      woken.insert(woken.end(), waiters.begin(), waiters.end());
    }
  }
  for (const auto& waiter : woken) waiter->Wake(true, false);
  watches_.Close();
}

void Notifier::Register(const std::shared_ptr<Waiter>& waiter) {
  bool closed = false;
  {
    std::lock_guard lock(mu_);
    closed = closed_;
    if (!closed) {
      for (const std::string& key : waiter->keys_) keys_[key].push_back(waiter);
    }
  }
  if (closed) waiter->Wake(true, false);
}

void Notifier::Unregister(const std::shared_ptr<Waiter>& waiter) {
  std::lock_guard lock(mu_);
  for (const std::string& key : waiter->keys_) {
    auto it = keys_.find(key);
    if (it == keys_.end()) continue;
    auto& list = it->second;
    list.erase(std::remove(list.begin(), list.end(), waiter), list.end());
    if (list.empty()) keys_.erase(it);
  }
}

Registration::Registration(Notifier& notifier, std::vector<std::string> keys,
                           std::optional<DateTime> pending_at_or_sooner,
                           const std::optional<CancellationToken>& cancel)
    : notifier_(notifier),
      waiter_(new Waiter(std::move(keys), pending_at_or_sooner)),
      cancel_(cancel) {
  notifier_.Register(waiter_);
  if (cancel_) {
    // The callback may run on another thread after this registration is
    // gone; it holds only a weak reference.
    std::weak_ptr<Waiter> weak = waiter_;
    cancel_id_ = cancel_->OnCancel([weak] {
      if (auto self = weak.lock()) self->Wake(false, true);
    });
  }
}

Registration::~Registration() {
  if (cancel_ && cancel_id_ != 0) cancel_->Unregister(cancel_id_);
  notifier_.Unregister(waiter_);
}

// --- Listener ---------------------------------------------------------------

Listener::Listener(std::string conninfo, std::string channel, Notifier& notifier,
                   PgTimeouts timeouts, std::chrono::milliseconds check_interval)
    : conninfo_(std::move(conninfo)),
      channel_(std::move(channel)),
      notifier_(notifier),
      timeouts_(timeouts),
      check_interval_(check_interval) {
  thread_ = std::thread([this] { Run(); });
}

Listener::~Listener() { Stop(); }

void Listener::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<PgConn> Listener::Connect() {
  auto connected = PgConn::Connect(conninfo_, nullptr, "stele listener", timeouts_);
  if (!connected) {
    STELE_LOG(kDebug, "postgres listener: " << connected.error().message);
    return nullptr;
  }
  auto listening = (*connected)->ExecScript(ListenStatement());
  if (!listening) {
    STELE_LOG(kWarn, "postgres listener: LISTEN failed: " << listening.error().message);
    return nullptr;
  }
  return std::move(*connected);
}

void Listener::Run() {
  using Clock = std::chrono::steady_clock;
  std::unique_ptr<PgConn> conn;
  auto backoff = std::chrono::milliseconds(50);
  Clock::time_point last_heard;                   // from the server
  std::optional<Clock::time_point> check_expiry;  // of the check in flight
  auto give_up = [&](const char* why) {
    STELE_LOG(kWarn, "postgres listener: " << why << "; reconnecting");
    conn.reset();
    check_expiry.reset();
    healthy_ = false;
    // Waiters sleeping on the healthy poll interval re-check now and then
    // poll faster until the listener is back.
    notifier_.WakeAll();
  };
  while (!stop_) {
    if (conn == nullptr) {
      conn = Connect();
      if (conn != nullptr) {
        healthy_ = true;
        backoff = std::chrono::milliseconds(50);
        last_heard = Clock::now();
        // Anything committed while we were not listening is re-checked.
        notifier_.WakeAll();
      } else {
        // Sleep in small steps so that Stop() stays prompt.
        for (auto slept = std::chrono::milliseconds(0); slept < backoff && !stop_;
             slept += std::chrono::milliseconds(20)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
        continue;
      }
    }
    pg_conn* raw = conn->raw();
    // Flush what a check left unsent (the socket is non-blocking).
    const bool unsent = PQflush(raw) == 1;
    pollfd fd{PQsocket(raw), static_cast<short>(POLLIN | (unsent ? POLLOUT : 0)), 0};
    // Bounded so that Stop() is noticed within 50 ms.
    const int ready = ::poll(&fd, 1, 50);
    if (ready < 0 && errno != EINTR) {
      give_up("poll on the LISTEN connection failed");
      continue;
    }
    if (ready > 0 && (fd.revents & ~POLLOUT) != 0) {
      if (PQconsumeInput(raw) == 0 || PQstatus(raw) != CONNECTION_OK) {
        give_up("connection lost");
        continue;
      }
      last_heard = Clock::now();
    }
    // The check's reply, read only as far as it has arrived (PQgetResult
    // would wait for the rest).
    if (check_expiry) {
      bool done = false;
      bool failed = false;
      while (PQisBusy(raw) == 0) {
        PGresult* res = PQgetResult(raw);
        if (res == nullptr) {
          done = true;
          break;
        }
        failed = failed || PQresultStatus(res) != PGRES_COMMAND_OK;
        PQclear(res);
      }
      if (failed) {
        give_up("LISTEN failed");
        continue;
      }
      if (done) check_expiry.reset();
    }
    std::vector<Notice> notices;
    while (PGnotify* notify = PQnotifies(raw)) {
      auto decoded = DecodeNotices(notify->extra != nullptr ? notify->extra : "");
      std::move(decoded.begin(), decoded.end(), std::back_inserter(notices));
      PQfreemem(notify);
    }
    if (!notices.empty()) notifier_.Notify(notices);
    const auto now = Clock::now();
    if (check_expiry && now >= *check_expiry) {
      give_up("no reply from PostgreSQL within the statement timeout");
      continue;
    }
    if (!check_expiry && now - last_heard >= check_interval_) {
      if (PQsendQuery(raw, ListenStatement().c_str()) != 1) {
        give_up("sending to PostgreSQL failed");
        continue;
      }
      check_expiry = now + timeouts_.reply;
    }
  }
  healthy_ = false;
}

}  // namespace stele::storage::postgres::internal
