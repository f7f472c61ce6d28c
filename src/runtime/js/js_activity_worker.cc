#include "runtime/js/js_activity_worker.h"

#include <chrono>
#include <utility>

#include "base/check.h"
#include "base/log.h"
#include "runtime/js/js_workflow_host.h"

namespace stele::runtime::js {

namespace {

using Kind = JsError::Kind;

LogLevel ToLogLevel(std::string_view level) {
  if (level == "trace") return LogLevel::kTrace;
  if (level == "debug") return LogLevel::kDebug;
  if (level == "warn") return LogLevel::kWarn;
  if (level == "error") return LogLevel::kError;
  return LogLevel::kInfo;
}

// The host of one attempt: fetch, logs, cancellation; real time and
// randomness.
class JsActivityHost final : public NonDeterministicJsHost {
 public:
  JsActivityHost(std::string execution_id, http::HttpClientConfig http, CancellationToken cancel)
      : execution_id_(std::move(execution_id)), cancel_(cancel) {
    http_.config = std::move(http);
    http_.cancel = cancel;
  }

  HostReply Call(std::string_view op, const core::Json& args,
                 const std::function<std::vector<JsFrame>()>&) override {
    if (op == "log" && args.size() == 2 && args[0].is_string() && args[1].is_string()) {
      const LogLevel level = ToLogLevel(args[0].get<std::string>());
      if (level >= GetLogLevel()) {
        LogMessage(level, "activity", 0, execution_id_ + ": " + args[1].get<std::string>());
      }
      return HostReply::Value(nullptr);
    }
    if (op == "aborted") return HostReply::Value(cancel_.IsCancelled());
    if (op == "fetch" && args.size() == 1 && args[0].is_object()) {
      auto response = http::PerformRequest(
          http_, args[0].dump(-1, ' ', false, core::Json::error_handler_t::replace));
      if (!response) {
        // Interrupted: the attempt is being cancelled; the engine stops it.
        if (response.error().interrupted) return HostReply::Abort(response.error().message);
        return HostReply::Throw("TypeError", "fetch failed: " + response.error().message);
      }
      core::Json parsed = core::Json::parse(*response, nullptr, false);
      return HostReply::Value(std::move(parsed));
    }
    return HostReply::Throw("TypeError",
                            "`" + std::string(op) + "` is not available to activities");
  }

  http::HttpState& http() { return http_; }

 private:
  std::string execution_id_;
  CancellationToken cancel_;
  http::HttpState http_;
};

}  // namespace

JsActivityWorker::JsActivityWorker(std::shared_ptr<const JsComponent> component,
                                   JsActivityOptions options)
    : component_(std::move(component)),
      options_(std::move(options)),
      engine_id_(component_->engine->EngineId()),
      ffqns_(component_->Ffqns()) {
  STELE_CHECK(component_->flavor == JsFlavor::kActivity,
              "JsActivityWorker needs an activity component");
}

executor::WorkerResult JsActivityWorker::Run(executor::WorkerContext ctx) {
  executor::WorkerResult result = RunGuest(std::move(ctx));
  result.engine = engine_id_;
  return result;
}

executor::WorkerResult JsActivityWorker::RunGuest(executor::WorkerContext ctx) {
  if (component_->Find(ctx.ffqn) == nullptr) {
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCannotInstantiate,
                                         "component " + component_->component_id.ToString() +
                                             " does not export " + ctx.ffqn.ToString());
  }
  RunInfo info{ctx.execution_id.ToString(), ctx.ffqn.ToString(), ctx.intermittent_event_count + 1,
               ToMicros(ctx.execution_deadline) / 1000, options_.env};
  JsActivityHost host(info.execution_id, options_.http, ctx.cancel);
  // An attempt is bounded by its deadline (the token fires there), not by
  // a slice: an activity may compute as long as its lock lasts.
  auto outcome = component_->engine->Run(*component_->module, info.ffqn, info, ctx.params, host,
                                         RunBudget{std::chrono::hours(24 * 365), ctx.cancel});
  auto traces = http::TakeTraces(host.http());
  if (!outcome) {
    const JsError& error = outcome.error();
    switch (error.kind) {
      case Kind::kInterrupted:
      case Kind::kHostAbort:
        return executor::WorkerResult::Err(ctx.version,
                                           executor::TemporaryTimeout{std::move(traces)});
      case Kind::kEngine:
        return executor::WorkerResult::Err(ctx.version, executor::LimitReached{error.ToString()});
      case Kind::kBadResult:
        return executor::WorkerResult::Fatal(
            ctx.version, executor::FatalErrorKind::kResultParsingError, error.message);
      case Kind::kNoSuchFunction:
        return executor::WorkerResult::Fatal(
            ctx.version, executor::FatalErrorKind::kCannotInstantiate, error.message);
      default:
        return executor::WorkerResult::Err(
            ctx.version,
            executor::ActivityTrap{error.message, error.ToString(), std::move(traces)});
    }
  }
  if (!outcome->ok && options_.retry_on_err && !outcome->non_retryable) {
    core::ReturnValueErr err{outcome->value.is_null() ? std::nullopt
                                                      : std::optional<core::Json>(outcome->value)};
    return executor::WorkerResult::Err(
        ctx.version, executor::ActivityReturnedError{std::move(err), {}, std::move(traces)});
  }
  return executor::WorkerResult::Ok(ToReturnValue(outcome->ok, std::move(outcome->value)),
                                    ctx.version, std::move(traces));
}

}  // namespace stele::runtime::js
