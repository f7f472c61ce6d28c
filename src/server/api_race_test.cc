// Races through the HTTP API, in process (api_test_fixture.h): concurrent
// stubs of one child (equal results: all succeed, one recorded; different
// results: exactly one wins, the others get 409), a cancel racing an
// activity that is finishing, and a cancel racing a stub. Whoever wins, the
// log holds exactly one Finished event, the recorded result is the
// winner's, and a stubbed child answers its parent exactly once.
//
// Each race starts its requests together (a latch, on connections opened
// beforehand) and is repeated a few rounds; which side wins varies from run
// to run, so the assertions hold for every outcome.
#include <chrono>
#include <functional>
#include <iostream>
#include <latch>
#include <map>
#include <optional>
#include <thread>

#include "server/api_test_fixture.h"

namespace stele::server {
namespace {

// The outcome a cancel answered: its 200 body's "outcome" ("cancelled"),
// or "already_finished" for the 409 of an execution that finished otherwise.
std::string CancelOutcomeOf(const httplib::Result& reply) {
  if (!reply) return "no reply";
  if (reply->status == 409 && reply->body.find("\"already_finished\"") != std::string::npos) {
    return "already_finished";
  }
  if (reply->status != 200) return "HTTP " + std::to_string(reply->status) + ": " + reply->body;
  auto body = core::ParseJson(reply->body);
  if (!body || !body->is_object()) return "malformed: " + reply->body;
  return body->value("outcome", "");
}

using namespace testing;  // NOLINT: the fixture's helpers
using core::Json;
using ::testing::AnyOf;
using ::testing::SizeIs;

constexpr int kRacers = 8;
constexpr int kRounds = 5;

class ApiRaceTest : public ApiTest {
 protected:
  // A client with its connection already open, so that the raced requests
  // leave at the latch rather than after a connect.
  std::unique_ptr<httplib::Client> Racer() {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    c->set_read_timeout(30, 0);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);  // else a PUT's body waits ~40 ms for a delayed ACK
    auto warm = c->Get("/healthz");
    EXPECT_TRUE(warm && warm->status == 200);
    return c;
  }

  // Runs `requests[i]` on thread i, all released together; returns the replies.
  std::vector<httplib::Result> Race(
      std::vector<std::function<httplib::Result(httplib::Client&)>> requests) {
    std::vector<std::unique_ptr<httplib::Client>> clients;
    for (size_t i = 0; i < requests.size(); ++i) clients.push_back(Racer());
    std::vector<std::optional<httplib::Result>> replies(requests.size());
    std::latch start(static_cast<std::ptrdiff_t>(requests.size()));
    std::vector<std::thread> threads;
    for (size_t i = 0; i < requests.size(); ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        replies[i] = requests[i](*clients[i]);
      });
    }
    for (auto& t : threads) t.join();
    std::vector<httplib::Result> out;
    for (auto& r : replies) out.push_back(std::move(*r));
    return out;
  }

  static httplib::Result PutJson(httplib::Client& c, const std::string& path, const Json& body) {
    return c.Put(path.c_str(), core::SerializeJson(body), "application/json");
  }

  // How many events of `id` are Finished, and whether the last one is.
  std::pair<size_t, bool> FinishedEvents(const std::string& id) {
    Json events = Body(Get("/v1/executions/" + id + "/events?length=1000"))["events"];
    size_t finished = 0;
    for (const auto& e : events) finished += e["event"].contains("finished") ? 1 : 0;
    bool last = !events.empty() && events.back()["event"].contains("finished");
    return {finished, last};
  }

  // The child's result, once its parent got the response (exactly one).
  void ExpectOneResponse(const core::ExecutionIdDerived& child) {
    std::string parent = child.SplitToParts().first.ToString();
    Json responses = Body(Get("/v1/executions/" + parent + "/responses"));
    EXPECT_THAT(responses["responses"], SizeIs(1)) << responses.dump();
  }
};

TEST_F(ApiRaceTest, ConcurrentEqualStubsAllSucceedAndRecordOneResult) {
  for (int round = 0; round < kRounds; ++round) {
    core::ExecutionIdDerived child = ParentWithStubChild();
    const std::string path = "/v1/executions/" + child.ToString() + "/stub";
    const Json body = {{"result", {{"ok", "approved"}}}};
    std::vector<std::function<httplib::Result(httplib::Client&)>> requests(
        kRacers, [&](httplib::Client& c) { return PutJson(c, path, body); });
    auto replies = Race(requests);
    for (const auto& r : replies) {
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 200) << "round " << round << ": " << r->body;
    }
    EXPECT_EQ(Body(Get("/v1/executions/" + child.ToString()))["result"],
              Json({{"ok", "approved"}}));
    EXPECT_EQ(FinishedEvents(child.ToString()), std::make_pair(size_t{1}, true));
    ExpectOneResponse(child);
  }
}

