#include "storage/postgres/store.h"

#include <cstdlib>

#include "base/clock.h"
#include "base/log.h"
#include "storage/postgres/schema.h"

namespace stele::storage::postgres::internal {

Result<std::shared_ptr<Store>, DbErrorGeneric> Store::Open(const PostgresOptions& given) {
  PostgresOptions options = given;
  if (options.conninfo.empty()) {
    const char* env = std::getenv("STELE_POSTGRES_URL");
    if (env == nullptr || *env == '\0') {
      return Unexpected(DbErrorGeneric::Uncategorized(
          "no PostgreSQL connection string: set PostgresOptions::conninfo or STELE_POSTGRES_URL"));
    }
    options.conninfo = env;
  }
  if (options.max_connections == 0) options.max_connections = 1;
  for (char c : options.channel) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok || options.channel.empty() || options.channel.size() > 63) {
      return Unexpected(DbErrorGeneric::Uncategorized(
          "invalid notification channel `" + options.channel + "`: use [a-z0-9_], 1-63 chars"));
    }
  }
  auto conn = PgConn::Connect(options.conninfo);
  if (!conn) return Unexpected(conn.error().ToGeneric());
  STELE_TRY(Migrate(**conn, SystemClock::Instance().Now()));
  std::shared_ptr<Store> store(new Store(options));
  store->open_connections_ = 1;
  store->idle_.push_back(std::move(*conn));
  store->listener_ =
      std::make_unique<Listener>(options.conninfo, options.channel, store->notifier_);
  return store;
}

Store::~Store() { Close(); }

std::chrono::milliseconds Store::PollInterval() const {
  if (listener_ != nullptr && listener_->healthy()) return options_.poll_interval;
  return std::max(std::chrono::milliseconds(10), options_.poll_interval / 5);
}

Result<Store::Lease, DbErrorGeneric> Store::Acquire() {
  std::unique_lock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + options_.acquire_timeout;
  while (true) {
    if (closed_) return Unexpected(DbErrorGeneric::Close());
    if (!idle_.empty()) {
      std::unique_ptr<PgConn> conn = std::move(idle_.back());
      idle_.pop_back();
      lock.unlock();
      // Killed while idle (server restart, pg_terminate_backend): replace.
      if (!conn->IsBroken()) return Lease(this, std::move(conn));
      conn.reset();
      auto fresh = PgConn::Connect(options_.conninfo);
      if (!fresh) {
        lock.lock();
        --open_connections_;
        cv_.notify_one();
        return Unexpected(fresh.error().ToGeneric());
      }
      return Lease(this, std::move(*fresh));
    }
    if (open_connections_ < options_.max_connections) {
      ++open_connections_;
      lock.unlock();
      auto fresh = PgConn::Connect(options_.conninfo);
      if (!fresh) {
        lock.lock();
        --open_connections_;
        cv_.notify_one();
        return Unexpected(fresh.error().ToGeneric());
      }
      return Lease(this, std::move(*fresh));
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_connections_ >= options_.max_connections && !closed_) {
      return Unexpected(DbErrorGeneric::Uncategorized(
          "no PostgreSQL connection free within the acquire timeout (pool of " +
          std::to_string(options_.max_connections) + ")"));
    }
  }
}

void Store::Release(std::unique_ptr<PgConn> conn) {
  std::unique_ptr<PgConn> dropped;
  {
    std::lock_guard lock(mu_);
    if (closed_ || conn->IsBroken()) {
      dropped = std::move(conn);
      --open_connections_;
    } else {
      idle_.push_back(std::move(conn));
    }
  }
  cv_.notify_one();
}

Store::Lease::~Lease() {
  if (conn_ != nullptr) store_->Release(std::move(conn_));
}

Result<void, DbErrorGeneric> Store::SendNotices(PgConn& conn, const std::vector<Notice>& notices) {
  // Usually one pg_notify per transaction; a payload is limited to 8000
  // bytes, so large batches are split.
  std::vector<Notice> chunk;
  size_t size = 0;
  auto flush = [&]() -> Result<void, DbErrorGeneric> {
    if (chunk.empty()) return {};
    auto sent = conn.Exec("SELECT pg_notify($1, $2)",
                          Params().Text(options_.channel).Text(EncodeNotices(chunk)));
    chunk.clear();
    size = 0;
    if (!sent) return Unexpected(sent.error().ToGeneric());
    return {};
  };
  for (const Notice& notice : notices) {
    const size_t line = notice.key.size() + 48;
    if (size + line > 7000) STELE_TRY(flush());
    chunk.push_back(notice);
    size += line;
  }
  return flush();
}

void Store::Close() {
  std::vector<std::unique_ptr<PgConn>> idle;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    idle.swap(idle_);
    open_connections_ -= idle.size();
  }
  cv_.notify_all();
  notifier_.Close();
  if (listener_ != nullptr) listener_->Stop();
}

bool Store::IsClosed() {
  std::lock_guard lock(mu_);
  return closed_;
}

}  // namespace stele::storage::postgres::internal
