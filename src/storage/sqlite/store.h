// Store: the internals one SqlitePool shares with all its connections — the
// writer thread, the read pool and the notifier — and the two ways to run
// work: Write (a logical operation on the writer, group-committed) and Read
// (one snapshot on a read connection).
//
// Threading: thread-safe. Ownership: held by shared_ptr by the pool and by
// every connection, so a connection outliving its pool stays memory-safe
// (its calls fail with Close).
#pragma once

#include <atomic>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "base/result.h"
#include "storage/db_errors.h"
#include "storage/sqlite/checkpointer.h"
#include "storage/sqlite/notifier.h"
#include "storage/sqlite/read_pool.h"
#include "storage/sqlite/sqlite_pool.h"
#include "storage/sqlite/writer.h"

namespace stele::storage::sqlite::internal {

// `fn(context)`, or the failure of the op when it throws: exceptions never
// cross the module boundary, and the op is rolled back. R's error must be
// constructible from DbErrorGeneric.
template <class R, class F>
R RunCatching(F& fn, WriteContext& context) {
  try {
    return fn(context);
  } catch (const std::exception& e) {
    return Unexpected(
        DbErrorGeneric::Uncategorized(std::string("write operation failed: ") + e.what()));
  }
}

// A WriteOp computing Result<T, E> with `fn(WriteContext&)`; the caller
// waits on the future, which is fulfilled only after the commit (or the
// failure) of the op's transaction.
template <class T, class E, class F>
class TypedWriteOp final : public WriteOp {
 public:
  TypedWriteOp(F fn, bool needs_sync) : fn_(std::move(fn)), needs_sync_(needs_sync) {}

  bool Run(WriteContext& context) override {
    result_.emplace(RunCatching<Result<T, E>>(fn_, context));
    return result_->has_value();
  }
  void Complete() override { promise_.set_value(std::move(*result_)); }
  void Fail(const DbErrorGeneric& error) override {
    promise_.set_value(Result<T, E>(Unexpected(error)));
  }
  std::future<Result<T, E>> Future() { return promise_.get_future(); }
  bool needs_sync() const override { return needs_sync_; }

 private:
  F fn_;
  bool needs_sync_;
  std::optional<Result<T, E>> result_;
  std::promise<Result<T, E>> promise_;
};

// Logs the failure of a write nobody waits for (Store::WriteDetached).
void LogDetachedWriteFailure(const std::string& what, const std::string& error);

// A WriteOp nobody waits for: a failure is logged with `what`.
template <class F>
class DetachedWriteOp final : public WriteOp {
 public:
  DetachedWriteOp(F fn, std::string what) : fn_(std::move(fn)), what_(std::move(what)) {}

  bool Run(WriteContext& context) override {
    result_ = RunCatching<Result<void, DbErrorWrite>>(fn_, context);
    return result_.has_value();
  }
  void Complete() override {
    if (!result_) Log(result_.error().ToString());
  }
  void Fail(const DbErrorGeneric& error) override { Log(error.ToString()); }

 private:
  void Log(const std::string& error) const { LogDetachedWriteFailure(what_, error); }

  F fn_;
  std::string what_;
  Result<void, DbErrorWrite> result_;
};

class Store {
 public:
  static Result<std::shared_ptr<Store>, DbErrorGeneric> Open(const SqliteOptions& options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Runs `fn(WriteContext&) -> Result<T, E>` as one logical operation on
  // the writer thread and returns its outcome after the commit. E must be
  // constructible from DbErrorGeneric.
  template <class T, class E, class F>
  Result<T, E> Write(F&& fn) {
    return Submit<T, E>(std::forward<F>(fn), /*needs_sync=*/true);
  }
  // Write for an op whose loss in a power failure the engine makes good by
  // itself (a lock acquisition, a fired timer): its commit may skip the
  // fsync (writer.h, "Unsynced commits").
  template <class T, class E, class F>
  Result<T, E> WriteUnsynced(F&& fn) {
    return Submit<T, E>(std::forward<F>(fn), /*needs_sync=*/false);
  }

  // Queues `fn(WriteContext&) -> Result<void, DbErrorWrite>` as one logical
  // operation and returns without waiting: it commits (synced) before or
  // with every operation submitted after it, as the writer's queue is
  // first in, first out. A failure is logged, naming `what`.
  template <class F>
  void WriteDetached(F&& fn, std::string what) {
    auto op = std::make_unique<DetachedWriteOp<std::decay_t<F>>>(std::forward<F>(fn), what);
    // `what` is still needed below should the submission fail.
    if (auto submitted = writer_->Submit(std::move(op)); !submitted) {
      LogDetachedWriteFailure(what, submitted.error().ToString());
    }
  }

  // Runs `fn(Connection&) -> Result<T, E>` in one read transaction.
  template <class F>
  auto Read(F&& fn) {
    return reads_->Read(std::forward<F>(fn));
  }

  Notifier& notifier() { return notifier_; }
  SqliteStats stats() const;

  // Idempotent: drains and stops the writer, releases waiters, closes the
  // read connections.
  void Close();
  bool IsClosed();

 private:
  template <class T, class E, class F>
  Result<T, E> Submit(F&& fn, bool needs_sync) {
    auto op =
        std::make_unique<TypedWriteOp<T, E, std::decay_t<F>>>(std::forward<F>(fn), needs_sync);
    std::future<Result<T, E>> future = op->Future();
    if (auto submitted = writer_->Submit(std::move(op)); !submitted) {
      return Unexpected(std::move(submitted).error());
    }
    return future.get();
  }

  Store(std::unique_ptr<QueryCounters> counters, std::unique_ptr<Checkpointer> checkpointer,
        std::unique_ptr<Connection> writer_connection,
        std::vector<std::unique_ptr<Connection>> read_connections, const SqliteOptions& options);

  // Outlives every connection (declared before them).
  std::unique_ptr<QueryCounters> counters_;
  // Declared before the writer: the writer delivers notifications and
  // reports commits to the checkpointer until it is closed.
  Notifier notifier_;
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<ReadPool> reads_;
  std::mutex close_mu_;
  bool closed_ = false;  // guarded by close_mu_
};

}  // namespace stele::storage::sqlite::internal
