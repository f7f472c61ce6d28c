#include "runtime/js/js_webhook.h"

#include <openssl/sha.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "base/log.h"
#include "runtime/js/js_workflow_host.h"

namespace stele::runtime::js {

namespace {

namespace wh = webhook;
using Kind = JsError::Kind;
using SteadyClock = std::chrono::steady_clock;

LogLevel WebhookLogLevel(std::string_view level) {
  if (level == "trace") return LogLevel::kTrace;
  if (level == "debug") return LogLevel::kDebug;
  if (level == "warn") return LogLevel::kWarn;
  if (level == "error") return LogLevel::kError;
  return LogLevel::kInfo;
}

core::Json WebhookHostError(const wh::WebhookHost::Error& e) {
  return core::Json{{"kind", e.kind}, {"message", e.message}};
}

// The host of one request: submit and awaitResult through the server's
// WebhookHost, logs; real time and randomness. The whole request must end
// by `deadline` (GuestDeadline: the watchdog stops guest code there).
class JsWebhookHost final : public NonDeterministicJsHost {
 public:
  JsWebhookHost(wh::WebhookHost& host, SteadyClock::time_point deadline, std::string log_prefix)
      : host_(host), deadline_(deadline), log_prefix_(std::move(log_prefix)) {}

  HostReply Call(std::string_view op, const core::Json& args,
                 const std::function<std::vector<JsFrame>()>&) override {
    if (op == "log" && args.size() == 2 && args[0].is_string() && args[1].is_string()) {
      const LogLevel level = WebhookLogLevel(args[0].get<std::string>());
      if (level >= GetLogLevel()) {
        LogMessage(level, "webhook", 0, log_prefix_ + ": " + args[1].get<std::string>());
      }
      return HostReply::Value(nullptr);
    }
    if (op == "submit" && args.size() == 2 && args[0].is_string() && args[1].is_array()) {
      auto id = host_.Submit(args[0].get<std::string>(), args[1]);
      if (!id) return Throw(id.error());
      return HostReply::Value(*id);
    }
    if (op == "awaitResult" && args.size() == 2 && args[0].is_string() &&
        args[1].is_number_integer()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - SteadyClock::now());
      auto wait = std::min(std::chrono::milliseconds(args[1].get<int64_t>()), left);
      if (wait.count() < 0) wait = std::chrono::milliseconds(0);
      auto result = host_.AwaitResult(args[0].get<std::string>(), wait);
      if (!result) return Throw(result.error());
      if (!*result) return HostReply::Value(nullptr);
      return HostReply::Value(OutcomeJson(**result));
    }
    return HostReply::Throw("TypeError", "`" + std::string(op) + "` is not available to webhooks");
  }
  std::optional<SteadyClock::time_point> GuestDeadline() override { return deadline_; }

 private:
  static HostReply Throw(const wh::WebhookHost::Error& e) {
    return HostReply::Throw("Err", e.kind + ": " + e.message, WebhookHostError(e));
  }

  wh::WebhookHost& host_;
  const SteadyClock::time_point deadline_;
  const std::string log_prefix_;
};

}  // namespace

Result<std::shared_ptr<const JsWebhook>, std::string> LoadJsWebhook(
    std::shared_ptr<JsEngine> engine, std::string source, std::string file_name, std::string name,
    const JsLimits& limits) {
  const std::string what = "webhook `" + name + "`";
  if (!core::ComponentId::IsValidName(name)) {
    return Unexpected(what + ": invalid name (use [A-Za-z0-9_-])");
  }
  core::InputContentDigest::Bytes digest{};
  SHA256(reinterpret_cast<const unsigned char*>(source.data()), source.size(), digest.data());
  auto module = engine->Load(std::move(file_name), std::move(source), JsFlavor::kWebhook, limits);
  // The engine's message names the file (and line); the server names the
  // webhook.
  if (!module) return Unexpected(module.error().message);
  auto webhook = std::make_shared<JsWebhook>();
  webhook->component_id = core::ComponentId{core::ComponentType::kWebhookEndpoint, std::move(name),
                                            core::InputContentDigest(digest)};
  webhook->engine = std::move(engine);
  webhook->module = std::move(*module);
  return std::shared_ptr<const JsWebhook>(std::move(webhook));
}

Result<std::shared_ptr<const JsWebhook>, std::string> LoadJsWebhookFile(
    std::shared_ptr<JsEngine> engine, const std::filesystem::path& path, std::string name,
    const JsLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Unexpected("cannot open `" + path.string() + "`");
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Unexpected("cannot read `" + path.string() + "`");
  if (source.size() > limits.max_source_bytes) {
    return Unexpected("`" + path.string() + "` is " + std::to_string(source.size()) +
                      " bytes, over the limit of " + std::to_string(limits.max_source_bytes));
  }
  return LoadJsWebhook(std::move(engine), std::move(source), path.filename().string(),
                       std::move(name), limits);
}

Result<wh::WebhookResponse, wh::WebhookFailure> RunJsWebhook(
    const JsWebhook& webhook, const wh::WebhookRequest& request, wh::WebhookHost& host,
    std::chrono::milliseconds time_limit, const CancellationToken& cancel,
    const std::string& log_prefix, const std::vector<std::pair<std::string, std::string>>& env) {
  JsWebhookHost js_host(host, SteadyClock::now() + time_limit, log_prefix);
  RunInfo info;
  info.ffqn = webhook.component_id.name;
  info.env = env;
  // The request as the wasm guest reads it (one JSON text, one parse).
  core::Json params = core::Json::array({core::Json::parse(request.ToJson())});
  auto outcome = webhook.engine->Run(*webhook.module, "webhook", info, params, js_host,
                                     RunBudget{time_limit, cancel});
  if (!outcome) {
    const JsError& error = outcome.error();
    if (error.kind == Kind::kInterrupted) {
      return Unexpected(wh::WebhookFailure{
          wh::WebhookFailure::Kind::kTimeout,
          "the webhook did not answer within " + std::to_string(time_limit.count()) + " ms",
          error.ToString()});
    }
    if (error.kind == Kind::kBadResult) {
      return Unexpected(wh::WebhookFailure{wh::WebhookFailure::Kind::kBadResponse,
                                           "the webhook's response is malformed: " + error.message,
                                           error.ToString()});
    }
    return Unexpected(wh::WebhookFailure{wh::WebhookFailure::Kind::kTrap,
                                         "the webhook failed: " + error.message, error.ToString()});
  }
  if (!outcome->ok) {
    const std::string value =
        outcome->value.dump(-1, ' ', false, core::Json::error_handler_t::replace);
    return Unexpected(wh::WebhookFailure{wh::WebhookFailure::Kind::kTrap,
                                         "the webhook failed: it threw Err " + value, ""});
  }
  auto response = wh::ParseWebhookResponse(
      outcome->value.dump(-1, ' ', false, core::Json::error_handler_t::replace));
  if (!response) {
    return Unexpected(wh::WebhookFailure{wh::WebhookFailure::Kind::kBadResponse,
                                         "the webhook's response is malformed: " + response.error(),
                                         ""});
  }
  return std::move(*response);
}

}  // namespace stele::runtime::js
