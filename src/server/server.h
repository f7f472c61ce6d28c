// Server: the composition root of `stele server run` — opens the storage
// pool, builds the function registry from the loaded components, runs one
// executor::ExecTask per component that has a worker, the expired-timers
// watcher and the HTTP/JSON API (docs/api.md), plus a second listener for
// the web UI when [api] ui_listen is set (docs/ui.md).
//
// Shutdown (Stop, idempotent): stop accepting HTTP, end follow streams and
// result waits, stop the executors (they unlock what they hold), stop the
// watcher, close the pool — in that order.
//
// Threading: Start/Stop/Wait from one controlling thread (Stop may also be
// called from another thread while Wait blocks). HTTP connections are
// served by the event-driven layer of src/http (no thread per
// connection); handlers run on the worker pools of ServerImpl. Ownership: the Server owns
// everything it starts; the Clock (ServerHooks::clock) is shared.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "server/components.h"
#include "server/config.h"
#include "storage/db_pool.h"

namespace stele::server {

// Seams for in-process tests.
struct ServerHooks {
  SharedClock clock = nullptr;  // default: SystemClock
  // Components added to those of the config (e.g. an in-process activity).
  std::vector<LoadedComponent> extra_components = {};
  // How long /metrics reuses its database figures (executions by state,
  // executor queues) before reading them again; 0 reads on every scrape.
  std::chrono::milliseconds metrics_snapshot_max_age = std::chrono::seconds(5);
};

class ServerImpl;

class Server {
 public:
  // Opens the database, starts executors, the watcher and the listener.
  // Errors are human-readable and name what failed.
  static Result<std::unique_ptr<Server>, std::string> Start(ServerConfig config,
                                                            std::vector<LoadedComponent> components,
                                                            ServerHooks hooks = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound TCP port (useful when the config says port 0).
  int port() const;
  // The port of the separate web UI listener ([api] ui_listen), or 0.
  int ui_port() const;
  // Blocks until Stop() is called (from another thread or a signal watcher).
  void Wait();
  void Stop();
  // For tests: the pool the server writes to.
  storage::DbPool& pool();

 private:
  explicit Server(std::unique_ptr<ServerImpl> impl);
  std::unique_ptr<ServerImpl> impl_;
};

}  // namespace stele::server
