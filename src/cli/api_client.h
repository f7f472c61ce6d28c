// ApiClient: the CLI's view of the server's HTTP/JSON API (docs/api.md).
//
// Every call returns the decoded JSON body (core::Json: object keys keep the
// server's order, so a result prints as the workflow returned it) of a 2xx response, or an ApiError
// that says whether the server was unreachable (status 0), answered with an
// error document {"error": {"kind", "message"}}, or answered something that
// is not the API's JSON. The bearer token, when set, goes on every request.
//
// Threading: one ApiClient per thread (httplib::Client is not thread-safe).
// Ownership: owns its HTTP connection.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "core/json.h"

namespace httplib {
class Client;
}

namespace stele::cli {

struct ApiError {
  int status = 0;    // HTTP status; 0 when no response arrived
  std::string kind;  // the server's error kind, or "connection" / "bad_response"
  std::string message;
};

// Query parameters in order; values are percent-encoded by the client.
using Query = std::vector<std::pair<std::string, std::string>>;

class ApiClient {
 public:
  // `api_url` was validated by ParseArgs (scheme://host[:port]).
  ApiClient(const std::string& api_url, std::optional<std::string> token);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  struct Response {
    int status = 0;
    core::Json body;
  };

  // `read_timeout` bounds the wait for the response (long polls pass more).
  Result<Response, ApiError> Get(const std::string& path, const Query& query = {},
                                 std::chrono::seconds read_timeout = std::chrono::seconds(30));
  Result<Response, ApiError> Post(const std::string& path, const core::Json& body);
  Result<Response, ApiError> Put(const std::string& path, const core::Json& body);
  Result<Response, ApiError> Delete(const std::string& path);

  // Reads a Server-Sent Events stream; `on_data` gets the `data:` payload of
  // each event and returns false to stop. Returns when the stream ends, the
  // callback stops it, or `idle_timeout` passes without any byte.
  Result<void, ApiError> Stream(const std::string& path,
                                const std::function<bool(const std::string& data)>& on_data,
                                std::chrono::seconds idle_timeout);

  // Percent-encodes one path segment (ids contain '.' and ':').
  static std::string EncodeSegment(const std::string& segment);

 private:
  std::unique_ptr<httplib::Client> http_;
  std::string host_;  // of the API URL, to explain connection failures
  int port_ = 0;
};

}  // namespace stele::cli
