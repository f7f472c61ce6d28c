#include "storage/postgres/store.h"

#include <cstdlib>

#include "base/clock.h"
#include "base/log.h"
#include "storage/postgres/schema.h"

namespace stele::storage::postgres::internal {

// --- Tx ---------------------------------------------------------------------

size_t Tx::Read(std::string sql, Params params) {
  const size_t ticket = results_.size();
  results_.emplace_back();
  queue_.push_back(Queued{Statement{std::move(sql), std::move(params)}, ticket, nullptr});
  return ticket;
}

void Tx::Write(std::string sql, Params params, ErrorMap on_error) {
  queue_.push_back(
      Queued{Statement{std::move(sql), std::move(params)}, std::nullopt, std::move(on_error)});
}

Result<const PgResult*, DbErrorGeneric> Tx::Get(size_t ticket) {
  if (failure_) return Unexpected(DbErrorGeneric::Uncategorized(failure_->ToString()));
  if (!results_.at(ticket)) STELE_TRY(Send({}, false));
  return &*results_[ticket];
}

Result<void, DbErrorGeneric> Tx::Send(std::vector<Statement> tail, bool commit) {
  std::vector<Statement> batch;
  batch.reserve(queue_.size() + tail.size() + 2);
  // A transaction that reads before it commits needs BEGIN: its row locks
  // must outlive the pipeline that took them.
  const bool begin = !begun_ && !commit;
  if (begin) batch.push_back(Statement{"BEGIN", Params()});
  const size_t first = batch.size();
  bool writes = false;
  for (Queued& queued : queue_) {
    writes = writes || !queued.ticket;
    batch.push_back(std::move(queued.statement));
  }
  const size_t queued_end = batch.size();
  writes = writes || !tail.empty();
  for (Statement& statement : tail) batch.push_back(std::move(statement));
  if (commit && begun_) batch.push_back(Statement{"COMMIT", Params()});
  std::vector<Queued> queue = std::move(queue_);
  queue_.clear();
  if (batch.empty()) return {};
  begun_ = begun_ || begin;

  auto results = conn_.ExecPipeline(batch);
  if (!results) {
    const PipelineError& failed = results.error();
    const PgError& error = failed.error;
    if (error.kind == PgError::Kind::kConnectionLost && !sent_writes_ && !writes) {
      retryable_ = true;
    }
    sent_writes_ = sent_writes_ || writes;
    const ErrorMap* on_error = nullptr;
    if (failed.index >= first && failed.index < queued_end) {
      on_error = &queue[failed.index - first].on_error;
    }
    if (on_error != nullptr && *on_error) {
      failure_ = (*on_error)(error);
    } else if (error.kind == PgError::Kind::kInvalidValue) {
      failure_ = DbErrorWriteNonRetriable::ValidationFailed(error.message);
    } else {
      failure_ = error.ToGeneric();
    }
    return Unexpected(error.ToGeneric());
  }
  sent_writes_ = sent_writes_ || writes;
  // Results come back for every statement, BEGIN and COMMIT included.
  for (size_t i = first; i < queued_end; ++i) {
    const Queued& queued = queue[i - first];
    if (queued.ticket) results_[*queued.ticket].emplace(std::move((*results)[i]));
  }
  return {};
}

Result<std::vector<PgResult>, DbErrorGeneric> SnapshotRead(PgConn& db,
                                                           std::vector<Statement> batch) {
  const size_t n = batch.size();
  batch.insert(batch.begin(),
               Statement{"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", Params()});
  batch.push_back(Statement{"COMMIT", Params()});
  auto results = db.ExecPipeline(batch);
  if (!results) {
    // A failure leaves the snapshot's transaction open (aborted).
    if (!db.IsBroken() && db.InTransaction()) (void)db.ExecScript("ROLLBACK");
    return Unexpected(results.error().error.ToGeneric());
  }
  std::vector<PgResult> out;
  out.reserve(n);
  for (size_t i = 1; i <= n; ++i) out.push_back(std::move((*results)[i]));
  return out;
}

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
  for (const auto& [name, value] :
       {std::pair{"statement_timeout", options.statement_timeout},
        std::pair{"connect_timeout", std::chrono::milliseconds(options.connect_timeout)},
        std::pair{"listener_check_interval", options.listener_check_interval},
        std::pair{"migration_timeout", options.migration_timeout}}) {
    if (value.count() <= 0) {
      return Unexpected(DbErrorGeneric::Uncategorized(std::string("PostgresOptions::") + name +
                                                      " must be positive"));
    }
  }
  for (char c : options.channel) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok || options.channel.empty() || options.channel.size() > 63) {
      return Unexpected(DbErrorGeneric::Uncategorized(
          "invalid notification channel `" + options.channel + "`: use [a-z0-9_], 1-63 chars"));
    }
  }
  std::shared_ptr<Store> store(new Store(options));
  auto conn = PgConn::Connect(options.conninfo, &store->counters_, "stele", store->Timeouts());
  if (!conn) return Unexpected(conn.error().ToGeneric());
  (*conn)->set_reply_timeout(options.migration_timeout);
  STELE_TRY(Migrate(**conn, SystemClock::Instance().Now()));
  (*conn)->set_reply_timeout(options.statement_timeout);
  store->open_connections_ = 1;
  store->idle_.push_back(std::move(*conn));
  store->listener_ = std::make_unique<Listener>(options.conninfo, options.channel, store->notifier_,
                                                store->Timeouts(), options.listener_check_interval);
  store->sender_ =
      std::make_unique<NoticeSender>(options.conninfo, options.channel, store->Timeouts());
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
      auto fresh = PgConn::Connect(options_.conninfo, &counters_, "stele", Timeouts());
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
      auto fresh = PgConn::Connect(options_.conninfo, &counters_, "stele", Timeouts());
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
  if (sender_ != nullptr) sender_->Stop();
  notifier_.Close();
  if (listener_ != nullptr) listener_->Stop();
}

PostgresPoolStats Store::Stats() {
  PostgresPoolStats stats;
  stats.round_trips = counters_.round_trips.load(std::memory_order_relaxed);
  stats.statements = counters_.statements.load(std::memory_order_relaxed);
  const ResponseBatcher::Stats responses = response_batcher_.GetStats();
  stats.response_groups = responses.groups;
  stats.grouped_responses = responses.grouped;
  stats.failed_response_groups = responses.failed_groups;
  if (sender_ != nullptr) {
    const NoticeSender::Stats notices = sender_->GetStats();
    stats.notice_batches = notices.batches;
    stats.notices_sent = notices.notices;
    stats.notices_dropped = notices.dropped;
  }
  std::lock_guard lock(mu_);
  stats.connections = open_connections_;
  return stats;
}

bool Store::IsClosed() {
  std::lock_guard lock(mu_);
  return closed_;
}

}  // namespace stele::storage::postgres::internal
