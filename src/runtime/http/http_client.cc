#include "runtime/http/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <utility>

#include "base/result.h"
#include "core/json.h"
#include "core/json_codec.h"

namespace stele::runtime::http {

namespace {

using core::Json;

constexpr size_t kMaxHeaderBytes = 256 * 1024;

DateTime Now() {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// RAII for the libcurl handles of one request.
struct Easy {
  CURL* handle = curl_easy_init();
  curl_slist* headers = nullptr;
  ~Easy() {
    curl_slist_free_all(headers);
    if (handle != nullptr) curl_easy_cleanup(handle);
  }
};
struct Url {
  CURLU* handle = curl_url();
  ~Url() {
    if (handle != nullptr) curl_url_cleanup(handle);
  }
  std::optional<std::string> Part(CURLUPart part, unsigned flags = 0) const {
    char* value = nullptr;
    if (curl_url_get(handle, part, &value, flags) != CURLUE_OK || value == nullptr)
      return std::nullopt;
    std::string out(value);
    curl_free(value);
    return out;
  }
};

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  size_t header_bytes = 0;
  size_t max_body = 0;
  bool too_large = false;
  const CancellationToken* cancel = nullptr;
};

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (t->body.size() + n > t->max_body) {
    t->too_large = true;
    return 0;  // aborts the transfer
  }
  t->body.append(data, n);
  return n;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  t->header_bytes += n;
  if (t->header_bytes > kMaxHeaderBytes) {
    t->too_large = true;
    return 0;
  }
  std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {
    t->headers.clear();  // a new response (e.g. after 100 Continue)
    return n;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' '))
      s.remove_suffix(1);
    return s;
  };
  t->headers.emplace_back(Lower(trim(line.substr(0, colon))),
                          std::string(trim(line.substr(colon + 1))));
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->cancel != nullptr && t->cancel->IsCancelled() ? 1 : 0;
}

struct Request {
  std::string method;
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{0};
};

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}
bool IsHeaderValue(std::string_view s) {
  return std::none_of(s.begin(), s.end(),
                      [](unsigned char c) { return c == '\r' || c == '\n' || c == 0; });
}

Result<Request, std::string> ParseRequest(std::string_view text, const HttpClientConfig& config) {
  if (text.size() > kMaxRequestJsonBytes) return Unexpected(std::string("request too large"));
  auto json = core::ParseJson(text);
  if (!json || !json->is_object()) return Unexpected(std::string("request must be a JSON object"));
  Request r;
  auto method = json->find("method");
  r.method =
      method == json->end() ? "GET" : (method->is_string() ? method->get<std::string>() : "");
  if (!IsToken(r.method)) return Unexpected(std::string("`method` must be an HTTP method name"));
  auto url = json->find("url");
  if (url == json->end() || !url->is_string())
    return Unexpected(std::string("`url` (a string) is required"));
  r.url = url->get<std::string>();
  if (auto h = json->find("headers"); h != json->end()) {
    if (!h->is_object()) return Unexpected(std::string("`headers` must be an object of strings"));
    for (const auto& [name, value] : h->items()) {
      if (!IsToken(name) || !value.is_string() || !IsHeaderValue(value.get<std::string>())) {
        return Unexpected("invalid header `" + name + "`");
      }
      r.headers.emplace_back(name, value.get<std::string>());
    }
  }
  if (auto b = json->find("body"); b != json->end() && !b->is_null()) {
    if (!b->is_string()) return Unexpected(std::string("`body` must be a string"));
    r.body = b->get<std::string>();
    if (r.body.size() > config.max_request_body_bytes) {
      return Unexpected("request body over " + std::to_string(config.max_request_body_bytes) +
                        " bytes");
    }
  }
  r.timeout = config.default_timeout;
  if (auto t = json->find("timeout_ms"); t != json->end()) {
    if (!t->is_number_unsigned() || t->get<uint64_t>() == 0 ||
        t->get<uint64_t>() > 24 * 3600 * 1000) {
      return Unexpected(std::string("`timeout_ms` must be a positive integer (at most a day)"));
    }
    r.timeout = std::chrono::milliseconds(t->get<uint64_t>());
  }
  return r;
}

