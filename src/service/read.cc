// ExecutionService reads: Get, WaitForResult, List, Events, Responses,
// Backtrace.
#include <algorithm>

#include "service/execution_service.h"
#include "service/parse.h"

namespace stele::service {

namespace {

// What a failed result wait answers (WaitForResult, WaitForResultAsync).
ServiceError ResultWaitError(const core::ExecutionId& id,
                             const storage::DbErrorReadWithTimeout& error,
                             std::chrono::milliseconds timeout) {
  if (!error.IsTimeout()) {
    return ServiceError::Unavailable("waiting for " + id.ToString() + ": " + error.ToString());
  }
  if (error.timeout() == storage::TimeoutOutcome::kCancel) {
    return ServiceError::Cancelled("the wait for " + id.ToString() + " was cancelled");
  }
  return ServiceError::Timeout("execution " + id.ToString() + " did not finish within " +
                               std::to_string(timeout.count()) + " ms");
}

}  // namespace

namespace {

constexpr size_t kMaxPrefixBytes = 512;

}  // namespace

Result<ExecutionInfo, ServiceError> ExecutionService::Get(std::string_view text) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  const std::string what = "execution " + id.ToString();
  auto created = api_->GetCreateRequest(id);
  if (!created) return Unexpected(FromRead(created.error(), what));
  auto state = api_->GetPendingState(id);
  if (!state) return Unexpected(FromRead(state.error(), what));
  ExecutionInfo info{id,
                     created->ffqn,
                     created->created_at,
                     created->scheduled_at,
                     state->ComponentIdInputDigest(),
                     *state,
                     std::nullopt};
  if (const auto* finished = std::get_if<core::PendingStateFinished>(&state->value)) {
    auto event = api_->GetExecutionEvent(id, core::Version(finished->version));
    if (!event) return Unexpected(FromRead(event.error(), what));
    if (const auto* f = std::get_if<core::Finished>(&event->event)) info.result = f->result;
  }
  return info;
}

Result<core::SupportedFunctionReturnValue, ServiceError> ExecutionService::WaitForResult(
    std::string_view text, std::chrono::milliseconds timeout, const CancellationToken& cancel) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  // A wait on a missing id would only time out: say so at once.
  auto state = api_->GetPendingState(id);
  if (!state) return Unexpected(FromRead(state.error(), "execution " + id.ToString()));
  auto result = api_->WaitForFinishedResult(id, storage::WaitOptions::For(timeout, cancel));
  if (result) return std::move(*result);
  return Unexpected(ResultWaitError(id, result.error(), timeout));
}

Result<std::shared_ptr<AsyncWait>, ServiceError> ExecutionService::WaitForResultAsync(
    std::string_view text, std::chrono::milliseconds timeout, const CancellationToken& cancel,
    PostFn post,
    std::function<void(Result<core::SupportedFunctionReturnValue, ServiceError>)> done) {
  using Value = core::SupportedFunctionReturnValue;
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto checked = std::make_shared<bool>(false);  // only touched by attempts, one at a time
  storage::DbExternalApi* api = api_.get();
  internal::AsyncWaitSpec<Value> spec;
  spec.attempt = [api, id, deadline, timeout,
                  checked]() -> std::optional<Result<Value, ServiceError>> {
    if (!*checked) {
      // As WaitForResult: a missing id is NotFound, not a timeout.
      auto state = api->GetPendingState(id);
      if (!state) return Unexpected(FromRead(state.error(), "execution " + id.ToString()));
      *checked = true;
    }
    // A deadline in the past makes this a read of the result if finished.
    auto result = api->WaitForFinishedResult(
        id, storage::WaitOptions{std::chrono::steady_clock::now() - std::chrono::seconds(1),
                                 std::nullopt});
    if (result) return std::move(*result);
    const bool not_yet =
        result.error().IsTimeout() && result.error().timeout() == storage::TimeoutOutcome::kTimeout;
    if (!not_yet) return Unexpected(ResultWaitError(id, result.error(), timeout));
    if (std::chrono::steady_clock::now() >= deadline) {
      return Unexpected(ResultWaitError(id, result.error(), timeout));
    }
    return std::nullopt;
  };
  spec.watch = [api, id](storage::WatchCallback fired) {
    return api->WatchFinished(id, std::move(fired));
  };
  spec.deadline = deadline;
  spec.timeout_error = [id, timeout] {
    return ResultWaitError(
        id, storage::DbErrorReadWithTimeout::Timeout(storage::TimeoutOutcome::kTimeout), timeout);
  };
  spec.cancelled_error = [id, timeout] {
    return ResultWaitError(
        id, storage::DbErrorReadWithTimeout::Timeout(storage::TimeoutOutcome::kCancel), timeout);
  };
  spec.watch_error = [id](const storage::DbErrorRead& error) {
    return FromRead(error, "execution " + id.ToString());
  };
  spec.cancel = cancel;
  spec.post = std::move(post);
  spec.done = std::move(done);
  return async_waits_->Start(std::move(spec));
}

