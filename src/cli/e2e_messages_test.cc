// End-to-end tests of `stele execution send`, `values` and `value` through
// the real `stele` binary (e2e_fixture.h), on the example wasm workflow
// human_approval while it waits for its approval: messages are delivered
// (idempotently with --message-id), refused with the documented exit codes
// (2 bad input, 3 unknown execution, 5 conflict or finished), and shown
// among its responses. Skipped when the wasm guests were not built.
#include "e2e_fixture.h"

namespace {

class E2eMessagesTest : public E2eTest {};

TEST_F(E2eMessagesTest, SendDeliversOnceAndRefusesWhatItMust) {
  START_SERVER(Approval());
  const std::string id = Submit(kExpense, R"([120, "Ada"])");
  ASSERT_TRUE(WaitForStatus(id, "blocked_by_join_set")) << server_.Log();

  CliRun sent = Cli({"execution", "send", id, "orders/eu", R"({"n": 1})", "--message-id", "m-1"});
  EXPECT_EQ(sent.code, 0) << sent.out << sent.err;
  EXPECT_EQ(sent.out, "m-1\n");
  // The same id and body: the same answer, delivered once.
  CliRun again = Cli({"execution", "send", id, "orders/eu", R"({"n": 1})", "--message-id", "m-1"});
  EXPECT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_EQ(again.out, "m-1\n");
  CliRun other = Cli({"execution", "send", id, "orders/eu", R"({"n": 2})", "--message-id", "m-1"});
  EXPECT_EQ(other.code, 5) << other.out << other.err;
  // Without an id the server makes one; --json shows the whole answer.
  json fresh = CliJson({"execution", "send", id, "orders", "null"});
  EXPECT_EQ(fresh["delivered_now"], true) << fresh.dump();
  EXPECT_EQ(fresh["message_id"].get<std::string>().rfind("msg_", 0), 0u) << fresh.dump();

  EXPECT_EQ(Cli({"execution", "send", id, "bad_channel", "1"}).code, 2);
  EXPECT_EQ(Cli({"execution", "send", id, "orders", "{not json"}).code, 2);
  EXPECT_EQ(Cli({"execution", "send", id, "orders", "1", "--message-id", "a b"}).code, 2);
  EXPECT_EQ(Cli({"execution", "send", "E_01KBNHM5FQW81KP5Y3XMNX31K4", "orders", "1"}).code, 3);

  json responses = CliJson({"execution", "responses", id, "--length", "100"});
  size_t messages = 0;
  for (const json& r : responses["responses"]) {
    messages += r["response"]["event"]["event"]["type"] == "message_received";
  }
  EXPECT_EQ(messages, 2u) << responses.dump();

  // Nothing published: an empty list, and no value (exit 3).
  CliRun values = Cli({"execution", "values", id});
  EXPECT_EQ(values.code, 0) << values.err;
  EXPECT_EQ(values.out, "");
  EXPECT_EQ(Cli({"execution", "value", id, "progress"}).code, 3);

  // Finished: a new message is refused (exit 5); the old id still answers.
  json derived = CliJson({"execution", "list", "--show-derived", "--id-prefix", id + "."});
  ASSERT_EQ(derived["executions"].size(), 1u) << derived.dump();
  const std::string child = derived["executions"][0]["execution_id"].get<std::string>();
  ASSERT_EQ(Cli({"execution", "stub", child, R"({"ok": true})"}).code, 0);
  ASSERT_EQ(Cli({"execution", "result", id, "--timeout", "30"}).code, 0) << server_.Log();
  CliRun late = Cli({"execution", "send", id, "orders", "2"});
  EXPECT_EQ(late.code, 5) << late.out << late.err;
  EXPECT_NE(late.err.find("already_finished"), std::string::npos) << late.err;
  EXPECT_EQ(Cli({"execution", "send", id, "orders/eu", R"({"n": 1})", "--message-id", "m-1"}).code,
            0);
}

// The value of the sample `name` (the whole series name with its labels)
// in a /metrics page; -1 when absent.
double MetricOf(const std::string& page, const std::string& name) {
  const std::string line = "\n" + name + " ";
  const size_t at = page.find(line);
  if (at == std::string::npos) return -1;
  return std::stod(page.substr(at + line.size()));
}

// await_approval publishes "waiting", takes one message on "approvals" and
// publishes "approved": a value wait wakes on the publish, and the
// counters of messages sent and consumed, and of cron ticks, move.
TEST_F(E2eMessagesTest, AValueWaitEndsOnThePublishAndTheCountersMove) {
  Options options = NoExec();
  options.await_approval = true;
  START_SERVER(options);
  auto metrics = [&] {
    auto page = Http().Get("/metrics");
    return page && page->status == 200 ? page->body : std::string();
  };
  const std::string before = metrics();
  EXPECT_EQ(MetricOf(before, "stele_messages_sent_total"), 0) << before;
  EXPECT_EQ(MetricOf(before, "stele_messages_consumed_total"), 0) << before;

  const std::string id = Submit("demo:approvals/api.await-approval", "[600000]");
  json waiting = CliJson({"execution", "value", id, "stage", "--timeout", "30"});
  EXPECT_EQ(waiting["value"], "waiting") << waiting.dump();
  // Nothing newer yet: a short wait answers 408 (exit 7, docs/cli.md).
  const std::string after = std::to_string(waiting["version"].get<int64_t>());
  CliRun none =
      Cli({"execution", "value", id, "stage", "--after-version", after, "--timeout", "1"});
  EXPECT_EQ(none.code, 7) << none.out << none.err;

  ASSERT_EQ(Cli({"execution", "send", id, "approvals", R"({"by": "ann"})"}).code, 0);
  json approved =
      CliJson({"execution", "value", id, "stage", "--after-version", after, "--timeout", "30"});
  EXPECT_EQ(approved["value"], "approved") << approved.dump();
  ASSERT_EQ(Cli({"execution", "result", id, "--timeout", "30"}).code, 0) << server_.Log();
  const std::string page = metrics();
  EXPECT_EQ(MetricOf(page, "stele_messages_sent_total"), 1) << page;
  EXPECT_EQ(MetricOf(page, "stele_messages_consumed_total"), 1) << page;

  // A schedule of every second fires (the ticker's counter moves).
  EXPECT_EQ(MetricOf(page, "stele_cron_ticks_total{outcome=\"fired\"}"), 0) << page;
  ASSERT_EQ(Cli({"schedule", "create", "each-second", "* * * * * *",
                 "demo:approvals/api.await-approval", "[0]"})
                .code,
            0);
  bool fired = false;
  for (int i = 0; i < 300 && !fired; ++i) {
    fired = MetricOf(metrics(), "stele_cron_ticks_total{outcome=\"fired\"}") >= 1;
    if (!fired) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(fired) << metrics();
}

}  // namespace