// Checks scheme and host of `url` against the config; returns an error text.
std::optional<std::string> CheckUrl(const std::string& url, const HttpClientConfig& config) {
  Url u;
  if (u.handle == nullptr || curl_url_set(u.handle, CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
    return "malformed url `" + url + "`";
  }
  auto scheme = u.Part(CURLUPART_SCHEME);
  if (!scheme || (*scheme != "http" && *scheme != "https"))
    return std::string("only http and https urls are allowed");
  auto host = u.Part(CURLUPART_HOST);
  auto port = u.Part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (!host || host->empty() || !port) return "url `" + url + "` has no host";
  std::string h = Lower(*host);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (!HostAllowed(config.allowed_hosts, h, std::atoi(port->c_str()))) {
    return "host `" + h + ":" + *port + "` is not on the activity's allowed_hosts";
  }
  return std::nullopt;
}

struct Response {
  long status = 0;
  Transfer transfer;
};

// Performs the request; an error is the transport error's text, or
// nullopt-with-interrupted when the cancellation token fired.
Result<Response, std::string> Perform(const Request& r,
                                      const std::optional<CancellationToken>& cancel,
                                      size_t max_body, bool* interrupted) {
  GlobalInit();
  Easy easy;
  if (easy.handle == nullptr) return Unexpected(std::string("libcurl could not create a handle"));
  Response out;
  out.transfer.max_body = max_body;
  out.transfer.cancel = cancel ? &*cancel : nullptr;
  CURL* c = easy.handle;
  curl_easy_setopt(c, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  if (r.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (r.method != "GET") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    if (r.method != "POST") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }
  for (const auto& [name, value] : r.headers) {
    std::string line = name + ": " + value;
    curl_slist* next = curl_slist_append(easy.headers, line.c_str());
    if (next == nullptr) return Unexpected(std::string("out of memory building headers"));
    easy.headers = next;
  }
  // Without this libcurl adds "Expect: 100-continue" to large bodies.
  easy.headers = curl_slist_append(easy.headers, "Expect:");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, easy.headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out.transfer);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &out.transfer);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &out.transfer);
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);

  CURLcode code = curl_easy_perform(c);
  if (code == CURLE_ABORTED_BY_CALLBACK && cancel && cancel->IsCancelled()) {
    *interrupted = true;
    return Unexpected(std::string("cancelled"));
  }
  if (out.transfer.too_large) {
    return Unexpected("response over " + std::to_string(max_body) + " bytes (or its headers over " +
                      std::to_string(kMaxHeaderBytes) + ")");
  }
  if (code != CURLE_OK) {
    return Unexpected(std::string(curl_easy_strerror(code)) +
                      (error[0] != 0 ? std::string(": ") + error : ""));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out.status);
  return out;
}

}  // namespace

Result<std::string, HttpFailure> PerformRequest(HttpState& state, std::string_view text) {
  auto fail = [](std::string message) {
    return Unexpected(HttpFailure{std::move(message), false});
  };
  auto request = ParseRequest(text, state.config);
  if (!request) return fail(request.error());
  if (state.traces.size() >= state.config.max_requests_per_attempt) {
    return fail("more than " + std::to_string(state.config.max_requests_per_attempt) +
                " HTTP requests in one attempt");
  }
  if (auto denied = CheckUrl(request->url, state.config)) return fail(*denied);

  core::HttpClientTrace trace{core::HttpRequestTrace{Now(), request->url, request->method},
                              std::nullopt};
  bool interrupted = false;
  auto response =
      Perform(*request, state.cancel, state.config.max_response_body_bytes, &interrupted);
  if (!response) {
    trace.resp = core::HttpResponseTrace{Now(), response.error()};
    state.traces.push_back(std::move(trace));
    return Unexpected(HttpFailure{
        interrupted ? "cancelled during an HTTP request" : response.error(), interrupted});
  }
  trace.resp = core::HttpResponseTrace{Now(), static_cast<uint16_t>(response->status)};
  state.traces.push_back(std::move(trace));

  Json headers = Json::array();
  for (auto& [name, value] : response->transfer.headers)
    headers.push_back(Json::array({name, value}));
  Json body = Json{{"status", response->status},
                   {"headers", std::move(headers)},
                   {"body", std::move(response->transfer.body)}};
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool HostAllowed(const std::vector<std::string>& allowed_hosts, std::string_view host, int port) {
  if (allowed_hosts.empty()) return true;
  for (const std::string& entry : allowed_hosts) {
    std::string_view pattern = entry;
    std::optional<int> want_port;
    // "host:port", but not a bare IPv6 address ("::1") nor "[::1]:80".
    if (size_t colon = pattern.rfind(':');
        colon != std::string_view::npos && pattern.find(':') == colon) {
      want_port = std::atoi(std::string(pattern.substr(colon + 1)).c_str());
      pattern = pattern.substr(0, colon);
    } else if (pattern.starts_with('[')) {
      size_t close = pattern.find(']');
      if (close == std::string_view::npos) continue;
      if (close + 1 < pattern.size() && pattern[close + 1] == ':') {
        want_port = std::atoi(std::string(pattern.substr(close + 2)).c_str());
      }
      pattern = pattern.substr(1, close - 1);
    }
    if (want_port && *want_port != port) continue;
    std::string p = Lower(pattern);
    if (p.starts_with("*.")) {
      std::string_view suffix = std::string_view(p).substr(1);  // ".example.com"
      if (host.size() > suffix.size() && host.ends_with(suffix)) return true;
    } else if (host == p) {
      return true;
    }
  }
  return false;
}

core::HttpClientTraces TakeTraces(HttpState& state) {
  if (state.traces.empty()) return std::nullopt;
  return std::exchange(state.traces, {});
}

}  // namespace stele::runtime::http
