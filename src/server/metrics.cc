// GET /metrics (api_ops.h): Prometheus text. Figures that need a database
// read (executions by state, executor queues) are cached for a few seconds
// (ServerImpl::snapshot_max_age): scrapers poll, and the reads scan.
#include <algorithm>
#include <sstream>

#include "server/api_ops.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::server::api {

namespace {

// Prometheus histogram lines of `h` (seconds) with the label `labels`.
void WriteHistogram(std::ostringstream& out, const std::string& name, const std::string& labels,
                    const executor::LatencyHistogram::Snapshot& h) {
  uint64_t cumulative = 0;
  const auto& bounds = executor::LatencyHistogram::kBoundsMicros;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += h.counts[i];
    out << name << "_bucket{" << labels << (labels.empty() ? "" : ",") << "le=\""
        << static_cast<double>(bounds[i]) / 1e6 << "\"} " << cumulative << "\n";
  }
  out << name << "_bucket{" << labels << (labels.empty() ? "" : ",") << "le=\"+Inf\"} " << h.count
      << "\n";
  std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out << name << "_sum" << braces << " " << static_cast<double>(h.sum_micros) / 1e6 << "\n"
      << name << "_count" << braces << " " << h.count << "\n";
}

// Executions by state.
void WriteExecutionCounts(ServerImpl& d, std::ostringstream& out) {
  std::optional<storage::ExecutionCounts> counts;
  {
    std::lock_guard lock(d.snapshots_mu);
    const auto now = std::chrono::steady_clock::now();
    if (!d.execution_counts || now - d.execution_counts_at >= d.snapshot_max_age) {
      if (auto fresh = d.service->CountExecutionsByState()) {
        d.execution_counts = *fresh;
        d.execution_counts_at = now;
      }
    }
    counts = d.execution_counts;
  }
  if (!counts) return;  // the database is unavailable: no stale figures
  out << "# HELP stele_executions Executions by pending state; paused ones count as paused only "
         "(refreshed every 5 s).\n"
      << "# TYPE stele_executions gauge\n"
      << "stele_executions{state=\"pending_at\"} " << counts->pending_at << "\n"
      << "stele_executions{state=\"locked\"} " << counts->locked << "\n"
      << "stele_executions{state=\"blocked_by_join_set\"} " << counts->blocked_by_join_set << "\n"
      << "stele_executions{state=\"finished\"} " << counts->finished << "\n"
      << "stele_executions{state=\"paused\"} " << counts->paused << "\n";
}

// The queue of one component's executor: its functions' pending and locked
// executions, counted on the pending indexes (finished ones are not read).
Result<storage::PendingCounts, service::ServiceError> CountQueue(
    ServerImpl& d, const service::ComponentSpec& component) {
  return d.service->CountPending(component.functions);
}

void WriteQueueDepths(ServerImpl& d, std::ostringstream& out) {
  std::optional<std::map<std::string, storage::PendingCounts>> depths;
  {
    std::lock_guard lock(d.snapshots_mu);
    const auto now = std::chrono::steady_clock::now();
    if (!d.queue_depths || now - d.queue_depths_at >= d.snapshot_max_age) {
      std::map<std::string, storage::PendingCounts> fresh;
      bool ok = true;
      for (const auto& component : d.service->components()) {
        if (!component.make_worker) continue;  // no executor (stubs)
        auto q = CountQueue(d, component);
        if (!q) {
          ok = false;
          break;
        }
        fresh[component.component_id.name] = *q;
      }
      if (ok) {
        d.queue_depths = std::move(fresh);
        d.queue_depths_at = now;
      }
    }
    depths = d.queue_depths;
  }
  if (!depths) return;
  auto series = [&](const char* name, const char* help, auto field) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
    for (const auto& [component, q] : *depths) {
      out << name << "{component=\"" << component << "\"} " << field(q) << "\n";
    }
  };
  using Q = storage::PendingCounts;
  series("stele_executor_queue_depth",
         "Executions of the component's functions that are due and not locked: work waiting "
         "for its executor (refreshed every 5 s).",
         [](const Q& q) { return q.due; });
  series("stele_executor_scheduled", "Executions of the component pending at a later time.",
         [](const Q& q) { return q.scheduled_later; });
  series("stele_executor_locked", "Executions of the component locked by an executor.",
         [](const Q& q) { return q.locked; });
}

