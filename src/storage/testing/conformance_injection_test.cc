// SQL injection: user data reaches SQL only as bound parameters of prepared
// statements (docs/reliability.md "SQL injection review"). Values built to
// break string-built SQL — quotes, `;--`, `' OR 1=1`, backslashes, NULs,
// `%`/`_` LIKE wildcards, non-ASCII — are stored and read back exactly, and
// the store holds exactly what was written (nothing dropped, nothing
// matched by a smuggled condition). The identifiers that go into SQL
// (ffqns, execution ids, join-set and component names) are parsed first:
// hostile text never becomes one.
#include <string>
#include <vector>

#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

std::vector<std::string> HostileStrings() {
  return {"'",
          "\"",
          "'; DROP TABLE t_state;--",
          "\"; DROP TABLE t_execution_log;--",
          "' OR 1=1 --",
          "' OR '1'='1",
          "x' UNION SELECT * FROM t_state --",
          "\\",
          "\\'",
          "back\\slash\\\\n",
          std::string("nul\0inside", 10),
          std::string(1, '\0'),
          "%",
          "_",
          "$1",
          "?",
          "?1 ?2",
          "E'\\x00'",
          "\u00e9\u4e2d\U0001F600",
          "line\nbreak\r\ttab",
          ");--",
          "*/ /*"};
}

class InjectionTest : public ConformanceTest {};
STELE_INSTANTIATE_CONFORMANCE_SUITE(InjectionTest);

TEST_P(InjectionTest, HostileIdentifiersAreRejectedBeforeTheStore) {
  for (const std::string& s : HostileStrings()) {
    if (s == "_") continue;  // a legal character of these names (and harmless in SQL)
    EXPECT_FALSE(core::FunctionFqn::Parse("ns:pkg/ifc." + s)) << s;
    EXPECT_FALSE(core::FunctionFqn::Parse(s)) << s;
    EXPECT_FALSE(ExecutionId::Parse("E_" + s)) << s;
    EXPECT_FALSE(ExecutionId::Parse(NewId().ToString() + s)) << s;
    EXPECT_FALSE(core::JoinSetId::Create(core::JoinSetKind::kNamed, s)) << s;
    EXPECT_FALSE(core::ComponentId::IsValidName(s)) << s;
  }
}

// PostgreSQL cannot take U+0000 in a value: its `json` columns store its
// JSON escape, but extracting text from such a document fails (SQLSTATE
// 22P05), and every event row does (the generated history_event_type
// column of t_execution_log). There a value containing a NUL is refused
// with ValidationFailed (the API's 400) and nothing is written; the other
// backends store it.
bool HasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

TEST_P(InjectionTest, NulInValuesIsStoredOrRefusedCleanly) {
  const ExecutionId id = NewId();
  CreateRequest req = CreateReq(id, kT0);
  req.params = core::Json::array({std::string("a\0b", 3)});
  auto created = db().Create(req);
  if (created) {
    EXPECT_EQ(Must(db().GetCreateRequest(id)).params, req.params);
    return;
  }
  EXPECT_EQ(GetParam().name, "postgres") << ErrorText(created.error());
  EXPECT_TRUE(created.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kValidationFailed))
      << ErrorText(created.error());
  auto state = db().GetPendingState(id);
  ASSERT_FALSE(state) << "nothing written";
  EXPECT_TRUE(state.error().IsNotFound());
}

TEST_P(InjectionTest, HostileValuesRoundTripExactly) {
  std::vector<std::string> hostile;
  for (const std::string& s : HostileStrings()) {
    if (!HasNul(s)) hostile.push_back(s);  // NUL: the test above
  }
  core::Json params = core::Json::array();
  core::Json object = core::Json::object();
  for (size_t i = 0; i < hostile.size(); ++i) {
    params.push_back(hostile[i]);
    object[hostile[i]] = hostile[(i + 1) % hostile.size()];  // hostile keys too
  }
  params.push_back(object);

  // One execution per hostile value (as its only param and in its
  // metadata), one with all of them, and a bystander.
  const ExecutionId bystander = NewId();
  Must(db().Create(CreateReq(bystander, kT0)));
  std::vector<std::pair<ExecutionId, CreateRequest>> created;
  for (size_t i = 0; i <= hostile.size(); ++i) {
    CreateRequest req = CreateReq(NewId(), kT0);
    req.params = i < hostile.size() ? core::Json::array({hostile[i]}) : params;
    if (i < hostile.size()) req.metadata.entries[hostile[i]] = hostile[i];
    Must(db().Create(req));
    created.emplace_back(req.execution_id, req);
  }
  for (const auto& [id, req] : created) {
    const CreateRequest stored = Must(db().GetCreateRequest(id));
    EXPECT_EQ(stored.params, req.params) << id.ToString();
    EXPECT_EQ(stored.metadata, req.metadata) << id.ToString();
    const ExecutionLog log = Must(db().Get(id));
    ASSERT_THAT(log.events, SizeIs(1));
    const auto& event = std::get<core::Created>(log.events[0].event);
    EXPECT_EQ(event.params, req.params);
  }

  // Results: ok and err values, finished through the normal path.
  const Runner runner = Runner::New();
  for (size_t i = 0; i <= hostile.size(); ++i) {
    const ExecutionId id = NewId();
    const Version next = CreateLocked(db(), id, kT0, runner, kT0 + 10s);
    const core::Json value = i < hostile.size() ? core::Json(hostile[i]) : object;
    const auto result = i % 2 == 0 ? OkResult(value) : ErrResult(value);
    Must(db().Append(id, next, FinishedReq(kT0, result)));
    const ExecutionLog log = Must(db().Get(id));
    EXPECT_EQ(std::get<core::Finished>(log.events.back().event).result, result) << id.ToString();
  }

  // The store holds exactly these executions (and the bystander, intact).
  auto listed = Must(db().ListExecutions(
      std::nullopt, false,
      core::Pagination<std::optional<ExecutionId>>::OlderThan(1000, std::nullopt, false)));
  EXPECT_THAT(listed, SizeIs(2 * created.size() + 1));
  EXPECT_EQ(Must(db().GetPendingState(bystander)), PendingAtState(kT0, std::nullopt));
  EXPECT_THAT(IdsOf(Must(db().ListExecutions(FfqnB(), false, core::ExecutionListPagination{}))),
              ElementsAre());
}

}  // namespace
}  // namespace stele::storage::conformance
