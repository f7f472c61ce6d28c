#include "storage/sqlite/store.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "storage/sqlite/schema.h"

namespace stele::storage::sqlite::internal {

namespace {

// WAL size (pages) that wakes the checkpointer, SQLite's own default for
// automatic checkpoints (4 MiB with 4 KiB pages).
constexpr int kCheckpointThresholdPages = 1000;

}  // namespace

Result<std::shared_ptr<Store>, DbErrorGeneric> Store::Open(const SqliteOptions& options) {
  if (options.path.empty()) {
    return Unexpected(DbErrorGeneric::Uncategorized("SQLite path is empty"));
  }
  if (options.path == ":memory:" || options.path.starts_with("file::memory:")) {
    return Unexpected(DbErrorGeneric::Uncategorized(
        "in-memory SQLite databases are not supported (read connections could not see the "
        "writer's data); give a file path"));
  }
  auto counters = std::make_unique<QueryCounters>();
  STELE_ASSIGN_OR_RETURN(auto writer,
                         Connection::Open(options.path, /*read_only=*/false, counters.get()));
  STELE_TRY(ConfigureConnection(*writer, options, ConnectionRole::kWriter));
  if (options.integrity_check_at_open) STELE_TRY(CheckIntegrity(*writer));
  // t_metadata.created_at is informational only; the storage layer reads no
  // clock for semantics.
  STELE_TRY(Migrate(*writer, SystemClock::Instance().Now()));

  STELE_ASSIGN_OR_RETURN(auto checkpoint_connection,
                         Connection::Open(options.path, /*read_only=*/false));
  STELE_TRY(ConfigureConnection(*checkpoint_connection, options, ConnectionRole::kCheckpointer));
  auto checkpointer =
      std::make_unique<Checkpointer>(std::move(checkpoint_connection), kCheckpointThresholdPages);
  std::vector<std::unique_ptr<Connection>> readers;
  const int read_connections = std::max(options.read_connections, 1);
  for (int i = 0; i < read_connections; ++i) {
    STELE_ASSIGN_OR_RETURN(auto reader,
                           Connection::Open(options.path, /*read_only=*/true, counters.get()));
    STELE_TRY(ConfigureConnection(*reader, options, ConnectionRole::kReader));
    readers.push_back(std::move(reader));
  }
  // An explicit wal_autocheckpoint in the options wins: SQLite then
  // checkpoints inline and the checkpointer only tidies up once a second.
  bool inline_checkpoints = false;
  for (const auto& [name, value] : options.extra_pragmas) {
    if (name == "wal_autocheckpoint") inline_checkpoints = true;
  }
  // Attached last: no error path may leave the hook pointing at a
  // checkpointer that is gone.
  if (!inline_checkpoints) checkpointer->Attach(*writer);

  return std::shared_ptr<Store>(new Store(std::move(counters), std::move(checkpointer),
                                          std::move(writer), std::move(readers), options));
}

Store::Store(std::unique_ptr<QueryCounters> counters, std::unique_ptr<Checkpointer> checkpointer,
             std::unique_ptr<Connection> writer_connection,
             std::vector<std::unique_ptr<Connection>> read_connections,
             const SqliteOptions& options)
    : counters_(std::move(counters)),
      checkpointer_(std::move(checkpointer)),
      writer_(std::make_unique<Writer>(std::move(writer_connection), options, notifier_,
                                       checkpointer_.get())),
      reads_(std::make_unique<ReadPool>(std::move(read_connections))) {}

void LogDetachedWriteFailure(const std::string& what, const std::string& error) {
  STELE_LOG(kWarn, what << " failed: " << error);
}

Store::~Store() { Close(); }

SqliteStats Store::stats() const {
  SqliteStats stats = writer_->stats();
  stats.vm_steps = counters_->vm_steps.load();
  stats.full_scan_steps = counters_->full_scan_steps.load();
  stats.sorts = counters_->sorts.load();
  stats.auto_indexes = counters_->auto_indexes.load();
  stats.checkpoints = checkpointer_->checkpoints();
  return stats;
}

bool Store::IsClosed() {
  std::lock_guard lock(close_mu_);
  return closed_;
}

void Store::Close() {
  std::lock_guard lock(close_mu_);
  if (closed_) return;
  closed_ = true;
  // Queued writes still run and deliver their notifications; then every
  // waiter is released, then reads stop.
  writer_->Close();
  notifier_.Close();
  reads_->Close();
  // Last, when nothing else uses the file: truncates the WAL.
  checkpointer_->Close();
}

}  // namespace stele::storage::sqlite::internal