Result<ListPage, ServiceError> ExecutionService::List(const ListQuery& query) {
  if (query.limit == 0 || query.limit > options_.max_list_length) {
    return Unexpected(ServiceError::InvalidArgument(
        "list limit must be 1.." + std::to_string(options_.max_list_length) + ", got " +
        std::to_string(query.limit) + " (page with the cursor for more)"));
  }
  if (query.ffqn_prefix.size() > kMaxPrefixBytes ||
      query.execution_id_prefix.size() > kMaxPrefixBytes) {
    return Unexpected(ServiceError::InvalidArgument("prefix filters are limited to " +
                                                    std::to_string(kMaxPrefixBytes) + " bytes"));
  }
  std::optional<core::FunctionFqn> ffqn;
  if (query.ffqn) {
    STELE_ASSIGN_OR_RETURN(ffqn, internal::ParseFfqn(*query.ffqn));
  }
  std::optional<core::ExecutionId> cursor;
  if (query.cursor) {
    auto parsed = core::ExecutionId::Parse(*query.cursor);
    if (!parsed || query.cursor->size() > internal::kMaxIdBytes) {
      return Unexpected(ServiceError::InvalidArgument(
          "invalid list cursor `" + query.cursor->substr(0, internal::kMaxIdBytes) +
          "` (expected the execution id of next_cursor)" +
          (parsed ? std::string()
                  : ": " + internal::Reason(parsed.error().message, *query.cursor))));
    }
    cursor = std::move(*parsed);
  }
  static constexpr std::string_view kStatuses[] = {"pending_at", "locked", "blocked_by_join_set",
                                                   "finished",   "paused", "cancelling"};
  if (query.status &&
      std::find(std::begin(kStatuses), std::end(kStatuses), *query.status) == std::end(kStatuses)) {
    return Unexpected(ServiceError::InvalidArgument(
        "unknown status filter `" + query.status->substr(0, 64) +
        "` (expected pending_at, locked, blocked_by_join_set, finished, paused or cancelling)"));
  }
  const bool newer = query.direction == ListDirection::kNewer;
  // Storage filters by exact ffqn and top-level only; the prefixes,
  // hide_finished and the status are applied here while scanning, in bounded pages
  // (docs/api.md): a sparse match ends the page early with a cursor.
  const bool filtered = !query.ffqn_prefix.empty() || !query.execution_id_prefix.empty() ||
                        query.hide_finished || query.status.has_value();
  constexpr uint16_t kScanPage = 500;
  constexpr int kMaxScanPages = 20;
  using IdPage = core::Pagination<std::optional<core::ExecutionId>>;
  ListPage page;
  std::optional<core::ExecutionId> scanned_to;  // the last row looked at
  bool exhausted = false;
  for (int round = 0; round < kMaxScanPages && page.executions.size() < query.limit && !exhausted;
       ++round) {
    // Unfiltered: one row more than needed tells whether another page
    // follows, so the last page carries no cursor.
    const auto fetch =
        static_cast<uint16_t>(filtered ? kScanPage : query.limit - page.executions.size() + 1);
    core::ExecutionListPagination pagination =
        newer ? IdPage::NewerThan(fetch, cursor, false) : IdPage::OlderThan(fetch, cursor, false);
    auto rows = api_->ListExecutions(ffqn, query.top_level_only, pagination);
    if (!rows) return Unexpected(FromGeneric(rows.error(), "list executions"));
    if (newer) std::reverse(rows->begin(), rows->end());  // scan order: away from the cursor
    exhausted = rows->size() < fetch;
    for (auto& row : *rows) {
      if (page.executions.size() >= query.limit) {
        exhausted = false;  // a row beyond the page exists
        break;
      }
      cursor = row.execution_id;
      scanned_to = row.execution_id;
      const bool match = row.ffqn.ToString().starts_with(query.ffqn_prefix) &&
                         row.execution_id.ToString().starts_with(query.execution_id_prefix) &&
                         !(query.hide_finished && row.pending_state.IsFinished()) &&
                         (!query.status || row.pending_state.StatusTag() == *query.status);
      if (match) page.executions.push_back(std::move(row));
    }
  }
  if (newer) std::reverse(page.executions.begin(), page.executions.end());  // newest first
  if (!exhausted && scanned_to) page.next_cursor = scanned_to;
  return page;
}

