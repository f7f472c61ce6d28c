#include "storage/sqlite/writer.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/log.h"
#include "base/thread_name.h"

namespace stele::storage::sqlite::internal {

Writer::Writer(std::unique_ptr<Connection> connection, const SqliteOptions& options,
               Notifier& notifier, Checkpointer* checkpointer)
    : connection_(std::move(connection)),
      notifier_(notifier),
      checkpointer_(checkpointer),
      capacity_(std::max<size_t>(options.queue_capacity, 1)),
      max_ops_per_transaction_(std::max<size_t>(options.max_ops_per_transaction, 1)),
      sync_commits_(options.synchronous == SqliteOptions::Synchronous::kFull),
      connection_synced_(sync_commits_) {
  answer_thread_ = std::thread([this] {
    NameThisThread("stele-answers");
    AnswerLoop();
  });
  thread_ = std::thread([this] {
    NameThisThread("stele-writer");
    Loop();
  });
}

Writer::~Writer() { Close(); }

Result<void, DbErrorGeneric> Writer::Submit(std::unique_ptr<WriteOp> op) {
  std::unique_lock lock(mu_);
  not_full_.wait(lock, [this] { return closing_ || queue_.size() < capacity_; });
  if (closing_) return Unexpected(DbErrorGeneric::Close());
  queue_.push_back(std::move(op));
  not_empty_.notify_one();
  return {};
}

void Writer::Close() {
  std::lock_guard close_lock(close_mu_);
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  not_empty_.notify_all();
  not_full_.notify_all();
  if (thread_.joinable()) thread_.join();
  connection_.reset();
  // The writer has handed over every answer; the answerer drains them.
  {
    std::lock_guard lock(answers_mu_);
    answers_closing_ = true;
  }
  answers_ready_.notify_all();
  if (answer_thread_.joinable()) answer_thread_.join();
}

void Writer::Answer(Answers answers) {
  {
    std::lock_guard lock(answers_mu_);
    answers_.push_back(std::move(answers));
  }
  answers_ready_.notify_one();
}

void Writer::AnswerLoop() {
  std::unique_lock lock(answers_mu_);
  while (true) {
    answers_ready_.wait(lock, [this] { return answers_closing_ || !answers_.empty(); });
    if (answers_.empty()) return;  // closing, and every answer delivered
    Answers answers = std::move(answers_.front());
    answers_.pop_front();
    lock.unlock();
    if (answers.error) {
      for (auto& op : answers.ops) op->Fail(*answers.error);
    } else {
      notifier_.Notify(answers.notes);
      for (auto& op : answers.ops) op->Complete();
    }
    answers.ops.clear();  // the ops die off the lock
    lock.lock();
  }
}

SqliteStats Writer::stats() const {
  SqliteStats stats;
  stats.transactions_committed = transactions_committed_.load();
  stats.transactions_failed = transactions_failed_.load();
  stats.ops_committed = ops_committed_.load();
  stats.ops_rolled_back = ops_rolled_back_.load();
  stats.max_ops_in_transaction = max_ops_in_transaction_.load();
  stats.unsynced_commits = unsynced_commits_.load();
  std::lock_guard lock(mu_);
  stats.queued_ops = queue_.size();
  return stats;
}

std::unique_ptr<WriteOp> Writer::TryPop(bool only_unsynced) {
  std::lock_guard lock(mu_);
  if (queue_.empty()) return nullptr;
  if (only_unsynced && queue_.front()->needs_sync()) return nullptr;
  std::unique_ptr<WriteOp> op = std::move(queue_.front());
  queue_.pop_front();
  not_full_.notify_one();
  return op;
}

void Writer::Loop() {
  while (true) {
    std::unique_ptr<WriteOp> first;
    {
      std::unique_lock lock(mu_);
      not_empty_.wait(lock, [this] { return closing_ || !queue_.empty(); });
      // Closing drains: every op accepted by Submit still runs.
      if (queue_.empty()) return;
      first = std::move(queue_.front());
      queue_.pop_front();
      not_full_.notify_one();
    }
    if (checkpointer_ != nullptr) checkpointer_->CheckpointInlineIfLarge(*connection_);
    RunTransaction(std::move(first));
  }
}

Result<void, DbErrorGeneric> Writer::SetSynced(bool synced) {
  if (synced == connection_synced_) return {};
  STELE_TRY(connection_->Exec(synced ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  connection_synced_ = synced;
  return {};
}

void Writer::RunTransaction(std::unique_ptr<WriteOp> first) {
  Connection& db = *connection_;
  std::vector<std::unique_ptr<WriteOp>> ops;
  std::vector<bool> kept;
  Notifications committed_notes;

  // Fails every op taken so far (their writes die with the transaction).
  auto fail_all = [&](const DbErrorGeneric& error) {
    if (db.InTransaction()) {
      if (auto rollback = db.Exec("ROLLBACK"); !rollback) {
        STELE_LOG(kError,
                  "ROLLBACK after a failed transaction failed: " << rollback.error().reason());
      }
    }
    transactions_failed_.fetch_add(1);
    STELE_LOG(kWarn,
              "write transaction of " << ops.size() << " operation(s) failed: " << error.reason());
    Answer(Answers{std::move(ops), {}, error});
  };

  // Transaction control runs through the statement cache: it is executed
  // several times per transaction.
  auto exec = [&db](std::string_view sql) -> Result<void, DbErrorGeneric> {
    STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(sql));
    return stmt.Run();
  };

  // Unsynced only when the first op allows it; later ops join only if
  // they allow it too (see "Unsynced lock commits" in writer.h).
  const bool synced = sync_commits_ && first->needs_sync();
  ops.push_back(std::move(first));
  if (sync_commits_) {
    if (auto level = SetSynced(synced); !level) {
      fail_all(level.error());
      return;
    }
  }
  if (auto begin = exec("BEGIN IMMEDIATE"); !begin) {
    fail_all(begin.error());
    return;
  }

  // Runs ops[index] inside its savepoint. False when the transaction as a
  // whole is lost (fail_all has then been called).
  auto run_one = [&](size_t index) -> bool {
    if (auto savepoint = exec("SAVEPOINT op"); !savepoint) {
      fail_all(savepoint.error());
      return false;
    }
    WriteContext context{db, {}};
    bool keep = ops[index]->Run(context);
    if (!db.InTransaction()) {
      // SQLite rolled the whole transaction back by itself (e.g. disk full
      // or an I/O error during a statement): every op's writes are gone.
      fail_all(DbErrorGeneric::Uncategorized(
          "the write transaction was rolled back underneath the writer (SQLite does this "
          "after I/O errors or a full disk); last SQLite error: " +
          db.LastError("").reason()));
      return false;
    }
    if (keep) {
      if (auto release = exec("RELEASE op"); !release) {
        fail_all(release.error());
        return false;
      }
      committed_notes.Append(std::move(context.notes));
    } else {
      auto rollback = exec("ROLLBACK TO op");
      auto release = rollback ? exec("RELEASE op") : rollback;
      if (!release) {
        fail_all(release.error());
        return false;
      }
    }
    kept.push_back(keep);
    return true;
  };

  if (!run_one(0)) return;
  while (ops.size() < max_ops_per_transaction_) {
    std::unique_ptr<WriteOp> next = TryPop(/*only_unsynced=*/sync_commits_ && !synced);
    if (!next) break;
    ops.push_back(std::move(next));
    if (!run_one(ops.size() - 1)) return;
  }

  if (auto commit = exec("COMMIT"); !commit) {
    fail_all(commit.error());
    return;
  }
  transactions_committed_.fetch_add(1);
  if (sync_commits_ && !synced) unsynced_commits_.fetch_add(1);
  uint64_t kept_count = static_cast<uint64_t>(std::count(kept.begin(), kept.end(), true));
  ops_committed_.fetch_add(kept_count);
  ops_rolled_back_.fetch_add(ops.size() - kept_count);
  uint64_t size = ops.size();
  uint64_t max = max_ops_in_transaction_.load();
  while (size > max && !max_ops_in_transaction_.compare_exchange_weak(max, size)) {
  }

  Answer(Answers{std::move(ops), std::move(committed_notes), std::nullopt});
}

}  // namespace stele::storage::sqlite::internal
