#include "cli/api_client.h"

#include <httplib.h>

#include <string_view>

namespace stele::cli {
namespace {

constexpr size_t kMaxErrorMessage = 500;

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::string WithQuery(const std::string& path, const Query& query) {
  std::string out = path;
  char sep = '?';
  for (const auto& [k, v] : query) {
    out += sep;
    out += PercentEncode(k);
    out += '=';
    out += PercentEncode(v);
    sep = '&';
  }
  return out;
}

ApiError ConnectionError(httplib::Error e) {
  return ApiError{0, "connection", httplib::to_string(e)};
}

// Decodes a response: 2xx bodies must be JSON (or empty), error bodies should
// be the API's error document; anything else is reported verbatim, shortened.
Result<ApiClient::Response, ApiError> Decode(const httplib::Result& res) {
  if (!res) return Unexpected(ConnectionError(res.error()));
  const httplib::Response& r = *res;
  nlohmann::json body = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  bool ok = r.status >= 200 && r.status < 300;
  if (ok) {
    if (r.body.empty()) return ApiClient::Response{r.status, nullptr};
    if (body.is_discarded()) {
      return Unexpected(ApiError{r.status, "bad_response", "the server answered " +
                                                               std::to_string(r.status) +
                                                               " with a body that is not JSON"});
    }
    return ApiClient::Response{r.status, std::move(body)};
  }
  ApiError err{r.status, "http_" + std::to_string(r.status), r.body.substr(0, kMaxErrorMessage)};
  if (!body.is_discarded() && body.is_object() && body.contains("error") &&
      body["error"].is_object()) {
    const nlohmann::json& e = body["error"];
    if (e.contains("kind") && e["kind"].is_string()) err.kind = e["kind"].get<std::string>();
    if (e.contains("message") && e["message"].is_string()) {
      err.message = e["message"].get<std::string>().substr(0, kMaxErrorMessage);
    }
  }
  return Unexpected(std::move(err));
}

}  // namespace

ApiClient::ApiClient(const std::string& api_url, std::optional<std::string> token) {
  std::string url = api_url;
  if (!url.empty() && url.back() == '/') url.pop_back();
  http_ = std::make_unique<httplib::Client>(url);
  http_->set_connection_timeout(std::chrono::seconds(5));
  http_->set_write_timeout(std::chrono::seconds(30));
  http_->set_keep_alive(true);
  // A request's head and body are separate writes: without this the body
  // waits for the server's delayed ACK (~40 ms per POST/PUT).
  http_->set_tcp_nodelay(true);
  if (token) http_->set_bearer_token_auth(*token);
}

ApiClient::~ApiClient() = default;

std::string ApiClient::EncodeSegment(const std::string& segment) { return PercentEncode(segment); }

Result<ApiClient::Response, ApiError> ApiClient::Get(const std::string& path, const Query& query,
                                                     std::chrono::seconds read_timeout) {
  http_->set_read_timeout(read_timeout);
  return Decode(http_->Get(WithQuery(path, query)));
}

Result<ApiClient::Response, ApiError> ApiClient::Post(const std::string& path,
                                                      const nlohmann::json& body) {
  http_->set_read_timeout(std::chrono::seconds(30));
  return Decode(http_->Post(path, body.dump(), "application/json"));
}

Result<ApiClient::Response, ApiError> ApiClient::Put(const std::string& path,
                                                     const nlohmann::json& body) {
  http_->set_read_timeout(std::chrono::seconds(30));
  return Decode(http_->Put(path, body.dump(), "application/json"));
}

Result<void, ApiError> ApiClient::Stream(const std::string& path,
                                         const std::function<bool(const std::string&)>& on_data,
                                         std::chrono::seconds idle_timeout) {
  http_->set_read_timeout(idle_timeout);
  int status = 0;
  std::string error_body;
  std::string pending;  // bytes of the event being received
  std::string data;     // `data:` lines of the current event
  bool stopped = false;
  auto handle_line = [&](std::string_view line) -> bool {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {  // end of one event
      if (data.empty()) return true;
      std::string payload = std::move(data);
      data.clear();
      if (!payload.empty() && payload.back() == '\n') payload.pop_back();
      if (!on_data(payload)) {
        stopped = true;
        return false;
      }
      return true;
    }
    if (line.rfind("data:", 0) == 0) {
      std::string_view v = line.substr(5);
      if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      data.append(v);
      data.push_back('\n');
    }
    return true;  // comments (":keep-alive"), event:, id:, retry: are ignored
  };
  httplib::Headers headers = {{"Accept", "text/event-stream"}};
  httplib::Result res = http_->Get(
      path, headers,
      [&](const httplib::Response& r) {
        status = r.status;
        return true;
      },
      [&](const char* bytes, size_t n) {
        if (status != 200) {
          if (error_body.size() < 64 * 1024) error_body.append(bytes, n);
          return true;
        }
        pending.append(bytes, n);
        size_t start = 0;
        for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
          if (!handle_line(std::string_view(pending).substr(start, nl - start))) return false;
        }
        pending.erase(0, start);
        return true;
      });
  if (stopped) return {};
  if (!res) return Unexpected(ConnectionError(res.error()));
  if (status != 200) {
    httplib::Response copy = *res;
    copy.body = error_body;
    httplib::Result synthetic(std::make_unique<httplib::Response>(std::move(copy)),
                              httplib::Error::Success);
    auto decoded = Decode(synthetic);
    if (!decoded) return Unexpected(decoded.error());
    return Unexpected(ApiError{status, "bad_response", "unexpected status " + std::to_string(status)});
  }
  return {};
}

}  // namespace stele::cli
