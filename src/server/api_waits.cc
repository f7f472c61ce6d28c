// Requests that wait without holding a thread (docs/architecture.md,
// "HTTP"): result and value waits start on a worker, then sleep as a
// service AsyncWait (storage watch + timer) until it answers through the
// Responder, the client goes away (abandoned: its watch is released) or
// the server stops (stop_wait: 503 shutting down).
#include <utility>

#include "server/server_impl.h"

namespace stele::server {

void SendAnswer(const http::ResponderPtr& out, const Result<core::Json, api::ApiError>& answer) {
  http::Response res;
  if (answer) {
    api::ReplyJson(res, 200, *answer);
  } else {
    api::ReplyError(res, answer.error());
  }
  out->Send(std::move(res));
}

http::Router::AsyncHandler OnWorkersAsync(ServerImpl& d, WaitStarter start) {
  return [&d, start](http::RequestPtr req, http::ResponderPtr out) {
    auto run = [&d, start, req, out] {
      try {
        start(d, req, out);
      } catch (...) {
        SendAnswer(out, Unexpected(api::ApiError{500, "internal", "internal error"}));
      }
    };
    if (!d.workers->Post(std::move(run))) {
      SendAnswer(out, Unexpected(api::ShuttingDown("the server is shutting down")));
    }
  };
}

std::shared_ptr<void> AcquireWaiterSlot(ServerImpl& d) {
  if (!TryAcquireWaiter(d)) return nullptr;
  return std::shared_ptr<void>(new char(0), [&d](void* slot) {
    delete static_cast<char*>(slot);
    ReleaseWaiter(d);
  });
}

service::PostFn PostToWorkers(ServerImpl& d) {
  return [&d](std::function<void()> task) { return d.workers->Post(std::move(task)); };
}

void AbandonWithClient(const http::ResponderPtr& out,
                       const std::shared_ptr<service::AsyncWait>& wait) {
  // Weak: the wait's callback holds the Responder, which holds this.
  std::weak_ptr<service::AsyncWait> weak = wait;
  out->OnAbandoned([weak] {
    if (auto live = weak.lock()) live->Abandon();
  });
}

}  // namespace stele::server
