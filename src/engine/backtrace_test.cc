// Backtraces of native workflows (EngineOptions::store_backtraces): the
// call site of the operation a workflow waits on is stored for the
// versions it wrote, once (a replay records nothing), and nothing at all
// when the option is off.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "core/ids.h"
#include "engine/sdk_test_util.h"
#include "stele/stele.h"
#include "storage/requests.h"

namespace stele {
namespace {

using testing::OkOrDie;
using testing::WaitForState;

constexpr const char* kApprove = "test:trace/human.approve";
constexpr const char* kFlow = "test:trace/wf.flow";

std::atomic<int> g_call_line{0};

Task<Json> AskForApproval(WorkflowContext& ctx, Json params) {
  (void)co_await ctx.random_u64(0, 10);  // batched: written with the call below
  g_call_line = __LINE__ + 1;
  auto decision = co_await ctx.call(kApprove, params);
  co_return decision.value;
}

class BacktraceTest : public testing::PoolEngineTest {
 protected:
  // Runs one AskForApproval to its end (unloaded while it waits, replayed
  // after the stub) and returns its id.
  std::string RunOne(bool store_backtraces) {
    EngineOptions options = Options();
    options.workflow_keep_warm = false;
    options.store_backtraces = store_backtraces;
    Engine& engine = Open(options);
    EXPECT_TRUE(engine.RegisterStub(kApprove));
    EXPECT_TRUE(engine.RegisterWorkflow(kFlow, AskForApproval));
    EXPECT_TRUE(engine.Start());
    const std::string id = OkOrDie(engine.Submit(kFlow, Params("order-7")), "submit");
    EXPECT_TRUE(WaitForState(engine, id, "BlockedByJoinSet"));
    EXPECT_TRUE(engine.Stub(id + ".o:1-approve_1", ExecutionResult::Ok(true)));
    EXPECT_EQ(Await(id).value, Json(true));
    return id;
  }
  Result<core::BacktraceInfo, storage::DbErrorRead> Backtrace(const std::string& id,
                                                              storage::BacktraceFilter filter) {
    auto parsed = core::ExecutionId::Parse(id);
    EXPECT_TRUE(parsed.has_value()) << id;
    return api_->GetBacktrace(*parsed, filter);
  }
};

TEST_F(BacktraceTest, TheBlockingCallSiteIsStoredOnce) {
  const std::string id = RunOne(true);
  // The run stores its backtrace beside its result, not before it: the
  // result may be seen first.
  auto last = Backtrace(id, storage::BacktraceFilter::Last());
  for (int i = 0; i < 200 && !last; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    last = Backtrace(id, storage::BacktraceFilter::Last());
  }
  ASSERT_TRUE(last) << last.error().ToString();
  ASSERT_EQ(last->wasm_backtrace.frames.size(), 1u);
  const core::FrameInfo& frame = last->wasm_backtrace.frames[0];
  EXPECT_EQ(frame.module, "native_workflows");
  EXPECT_NE(frame.func_name.find("AskForApproval"), std::string::npos) << frame.func_name;
  ASSERT_EQ(frame.symbols.size(), 1u);
  ASSERT_TRUE(frame.symbols[0].file.has_value());
  EXPECT_NE(frame.symbols[0].file->find("backtrace_test.cc"), std::string::npos)
      << *frame.symbols[0].file;
  EXPECT_EQ(frame.symbols[0].line, static_cast<uint32_t>(g_call_line.load()));
  EXPECT_EQ(last->component_id.name, "native_workflows");
  // The range the call wrote: the batched Persist, the join set, the
  // child and the JoinNext, right after Created and Locked.
  EXPECT_EQ(last->version_min_including, core::Version(2));
  EXPECT_EQ(last->version_max_excluding, core::Version(6));
  // The replay after the stub recorded nothing more.
  auto first = Backtrace(id, storage::BacktraceFilter::First());
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(*first, *last);
  EXPECT_TRUE(Backtrace(id, storage::BacktraceFilter::Specific(core::Version(4))));
}

TEST_F(BacktraceTest, NothingIsStoredWhenTheOptionIsOff) {
  const std::string id = RunOne(false);
  auto last = Backtrace(id, storage::BacktraceFilter::Last());
  ASSERT_FALSE(last);
  EXPECT_TRUE(last.error().IsNotFound()) << last.error().ToString();
}

}  // namespace
}  // namespace stele
