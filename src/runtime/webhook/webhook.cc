#include "runtime/webhook/webhook.h"

#include <cctype>
#include <string>

#include "core/json_codec.h"

namespace stele::runtime::webhook {

namespace {

std::string Dump(const core::Json& json) {
  return json.dump(-1, ' ', false, core::Json::error_handler_t::replace);
}

core::Json PairsToObject(const std::vector<std::pair<std::string, std::string>>& pairs) {
  core::Json out = core::Json::object();
  for (const auto& [k, v] : pairs) out[k] = v;
  return out;
}

}  // namespace

std::string WebhookRequest::ToJson() const {
  core::Json j = {{"method", method},
                  {"path", path},
                  {"params", PairsToObject(params)},
                  {"query", PairsToObject(query)},
                  {"headers", PairsToObject(headers)},
                  {"body", body}};
  return Dump(j);
}

Result<WebhookResponse, std::string> ParseWebhookResponse(std::string_view text) {
  auto json = core::ParseJson(text);
  if (!json) return Unexpected("the response is not JSON: " + json.error().message);
  if (!json->is_object()) return Unexpected(std::string("the response is not a JSON object"));
  WebhookResponse out;
  if (!json->contains("status") || !(*json)["status"].is_number_integer()) {
    return Unexpected(std::string("the response has no integer `status`"));
  }
  const int64_t status = (*json)["status"].get<int64_t>();
  if (status < 200 || status > 599) {
    return Unexpected("status " + std::to_string(status) + " is not 200..599");
  }
  out.status = static_cast<int>(status);
  if (json->contains("headers")) {
    const auto& headers = (*json)["headers"];
    if (!headers.is_object()) return Unexpected(std::string("`headers` is not an object"));
    for (const auto& [name, value] : headers.items()) {
      if (!value.is_string()) return Unexpected("header `" + name + "` is not a string");
      const std::string v = value.get<std::string>();
      // A CR or LF would let the guest split the response.
      if (name.empty() || name.find_first_of("\r\n: ") != std::string::npos ||
          v.find_first_of("\r\n") != std::string::npos) {
        return Unexpected("header `" + name + "` is not a valid header line");
      }
      out.headers.emplace_back(name, v);
    }
  }
  if (json->contains("body")) {
    const auto& body = (*json)["body"];
    if (body.is_string()) {
      out.body = body.get<std::string>();
    } else if (!body.is_null()) {
      out.body = Dump(body);
      bool typed = false;
      for (const auto& [name, v] : out.headers) {
        std::string lower;
        for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        typed = typed || lower == "content-type";
      }
      if (!typed) out.headers.emplace_back("Content-Type", "application/json");
    }
  }
  return out;
}

}  // namespace stele::runtime::webhook