TEST_F(ApiRaceTest, ConcurrentDifferentStubsExactlyOneWins) {
  for (int round = 0; round < kRounds; ++round) {
    core::ExecutionIdDerived child = ParentWithStubChild();
    const std::string path = "/v1/executions/" + child.ToString() + "/stub";
    std::vector<std::function<httplib::Result(httplib::Client&)>> requests;
    for (int i = 0; i < kRacers; ++i) {
      requests.push_back([path, i](httplib::Client& c) {
        return PutJson(c, path, {{"result", {{"ok", "v" + std::to_string(i)}}}});
      });
    }
    auto replies = Race(requests);
    int winners = 0;
    std::string winner;
    for (int i = 0; i < kRacers; ++i) {
      ASSERT_TRUE(replies[i]);
      EXPECT_THAT(replies[i]->status, AnyOf(200, 409)) << replies[i]->body;
      if (replies[i]->status == 200) {
        ++winners;
        winner = "v" + std::to_string(i);
      } else {
        EXPECT_EQ(ErrorKind(replies[i]), "conflict");
      }
    }
    ASSERT_EQ(winners, 1) << "round " << round;
    EXPECT_EQ(Body(Get("/v1/executions/" + child.ToString()))["result"], Json({{"ok", winner}}));
    EXPECT_EQ(FinishedEvents(child.ToString()), std::make_pair(size_t{1}, true));
    ExpectOneResponse(child);
  }
}

// The activity returns ok("done") while the cancel is written: either the
// cancel wins (the run's append loses) or the result does (the cancel
// reports already_finished) — never both, never neither.
TEST_F(ApiRaceTest, CancelRacingAFinishingActivity) {
  std::map<std::string, int> outcomes;
  for (int round = 0; round < 2 * kRounds; ++round) {
    std::string id = Submit({{"ffqn", kGate}});
    auto eid = *core::ExecutionId::Parse(id);
    activities_->WaitForGate(eid);
    // Staggered, alternately on either side, so that over the rounds each
    // side gets there first (with no stagger the cancel nearly always wins).
    const auto stagger = std::chrono::microseconds(250 * (round / 2));
    const bool delay_cancel = round % 2 == 1;
    auto replies = Race({
        [&](httplib::Client&) {
          if (!delay_cancel) std::this_thread::sleep_for(stagger);
          activities_->OpenGate(eid);
          return httplib::Result(nullptr, httplib::Error::Unknown);
        },
        [&](httplib::Client& c) {
          if (delay_cancel) std::this_thread::sleep_for(stagger);
          return PutJson(c, "/v1/executions/" + id + "/cancel", Json::object());
        },
    });
    ASSERT_TRUE(replies[1]);
    std::string outcome = CancelOutcomeOf(replies[1]);
    ++outcomes[outcome];
    auto result = Get("/v1/executions/" + id + "/result?timeout=30");
    ASSERT_TRUE(result);
    ASSERT_EQ(result->status, 200) << result->body;
    Json recorded = Body(result)["result"];
    if (outcome == "cancelled") {
      EXPECT_EQ(recorded["execution_error"]["kind"], "cancelled") << recorded.dump();
    } else {
      EXPECT_EQ(outcome, "already_finished");
      EXPECT_EQ(recorded, Json({{"ok", "done"}}));
    }
    EXPECT_EQ(FinishedEvents(id), std::make_pair(size_t{1}, true)) << "round " << round;
    // Cancelling again reports the same outcome: the state did not move.
    EXPECT_EQ(CancelOutcomeOf(Put("/v1/executions/" + id + "/cancel", Json::object())), outcome);
  }
  std::cout << "cancel/finish outcomes: cancelled " << outcomes["cancelled"]
            << ", already_finished " << outcomes["already_finished"] << "\n";
}

// A stub and a cancel of the same child: the first write wins; the stub
// then gets 409 or the cancel already_finished; the parent hears once.
TEST_F(ApiRaceTest, CancelRacingAStub) {
  std::map<std::string, int> outcomes;
  for (int round = 0; round < 2 * kRounds; ++round) {
    core::ExecutionIdDerived child = ParentWithStubChild();
    const std::string id = child.ToString();
    auto replies = Race({
        [&](httplib::Client& c) {
          return PutJson(c, "/v1/executions/" + id + "/stub", {{"result", {{"ok", "approved"}}}});
        },
        [&](httplib::Client& c) {
          return PutJson(c, "/v1/executions/" + id + "/cancel", Json::object());
        },
    });
    ASSERT_TRUE(replies[0] && replies[1]);
    std::string outcome = CancelOutcomeOf(replies[1]);
    ++outcomes[outcome];
    Json recorded = Body(Get("/v1/executions/" + id))["result"];
    if (outcome == "cancelled") {
      EXPECT_EQ(replies[0]->status, 409) << replies[0]->body;
      EXPECT_EQ(recorded["execution_error"]["kind"], "cancelled") << recorded.dump();
    } else {
      EXPECT_EQ(outcome, "already_finished");
      EXPECT_EQ(replies[0]->status, 200) << replies[0]->body;
      EXPECT_EQ(recorded, Json({{"ok", "approved"}}));
    }
    EXPECT_EQ(FinishedEvents(id), std::make_pair(size_t{1}, true)) << "round " << round;
    ExpectOneResponse(child);
  }
  std::cout << "cancel/stub outcomes: cancelled " << outcomes["cancelled"] << ", already_finished "
            << outcomes["already_finished"] << "\n";
}

}  // namespace
}  // namespace stele::server
