#include "storage/postgres/notice_sender.h"

#include <utility>

#include "base/log.h"

namespace stele::storage::postgres::internal {

namespace {

// Notices queued beyond this while the server is unreachable are dropped:
// they are hints, and an unbounded queue would only grow.
constexpr size_t kMaxQueued = 1 << 16;

}  // namespace

std::vector<Statement> NotifyStatements(const std::string& channel,
                                        const std::vector<Notice>& notices) {
  std::vector<Statement> statements;
  std::vector<Notice> chunk;
  size_t size = 0;
  auto flush = [&] {
    if (chunk.empty()) return;
    statements.push_back(
        Statement{"SELECT pg_notify($1, $2)", Params().Text(channel).Text(EncodeNotices(chunk))});
    chunk.clear();
    size = 0;
  };
  for (const Notice& notice : notices) {
    const size_t line = notice.key.size() + 48;
    if (size + line > 7000) flush();
    chunk.push_back(notice);
    size += line;
  }
  flush();
  return statements;
}

NoticeSender::NoticeSender(std::string conninfo, std::string channel, PgTimeouts timeouts)
    : conninfo_(std::move(conninfo)), channel_(std::move(channel)), timeouts_(timeouts) {
  thread_ = std::thread([this] { Run(); });
}

NoticeSender::~NoticeSender() { Stop(); }

void NoticeSender::Enqueue(const std::vector<Notice>& notices) {
  if (notices.empty()) return;
  {
    std::lock_guard lock(mu_);
    if (stop_ || queued_.size() + notices.size() > kMaxQueued) {
      stats_.dropped += notices.size();
      return;
    }
    queued_.insert(queued_.end(), notices.begin(), notices.end());
  }
  cv_.notify_one();
}

void NoticeSender::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

NoticeSender::Stats NoticeSender::GetStats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void NoticeSender::Run() {
  std::vector<Notice> batch;
  while (true) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queued_.empty(); });
      if (queued_.empty()) break;  // stopping, nothing left
      batch.clear();
      batch.swap(queued_);
    }
    const bool sent = Send(batch);
    std::lock_guard lock(mu_);
    if (sent) {
      ++stats_.batches;
      stats_.notices += batch.size();
    } else {
      stats_.dropped += batch.size();
    }
  }
  conn_.reset();
}

bool NoticeSender::Send(const std::vector<Notice>& notices) {
  if (conn_ != nullptr && conn_->IsBroken()) conn_.reset();
  if (conn_ == nullptr) {
    auto connected = PgConn::Connect(conninfo_, nullptr, "stele notices", timeouts_);
    if (!connected) {
      STELE_LOG(kDebug, "postgres notice sender: " << connected.error().message
                                                   << "; other processes poll meanwhile");
      return false;
    }
    conn_ = std::move(*connected);
  }
  // No BEGIN: the statements up to the pipeline's Sync are one implicit
  // transaction, one commit.
  auto sent = conn_->ExecPipeline(NotifyStatements(channel_, notices));
  if (!sent) {
    STELE_LOG(kWarn, "postgres notice sender: " << sent.error().error.message
                                                << "; other processes poll meanwhile");
    if (!conn_->IsBroken() && conn_->InTransaction()) (void)conn_->ExecScript("ROLLBACK");
    return false;
  }
  return true;
}

}  // namespace stele::storage::postgres::internal