Result<EventsPage, ServiceError> ExecutionService::Events(std::string_view text,
                                                          core::Version::Type since,
                                                          uint32_t length) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  if (length == 0 || length > options_.max_list_length) {
    return Unexpected(ServiceError::InvalidArgument("events page length must be 1.." +
                                                    std::to_string(options_.max_list_length)));
  }
  auto events = api_->ListExecutionEvents(id, core::Version(since), length, true);
  if (!events) return Unexpected(FromRead(events.error(), "events of " + id.ToString()));
  EventsPage page{std::move(*events), std::nullopt};
  if (!page.events.empty() && page.events.size() == length) {
    page.next_since_version = page.events.back().version.value() + 1;
  }
  return page;
}

Result<ResponsesPage, ServiceError> ExecutionService::Responses(std::string_view text,
                                                                std::optional<uint32_t> cursor,
                                                                uint32_t length) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  if (length == 0 || length > options_.max_list_length) {
    return Unexpected(ServiceError::InvalidArgument("responses page length must be 1.." +
                                                    std::to_string(options_.max_list_length)));
  }
  const auto len = static_cast<uint16_t>(length);
  // Without a cursor: from the first response on (cursor 0 included).
  auto pagination = cursor ? core::Pagination<uint32_t>::NewerThan(len, *cursor, false)
                           : core::Pagination<uint32_t>::NewerThan(len, 0, true);
  auto responses = api_->ListResponses(id, pagination);
  if (!responses) return Unexpected(FromRead(responses.error(), "responses of " + id.ToString()));
  ResponsesPage page{std::move(*responses), std::nullopt};
  if (!page.responses.empty() && page.responses.size() == len) {
    page.next_cursor = page.responses.back().cursor;
  }
  return page;
}

Result<core::BacktraceInfo, ServiceError> ExecutionService::Backtrace(
    std::string_view text, storage::BacktraceFilter filter) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  const std::string what = "backtrace of " + id.ToString();
  auto state = api_->GetPendingState(id);
  if (!state) return Unexpected(FromRead(state.error(), what));
  auto backtrace = api_->GetBacktrace(id, filter);
  if (backtrace) return std::move(*backtrace);
  if (backtrace.error().IsNotFound()) {
    return Unexpected(ServiceError::NotFound("no backtrace stored for execution " + id.ToString() +
                                             " at that version; only workflows record backtraces"));
  }
  return Unexpected(FromRead(backtrace.error(), what));
}

}  // namespace stele::service
