// GET /v1/executions/{id}/follow (docs/api.md): Server-Sent Events,
// `event: state` with the pending state on every change, then `event:
// finished` with the result, and the stream ends. A stream holds no thread:
// each round reads the state on `workers`, writes what changed, and then
// waits for the result without a thread (ExecutionService::
// WaitForResultAsync) for at most kRoundWait, after which the next round
// reads the state again (locks and unlocks have no watch to wake it).
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "core/json_codec.h"
#include "server/api_ops.h"

namespace stele::server::api {

namespace {

constexpr std::chrono::milliseconds kRoundWait{200};

// One stream. Rounds run one at a time, each started by the end of the
// previous one (a written chunk, a finished wait); Abandon may come from
// the connection's I/O thread at any moment. The last owner is the wait or
// the write in flight: when the client goes, those are dropped and the
// stream is destroyed, releasing its slot of [api] max_waiters.
class FollowStream : public std::enable_shared_from_this<FollowStream> {
 public:
  FollowStream(ServerImpl& d, http::ResponderPtr out, std::string execution_id)
      : d_(d),
        out_(std::move(out)),
        execution_id_(std::move(execution_id)),
        deadline_(std::chrono::steady_clock::now() + d.config.api.max_follow) {}
  ~FollowStream() {
    if (slot_) --d_.follow_streams;
  }
  FollowStream(const FollowStream&) = delete;
  FollowStream& operator=(const FollowStream&) = delete;

  // The first round, on a worker: an unknown execution or a full house is
  // an ordinary error response; otherwise the stream starts.
  void Open() {
    http::Response res;
    auto info = d_.service->Get(execution_id_);
    if (!info) {
      ReplyError(res, FromService(info.error()));
      return out_->Send(std::move(res));
    }
    slot_ = AcquireWaiterSlot(d_);
    if (!slot_) {
      ReplyError(res, Overloaded("too many waiting requests (the limit is " +
                                 std::to_string(d_.config.api.max_waiters) +
                                 ", [api] max_waiters); retry later"));
      return out_->Send(std::move(res));
    }
    ++d_.follow_streams;
    execution_id_ = info->execution_id.ToString();
    std::weak_ptr<FollowStream> weak = weak_from_this();
    out_->OnAbandoned([weak] {
      if (auto self = weak.lock()) self->Abandon();
    });
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("Content-Type", "text/event-stream");
    out_->StartStream(std::move(res));
    Round();
  }

 private:
  void PostRound() {
    auto self = shared_from_this();
    if (!d_.workers->Post([self] { self->Round(); })) End();
  }

  void Round() {
    if (Abandoned() || d_.stopping || std::chrono::steady_clock::now() > deadline_) return End();
    auto current = d_.service->Get(execution_id_);
    if (!current) {
      return WriteThen("event: error\ndata: " +
                           core::SerializeJson({{"message", current.error().message}}) + "\n\n",
                       /*last=*/true);
    }
    std::string chunk;
    std::string text = core::SerializeJson(PendingStateToJson(current->pending_state));
    if (text != last_state_) {
      last_state_ = text;
      chunk = "event: state\ndata: " + text + "\n\n";
    }
    if (current->result) {
      core::Json data = {{"execution_id", execution_id_},
                         {"result", ResultToJson(*current->result)}};
      chunk += "event: finished\ndata: " + core::SerializeJson(data) + "\n\n";
      return WriteThen(std::move(chunk), /*last=*/true);
    }
    if (chunk.empty()) return Wait();
    WriteThen(std::move(chunk), /*last=*/false);
  }

  // Writes `chunk`; then ends the stream (`last`, or the client is gone)
  // or waits for the next round.
  void WriteThen(std::string chunk, bool last) {
    auto self = shared_from_this();
    out_->Write(std::move(chunk), [self, last](bool written) {
      if (!written || last) return self->End();
      self->Wait();
    });
  }

  // Wakes at once when the execution finishes, else after kRoundWait; a
  // stopping server cancels it (d.stop_wait). Any outcome starts the next
  // round, which reads the state and the result itself.
  void Wait() {
    auto self = shared_from_this();
    auto started = d_.service->WaitForResultAsync(
        execution_id_, kRoundWait, d_.stop_wait, PostToWorkers(d_),
        [self](Result<core::SupportedFunctionReturnValue, service::ServiceError>) {
          self->PostRound();
        });
    if (!started) return End();
    std::lock_guard lock(mu_);
    wait_ = *started;
    if (abandoned_) (*started)->Abandon();
  }

  void Abandon() {
    std::shared_ptr<service::AsyncWait> wait;
    {
      std::lock_guard lock(mu_);
      abandoned_ = true;
      wait = wait_.lock();
    }
    if (wait) wait->Abandon();
  }

  bool Abandoned() {
    std::lock_guard lock(mu_);
    return abandoned_;
  }

  void End() { out_->EndStream(); }

  ServerImpl& d_;
  const http::ResponderPtr out_;
  std::string execution_id_;
  const std::chrono::steady_clock::time_point deadline_;
  std::shared_ptr<void> slot_;  // of [api] max_waiters, once open
  std::string last_state_;      // touched by rounds only, one at a time
  std::mutex mu_;
  bool abandoned_ = false;  // guarded by mu_
  // The latest wait, weak: its callback holds this stream.
  std::weak_ptr<service::AsyncWait> wait_;  // guarded by mu_
};

}  // namespace

http::Router::AsyncHandler FollowHandler(ServerImpl& d) {
  return [&d](http::RequestPtr req, http::ResponderPtr out) {
    auto stream = std::make_shared<FollowStream>(d, out, PathSegment(*req));
    if (!d.workers->Post([stream] { stream->Open(); })) {
      http::Response res;
      ReplyError(res, ShuttingDown("the server is shutting down"));
      out->Send(std::move(res));
    }
  };
}

}  // namespace stele::server::api
