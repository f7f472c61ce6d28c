#include "cli/api_client.h"

#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/json_codec.h"

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

// Why a connection to host:port cannot be made, as the OS says it
// ("connection refused", "no route to host", a name that does not resolve).
// httplib only reports that connecting failed, so one more connection
// attempt of our own learns the reason; "" when that attempt succeeds (the
// failure was transient).
std::string ConnectFailureReason(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return "cannot resolve `" + host + "`: " + gai_strerror(rc);
  }
  int last_errno = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    int err = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        int ready = poll(&p, 1, 5000);
        socklen_t len = sizeof err;
        if (ready == 0) {
          err = ETIMEDOUT;
        } else if (ready < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
          err = errno;
        }
      }
    }
    close(fd);
    if (err == 0) {
      freeaddrinfo(found);
      return "";
    }
    last_errno = err;
  }
  freeaddrinfo(found);
  std::string reason = std::strerror(last_errno);
  if (!reason.empty()) reason[0] = static_cast<char>(std::tolower(reason[0]));
  return reason;
}

// What a transport failure means to a user, in words rather than httplib's
// enumerator names.
ApiError TransportError(httplib::Error e, const std::string& host, int port) {
  std::string message;
  switch (e) {
    case httplib::Error::Connection: {
      std::string reason = ConnectFailureReason(host, port);
      message = reason.empty() ? "the connection failed" : reason;
      break;
    }
    case httplib::Error::ConnectionTimeout:
      message = "connection timed out";
      break;
    case httplib::Error::Read:
      message = "the server closed the connection or did not answer in time";
      break;
    case httplib::Error::Write:
      message = "the request could not be sent (the connection was closed)";
      break;
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLLoadingCerts:
    case httplib::Error::SSLServerVerification:
      message = "the TLS connection failed";
      break;
    case httplib::Error::Canceled:
      message = "the request was cancelled";
      break;
    default:
      message = "the request failed (" + httplib::to_string(e) + ")";
      break;
  }
  return ApiError{0, "connection", std::move(message)};
}

// Decodes a response: 2xx bodies must be JSON (or empty), error bodies should
// be the API's error document; anything else is reported verbatim, shortened.
Result<ApiClient::Response, ApiError> Decode(const httplib::Result& res, const std::string& host,
                                             int port) {
  if (!res) return Unexpected(TransportError(res.error(), host, port));
  const httplib::Response& r = *res;
  // Depth-limited and never throwing, whatever answers at the URL.
  auto parsed = core::ParseJson(r.body);
  bool ok = r.status >= 200 && r.status < 300;
  if (ok) {
    if (r.body.empty()) return ApiClient::Response{r.status, nullptr};
    if (!parsed) {
      return Unexpected(ApiError{
          r.status, "bad_response",
          "the server answered " + std::to_string(r.status) + " with a body that is not JSON"});
    }
    return ApiClient::Response{r.status, std::move(*parsed)};
  }
  ApiError err{r.status, "http_" + std::to_string(r.status), r.body.substr(0, kMaxErrorMessage)};
  if (parsed && parsed->is_object() && parsed->contains("error") &&
      (*parsed)["error"].is_object()) {
    const core::Json& e = (*parsed)["error"];
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
  // scheme://host[:port] or scheme://[v6]:port, as ParseArgs checked it.
  const bool https = url.rfind("https://", 0) == 0;
  std::string_view rest = std::string_view(url).substr(https ? 8 : 7);
  port_ = https ? 443 : 80;
  size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && rest.find(']', colon) == std::string_view::npos) {
    port_ = std::atoi(std::string(rest.substr(colon + 1)).c_str());
    rest = rest.substr(0, colon);
  }
  if (rest.size() >= 2 && rest.front() == '[' && rest.back() == ']') {
    rest = rest.substr(1, rest.size() - 2);
  }
  host_ = std::string(rest);
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
  return Decode(http_->Get(WithQuery(path, query)), host_, port_);
}

Result<ApiClient::Response, ApiError> ApiClient::Post(const std::string& path,
                                                      const core::Json& body) {
  http_->set_read_timeout(std::chrono::seconds(30));
  return Decode(http_->Post(path, core::SerializeJson(body), "application/json"), host_, port_);
}

Result<ApiClient::Response, ApiError> ApiClient::Put(const std::string& path,
                                                     const core::Json& body) {
  http_->set_read_timeout(std::chrono::seconds(30));
  return Decode(http_->Put(path, core::SerializeJson(body), "application/json"), host_, port_);
}

Result<ApiClient::Response, ApiError> ApiClient::Delete(const std::string& path) {
  http_->set_read_timeout(std::chrono::seconds(30));
  return Decode(http_->Delete(path), host_, port_);
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
  if (!res) return Unexpected(TransportError(res.error(), host_, port_));
  if (status != 200) {
    httplib::Response copy = *res;
    copy.body = error_body;
    httplib::Result synthetic(std::make_unique<httplib::Response>(std::move(copy)),
                              httplib::Error::Success);
    auto decoded = Decode(synthetic, host_, port_);
    if (!decoded) return Unexpected(decoded.error());
    return Unexpected(
        ApiError{status, "bad_response", "unexpected status " + std::to_string(status)});
  }
  return {};
}

}  // namespace stele::cli