// Pending executions no component of this server can run (a forced upgrade
// to a digest nothing serves, a component version removed from the config).
// The series of a digest disappears once nothing waits on it.
void WriteUnserved(ServerImpl& d, std::ostringstream& out) {
  std::optional<std::vector<storage::DigestCount>> unserved;
  {
    std::lock_guard lock(d.snapshots_mu);
    const auto now = std::chrono::steady_clock::now();
    if (!d.unserved || now - d.unserved_at >= d.snapshot_max_age) {
      if (auto fresh = d.service->CountPendingOnUnservedDigests()) {
        d.unserved = std::move(*fresh);
        d.unserved_at = now;
      }
    }
    unserved = d.unserved;
  }
  if (!unserved) return;
  out << "# HELP stele_executions_unserved Pending executions whose component digest no "
         "component of this server serves: they wait until one does (refreshed every 5 s).\n"
      << "# TYPE stele_executions_unserved gauge\n";
  for (const auto& [digest, count] : *unserved) {
    out << "stele_executions_unserved{digest=\"" << digest.ToString() << "\"} " << count << "\n";
  }
}

}  // namespace

void Metrics(ServerImpl& d, const http::Request&, http::Response& res) {
  std::ostringstream out;
  WriteExecutionCounts(d, out);
  WriteQueueDepths(d, out);
  WriteUnserved(d, out);
  out << "# HELP stele_lock_latency_seconds One locking round of an executor (LockPending*).\n"
      << "# TYPE stele_lock_latency_seconds histogram\n";
  const std::vector<service::ExecutorView> executors = d.service->Executors();
  for (const auto& e : executors) {
    WriteHistogram(out, "stele_lock_latency_seconds", "component=\"" + e.component_name + "\"",
                   e.task->stats().lock.Take());
  }
  out << "# HELP stele_record_latency_seconds Recording one run's outcome (append, retries "
         "included).\n"
      << "# TYPE stele_record_latency_seconds histogram\n";
  for (const auto& e : executors) {
    WriteHistogram(out, "stele_record_latency_seconds", "component=\"" + e.component_name + "\"",
                   e.task->stats().record.Take());
  }
  out << "# HELP stele_workflow_write_latency_seconds One write a workflow run makes itself "
         "(appends "
         "during the run, backtraces).\n"
      << "# TYPE stele_workflow_write_latency_seconds histogram\n";
  for (const auto& [component, writes] : d.service->workflow_writes()) {
    WriteHistogram(out, "stele_workflow_write_latency_seconds", "component=\"" + component + "\"",
                   writes->Take());
  }
  const service::ExecutionService::CancelCounts cancels = d.service->cancel_counts();
  out << "# HELP stele_cancels_total Cancels this server wrote: activities finished cancelled, "
         "workflows' cancel and terminate requests (docs/model.md §9.5).\n"
      << "# TYPE stele_cancels_total counter\n"
      << "stele_cancels_total{kind=\"activity\"} " << cancels.activities << "\n"
      << "stele_cancels_total{kind=\"workflow_cancel\"} " << cancels.workflow_cancels << "\n"
      << "stele_cancels_total{kind=\"workflow_terminate\"} " << cancels.workflow_terminates << "\n";
  out << "# HELP stele_pauses_total Pauses and resumes this server wrote (docs/model.md §9.6).\n"
      << "# TYPE stele_pauses_total counter\n"
      << "stele_pauses_total{kind=\"pause\"} " << cancels.pauses << "\n"
      << "stele_pauses_total{kind=\"resume\"} " << cancels.resumes << "\n";
  out << "# HELP stele_deadlines_expired_total Executions this server ended at their deadline: "
         "activities finished timed_out, workflows terminated timed_out (docs/model.md §9.7).\n"
      << "# TYPE stele_deadlines_expired_total counter\n"
      << "stele_deadlines_expired_total " << d.service->expired_deadlines() << "\n";
  const service::ExecutionService::MessageCounts messages = d.service->message_counts();
  out << "# HELP stele_messages_sent_total Messages this server delivered to executions "
         "(docs/model.md §8.6; idempotent repeats not counted).\n"
      << "# TYPE stele_messages_sent_total counter\n"
      << "stele_messages_sent_total " << messages.sent << "\n"
      << "# HELP stele_messages_consumed_total Messages the workflows this server ran "
         "received (replays not counted).\n"
      << "# TYPE stele_messages_consumed_total counter\n"
      << "stele_messages_consumed_total " << messages.consumed << "\n";
  out << "# HELP stele_http_responses_total HTTP responses by status code.\n"
      << "# TYPE stele_http_responses_total counter\n";
  {
    std::lock_guard lock(d.metrics_mu);
    for (const auto& [status, count] : d.responses_by_status) {
      out << "stele_http_responses_total{code=\"" << status << "\"} " << count << "\n";
    }
  }
  out << "# HELP stele_webhook_requests_total Requests a webhook answered, by webhook, route "
         "and status (docs/api.md, \"Webhooks\").\n"
      << "# TYPE stele_webhook_requests_total counter\n";
  {
    std::lock_guard lock(d.metrics_mu);
    for (const auto& [key, count] : d.webhook_responses) {
      const LoadedWebhook& w = d.webhooks[key.first];
      out << "stele_webhook_requests_total{webhook=\"" << w.config.name << "\",route=\""
          << w.config.route << "\",status=\"" << key.second << "\"} " << count << "\n";
    }
  }
  const auto& api = d.config.api;
  out << "# HELP stele_http_connections Connections being served.\n"
      << "# TYPE stele_http_connections gauge\nstele_http_connections " << OpenConnections(d)
      << "\n# HELP stele_http_max_connections The limit [api] max_connections.\n"
      << "# TYPE stele_http_max_connections gauge\nstele_http_max_connections "
      << api.max_connections << "\n"
      << "# HELP stele_http_connections_refused_total Connections refused with 503 (over "
         "max_connections).\n"
      << "# TYPE stele_http_connections_refused_total "
         "counter\nstele_http_connections_refused_total "
      << RefusedConnections(d) << "\n"
      << "# HELP stele_http_waiters Requests waiting (result waits, follow streams).\n"
      << "# TYPE stele_http_waiters gauge\nstele_http_waiters " << d.waiters.load() << "\n"
      << "# HELP stele_http_max_waiters The limit [api] max_waiters.\n"
      << "# TYPE stele_http_max_waiters gauge\nstele_http_max_waiters " << api.max_waiters << "\n"
      << "# HELP stele_http_waiters_refused_total Waiting requests refused with 503 (over "
         "max_waiters).\n"
      << "# TYPE stele_http_waiters_refused_total counter\nstele_http_waiters_refused_total "
      << d.waiters_refused.load() << "\n";
  out << "# HELP stele_components Loaded components.\n# TYPE stele_components gauge\n"
      << "stele_components " << d.service->components().size() << "\n";
  out << "# HELP stele_executors Running executors (one per component with a worker).\n"
      << "# TYPE stele_executors gauge\nstele_executors " << executors.size() << "\n";
  auto in_flight = [](const executor::ConcurrencyLimiter& l) {
    return l.capacity() - l.available();
  };
  auto capacity = [](const executor::ConcurrencyLimiter& l) { return l.capacity(); };
  const auto& limiter = d.service->activity_limiter();
  const auto& workflow_limiter = d.service->workflow_limiter();
  out << "# HELP stele_runs_in_flight Runs holding a concurrency permit.\n"
      << "# TYPE stele_runs_in_flight gauge\n"
      << "stele_runs_in_flight{kind=\"activity\"} " << in_flight(limiter) << "\n"
      << "stele_runs_in_flight{kind=\"workflow\"} " << in_flight(workflow_limiter) << "\n"
      << "# HELP stele_concurrency_limit Permits of the process-wide limiters "
         "([executor] max_concurrency, max_workflow_concurrency).\n"
      << "# TYPE stele_concurrency_limit gauge\n"
      << "stele_concurrency_limit{kind=\"activity\"} " << capacity(limiter) << "\n"
      << "stele_concurrency_limit{kind=\"workflow\"} " << capacity(workflow_limiter) << "\n";
  out << "# HELP stele_running_activities Activity runs registered for cancellation.\n"
      << "# TYPE stele_running_activities gauge\nstele_running_activities "
      << d.service->RunningActivities() << "\n";
  const service::RetentionCounters& retention = d.service->retention_counters();
  out << "# HELP stele_retention_deleted_executions_total Executions deleted by retention "
         "(children included; [retention]).\n"
      << "# TYPE stele_retention_deleted_executions_total counter\n"
      << "stele_retention_deleted_executions_total " << retention.deleted.load() << "\n"
      << "# HELP stele_retention_deleted_trees_total Top-level executions deleted by retention "
         "with their trees.\n"
      << "# TYPE stele_retention_deleted_trees_total counter\n"
      << "stele_retention_deleted_trees_total " << retention.deleted_top_level.load() << "\n"
      << "# HELP stele_retention_passes_total Retention passes run, and those that failed.\n"
      << "# TYPE stele_retention_passes_total counter\n"
      << "stele_retention_passes_total{outcome=\"ok\"} "
      << retention.passes.load() - retention.failed_passes.load() << "\n"
      << "stele_retention_passes_total{outcome=\"failed\"} " << retention.failed_passes.load()
      << "\n";
  const service::CronCounts cron = d.service->cron_counts();
  out << "# HELP stele_cron_ticks_total Cron schedule ticks of this process: fired (created or "
         "found their execution) or skipped (by the catch-up or overlap policy).\n"
      << "# TYPE stele_cron_ticks_total counter\n"
      << "stele_cron_ticks_total{outcome=\"fired\"} " << cron.fired << "\n"
      << "stele_cron_ticks_total{outcome=\"skipped\"} " << cron.skipped << "\n";
  out << "# HELP stele_follow_streams Open follow (SSE) streams.\n"
      << "# TYPE stele_follow_streams gauge\nstele_follow_streams " << d.follow_streams.load()
      << "\n";
  if (auto* sqlite = dynamic_cast<storage::sqlite::SqlitePool*>(d.pool.get())) {
    auto s = sqlite->stats();
    out << "# HELP stele_sqlite_queued_ops Write operations waiting for the writer thread.\n"
        << "# TYPE stele_sqlite_queued_ops gauge\nstele_sqlite_queued_ops " << s.queued_ops << "\n"
        << "# TYPE stele_sqlite_transactions_committed_total counter\n"
        << "stele_sqlite_transactions_committed_total " << s.transactions_committed << "\n"
        << "# TYPE stele_sqlite_ops_committed_total counter\n"
        << "stele_sqlite_ops_committed_total " << s.ops_committed << "\n"
        << "# TYPE stele_sqlite_transactions_failed_total counter\n"
        << "stele_sqlite_transactions_failed_total " << s.transactions_failed << "\n";
  }
  res.status = 200;
  res.set_content(out.str(), "text/plain; version=0.0.4");
}

}  // namespace stele::server::api
