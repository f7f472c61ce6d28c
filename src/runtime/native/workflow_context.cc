// WorkflowContext operations: each builds an Op whose body asks the replay
// engine synchronously when awaited. A nullopt from the body means the run
// was interrupted: the coroutine stays suspended and the driver unloads it.
#include "stele/workflow_context.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "core/duration.h"
#include "runtime/native/native_run.h"
#include "runtime/native/result_convert.h"

namespace stele {

namespace {

using runtime::native::NativeRun;
namespace wf = runtime::workflow;

constexpr const char* kCancelledMessage =
    "the workflow is being cancelled: clean up and return (docs/sdk.md, \"Cancelling a "
    "workflow\")";

core::HistoryEventScheduleAt InIntent(std::chrono::milliseconds d) {
  if (d.count() <= 0) return core::HistoryEventScheduleAt::Now();
  return core::HistoryEventScheduleAt::In(
      core::Duration::FromMillis(static_cast<uint64_t>(d.count())));
}

JoinNextResponse ToResponse(const wf::JoinSetResponseValue& value) {
  if (const auto* child = std::get_if<wf::ChildResponse>(&value)) {
    return {child->child_execution_id.ToString(), false, runtime::native::ToPublic(child->result)};
  }
  const auto& delay = std::get<wf::DelayResponse>(value);
  return {
      delay.delay_id.ToString(), true,
      delay.ok ? ExecutionResult::Ok() : ExecutionResult::Failed("cancelled", "delay cancelled")};
}

std::string Describe(const wf::JoinSetResponseValue& value) {
  if (const auto* child = std::get_if<wf::ChildResponse>(&value)) {
    return "child " + child->child_execution_id.ToString() + " of " + child->ffqn.ToString();
  }
  return "delay " + std::get<wf::DelayResponse>(value).delay_id.ToString();
}

// The public form of a JoinNext error on join set `js`; `requested` is
// the ffqn a join_next asked for, if any.
JoinNextError PublicJoinNextError(const wf::JoinNextError& error, const std::string& js,
                                  const std::string* requested) {
  switch (error.kind) {
    case wf::JoinNextError::Kind::kCancelled:
      return JoinNextError{JoinNextError::Kind::kCancelled, kCancelledMessage};
    case wf::JoinNextError::Kind::kFunctionMismatch:
      return JoinNextError{JoinNextError::Kind::kFunctionMismatch,
                           "expected a response of " + (requested ? *requested : "a function") +
                               ", got " +
                               (error.actual ? Describe(*error.actual) : "another response")};
    case wf::JoinNextError::Kind::kAllProcessed:
      break;
  }
  return JoinNextError{JoinNextError::Kind::kAllProcessed,
                       "every submission of " + js + " was awaited already"};
}

wf::ChildOptions ToRuntime(const ChildOptions& o) {
  auto duration = [](std::chrono::milliseconds ms) {
    return core::Duration::FromMillis(static_cast<uint64_t>(std::max<int64_t>(ms.count(), 0)));
  };
  wf::ChildOptions out;
  out.timeout = o.timeout;
  out.retry.max_retries = o.max_retries;
  if (o.backoff) out.retry.retry_exp_backoff = duration(*o.backoff);
  if (o.max_backoff) out.retry.max_backoff = duration(*o.max_backoff);
  out.retry.jitter_percent = o.jitter_percent;
  return out;
}

// The value of a call, or nullopt after an interruption (already recorded
// by the engine).
template <class T>
std::optional<T> Take(Result<T, wf::Interruption> result) {
  if (!result) return std::nullopt;
  return std::move(*result);
}

}  // namespace

const std::string& WorkflowContext::execution_id() const { return run_.execution_id(); }

Op<ExecutionResult> WorkflowContext::call(std::string_view ffqn_text, Json params,
                                          SourceLocation where) {
  return call(ffqn_text, std::move(params), ChildOptions{}, where);
}

Op<ExecutionResult> WorkflowContext::call(std::string_view ffqn_text, Json params,
                                          ChildOptions options, SourceLocation where) {
  return Op<ExecutionResult>([run = &run_, text = std::string(ffqn_text),
                              params = std::move(params), own = ToRuntime(options),
                              where]() mutable -> std::optional<ExecutionResult> {
    NativeRun::CallScope scope(*run, where);
    auto ffqn = run->ParseFfqn(text);
    if (!ffqn) return std::nullopt;
    auto result = run->run().Call(*ffqn, std::move(params), own);
    if (!result) return std::nullopt;
    return runtime::native::ToPublic(*result);
  });
}

Op<JoinSet> WorkflowContext::new_join_set(SourceLocation where) {
  return Op<JoinSet>([run = &run_, where]() -> std::optional<JoinSet> {
    NativeRun::CallScope scope(*run, where);
    auto id = run->run().CreateJoinSet();
    if (!id) return std::nullopt;
    return JoinSet(id->ToString());
  });
}

Op<Result<JoinSet, std::string>> WorkflowContext::new_join_set(std::string_view name,
                                                               SourceLocation where) {
  using R = Result<JoinSet, std::string>;
  return Op<R>([run = &run_, name = std::string(name), where]() -> std::optional<R> {
    NativeRun::CallScope scope(*run, where);
    auto id = run->run().CreateNamedJoinSet(name);
    if (!id) return std::nullopt;
    if (!*id) {
      return R(Unexpected(std::string(id->error().kind == wf::JoinSetCreateError::Kind::kInvalidName
                                          ? "invalid join set name `" + name +
                                                "`: use ASCII letters, digits, '-' and '/'"
                                          : "a join set named `" + name + "` exists already")));
    }
    return R(JoinSet((**id).ToString()));
  });
}

Op<std::string> WorkflowContext::submit(const JoinSet& join_set, std::string_view ffqn_text,
                                        Json params, SourceLocation where) {
  return submit(join_set, ffqn_text, std::move(params), ChildOptions{}, where);
}

Op<std::string> WorkflowContext::submit(const JoinSet& join_set, std::string_view ffqn_text,
                                        Json params, ChildOptions options, SourceLocation where) {
  return Op<std::string>([run = &run_, js = join_set.id(), text = std::string(ffqn_text),
                          params = std::move(params), own = ToRuntime(options),
                          where]() mutable -> std::optional<std::string> {
    NativeRun::CallScope scope(*run, where);
    auto ffqn = run->ParseFfqn(text);
    if (!ffqn) return std::nullopt;
    auto join_set_id = run->ParseJoinSet(js);
    if (!join_set_id) return std::nullopt;
    auto child = Take(run->run().SubmitChild(*join_set_id, *ffqn, std::move(params), own));
    if (!child) return std::nullopt;
    return child->ToString();
  });
}

Op<std::string> WorkflowContext::submit_delay(const JoinSet& join_set,
                                              std::chrono::milliseconds delay,
                                              SourceLocation where) {
  return Op<std::string>(
      [run = &run_, js = join_set.id(), delay, where]() -> std::optional<std::string> {
        NativeRun::CallScope scope(*run, where);
        auto join_set_id = run->ParseJoinSet(js);
        if (!join_set_id) return std::nullopt;
        auto id = Take(run->run().SubmitDelay(*join_set_id, InIntent(delay)));
        if (!id) return std::nullopt;
        return id->ToString();
      });
}

Op<Result<JoinNextResponse, JoinNextError>> WorkflowContext::join_next(const JoinSet& join_set,
                                                                       SourceLocation where) {
  using R = Result<JoinNextResponse, JoinNextError>;
  return Op<R>([run = &run_, js = join_set.id(), where]() -> std::optional<R> {
    NativeRun::CallScope scope(*run, where);
    auto join_set_id = run->ParseJoinSet(js);
    if (!join_set_id) return std::nullopt;
    auto next = run->run().JoinNext(*join_set_id);
    if (!next) return std::nullopt;
    if (!*next) return R(Unexpected(PublicJoinNextError(next->error(), js, nullptr)));
    return R(ToResponse(**next));
  });
}

Op<Result<JoinNextResponse, JoinNextError>> WorkflowContext::join_next(const JoinSet& join_set,
                                                                       std::string_view ffqn_text,
                                                                       SourceLocation where) {
  using R = Result<JoinNextResponse, JoinNextError>;
  return Op<R>([run = &run_, js = join_set.id(), text = std::string(ffqn_text),
                where]() -> std::optional<R> {
    NativeRun::CallScope scope(*run, where);
    auto ffqn = run->ParseFfqn(text);
    if (!ffqn) return std::nullopt;
    auto join_set_id = run->ParseJoinSet(js);
    if (!join_set_id) return std::nullopt;
    auto next = run->run().JoinNext(*join_set_id, *ffqn);
    if (!next) return std::nullopt;
    if (!*next) return R(Unexpected(PublicJoinNextError(next->error(), js, &text)));
    return R(ToResponse(**next));
  });
}

Op<Result<std::optional<JoinNextResponse>, JoinNextError>> WorkflowContext::join_next_try(
    const JoinSet& join_set, SourceLocation where) {
  using R = Result<std::optional<JoinNextResponse>, JoinNextError>;
  return Op<R>([run = &run_, js = join_set.id(), where]() -> std::optional<R> {
    NativeRun::CallScope scope(*run, where);
    auto join_set_id = run->ParseJoinSet(js);
    if (!join_set_id) return std::nullopt;
    auto next = run->run().JoinNextTry(*join_set_id);
    if (!next) return std::nullopt;
    if (!*next) return R(Unexpected(PublicJoinNextError(next->error(), js, nullptr)));
    if (!**next) return R(std::optional<JoinNextResponse>());
    return R(std::optional<JoinNextResponse>(ToResponse(***next)));
  });
}

Op<Result<ExecutionResult, std::string>> WorkflowContext::get(std::string_view ffqn_text,
                                                              std::string_view child_id,
                                                              SourceLocation where) {
  using R = Result<ExecutionResult, std::string>;
  return Op<R>([run = &run_, text = std::string(ffqn_text), id = std::string(child_id),
                where]() -> std::optional<R> {
    NativeRun::CallScope scope(*run, where);
    auto ffqn = run->ParseFfqn(text);
    if (!ffqn) return std::nullopt;
    auto child = core::ExecutionIdDerived::Parse(id);
    if (!child) return R(Unexpected("invalid child execution id `" + id + "`"));
    auto got = run->run().Get(*child, *ffqn);
    if (!got) return std::nullopt;  // interrupted (lease, cancellation, limits)
    const auto& result = *got;
    if (!result) {
      if (result.error().kind == wf::GetError::Kind::kFunctionMismatch) {
        return R(Unexpected("child " + id + " runs " +
                            (result.error().actual_ffqn ? result.error().actual_ffqn->ToString()
                                                        : std::string("another function")) +
                            ", not " + text));
      }
      return R(Unexpected("child " + id + " is not among the processed responses"));
    }
    return R(runtime::native::ToPublic(*result));
  });
}

Op<Done> WorkflowContext::close(const JoinSet& join_set, SourceLocation where) {
  return Op<Done>([run = &run_, js = join_set.id(), where]() -> std::optional<Done> {
    NativeRun::CallScope scope(*run, where);
    auto join_set_id = run->ParseJoinSet(js);
    if (!join_set_id) return std::nullopt;
    if (!run->run().CloseJoinSet(*join_set_id)) return std::nullopt;
    return Done{};
  });
}

Op<bool> WorkflowContext::sleep(std::chrono::milliseconds duration, SourceLocation where) {
  return Op<bool>([run = &run_, duration, where]() -> std::optional<bool> {
    NativeRun::CallScope scope(*run, where);
    auto slept = run->run().Sleep(InIntent(duration));
    if (!slept) return std::nullopt;
    return slept->has_value();
  });
}

namespace {

Result<ReceivedMessage, ReceiveError> PublicReceived(
    Result<wf::Message, wf::ReceiveError> received) {
  if (received) {
    return ReceivedMessage{std::move(received->message_id), std::move(received->channel),
                           std::move(received->body)};
  }
  if (received.error().kind == wf::ReceiveError::Kind::kCancelled) {
    return Unexpected(ReceiveError{ReceiveError::Kind::kCancelled, kCancelledMessage});
  }
  return Unexpected(ReceiveError{ReceiveError::Kind::kTimedOut, "no message before the timeout"});
}

}  // namespace

Op<Result<ReceivedMessage, ReceiveError>> WorkflowContext::receive(std::string_view channel,
                                                                   SourceLocation where) {
  using R = Result<ReceivedMessage, ReceiveError>;
  return Op<R>([run = &run_, channel = std::string(channel), where]() -> std::optional<R> {
    NativeRun::CallScope scope(*run, where);
    auto received = run->run().Receive(channel);
    if (!received) return std::nullopt;
    return PublicReceived(*std::move(received));
  });
}

Op<Result<ReceivedMessage, ReceiveError>> WorkflowContext::receive(
    std::string_view channel, std::chrono::milliseconds timeout, SourceLocation where) {
  using R = Result<ReceivedMessage, ReceiveError>;
  return Op<R>([run = &run_, channel = std::string(channel), timeout, where]() -> std::optional<R> {
    NativeRun::CallScope scope(*run, where);
    auto received = run->run().Receive(channel, InIntent(timeout));
    if (!received) return std::nullopt;
    return PublicReceived(*std::move(received));
  });
}

Op<Result<std::optional<ReceivedMessage>, ReceiveError>> WorkflowContext::try_receive(
    std::string_view channel, SourceLocation where) {
  using R = Result<std::optional<ReceivedMessage>, ReceiveError>;
  return Op<R>([run = &run_, channel = std::string(channel), where]() -> std::optional<R> {
    NativeRun::CallScope scope(*run, where);
    auto received = run->run().TryReceive(channel);
    if (!received) return std::nullopt;
    if (!*received)
      return R(Unexpected(ReceiveError{ReceiveError::Kind::kCancelled, kCancelledMessage}));
    if (!**received) return R(std::optional<ReceivedMessage>());
    auto got = PublicReceived(***std::move(received));
    return R(std::optional<ReceivedMessage>(*std::move(got)));
  });
}

Op<Done> WorkflowContext::publish(std::string_view key, Json value, SourceLocation where) {
  return Op<Done>([run = &run_, key = std::string(key), value = std::move(value),
                   where]() mutable -> std::optional<Done> {
    NativeRun::CallScope scope(*run, where);
    if (!run->run().PublishValue(key, std::move(value))) return std::nullopt;
    return Done{};
  });
}

Op<Result<void, std::string>> WorkflowContext::send(std::string_view execution_id,
                                                    std::string_view channel, Json body,
                                                    SourceLocation where) {
  using R = Result<void, std::string>;
  return Op<R>([run = &run_, target_text = std::string(execution_id),
                channel = std::string(channel), body = std::move(body),
                where]() mutable -> std::optional<R> {
    NativeRun::CallScope scope(*run, where);
    auto target = core::ExecutionId::Parse(target_text);
    if (!target) return R(Unexpected("invalid execution id `" + target_text + "`"));
    auto sent = run->run().SendMessage(*target, channel, std::move(body));
    if (!sent) return std::nullopt;
    if (!*sent) {
      return R(Unexpected(sent->error().kind == wf::SendError::Kind::kNotFound
                              ? "execution " + target_text + " not found"
                              : "execution " + target_text + " has finished"));
    }
    return R();
  });
}

Op<std::string> WorkflowContext::schedule(std::string_view ffqn_text, Json params,
                                          std::chrono::milliseconds delay, SourceLocation where) {
  return Op<std::string>([run = &run_, text = std::string(ffqn_text), params = std::move(params),
                          delay, where]() mutable -> std::optional<std::string> {
    NativeRun::CallScope scope(*run, where);
    auto ffqn = run->ParseFfqn(text);
    if (!ffqn) return std::nullopt;
    auto id = Take(run->run().Schedule(InIntent(delay), *ffqn, std::move(params)));
    if (!id) return std::nullopt;
    return id->ToString();
  });
}

Op<Result<void, std::string>> WorkflowContext::stub(std::string_view ffqn_text,
                                                    std::string_view execution_id,
                                                    ExecutionResult result, SourceLocation where) {
  using R = Result<void, std::string>;
  return Op<R>([run = &run_, text = std::string(ffqn_text), id = std::string(execution_id),
                result = std::move(result), where]() -> std::optional<R> {
    NativeRun::CallScope scope(*run, where);
    auto ffqn = run->ParseFfqn(text);
    if (!ffqn) return std::nullopt;
    auto target = core::ExecutionIdDerived::Parse(id);
    if (!target) {
      run->Interrupt(wf::Interruption::Kind::kImportedFunctionCallError,
                     "stub target `" + id + "` is not a child execution id");
      return std::nullopt;
    }
    auto stubbed = run->run().Stub(*ffqn, *target, runtime::native::ToCore(result));
    if (!stubbed) return std::nullopt;
    if (!*stubbed) return R(Unexpected("execution " + id + " holds a different result"));
    return R();
  });
}

Op<uint64_t> WorkflowContext::random_u64(uint64_t min, uint64_t max_exclusive,
                                         SourceLocation where) {
  return Op<uint64_t>([run = &run_, min, max_exclusive, where]() {
    NativeRun::CallScope scope(*run, where);
    return Take(run->run().RandomU64(min, max_exclusive));
  });
}

Op<uint64_t> WorkflowContext::random_u64_inclusive(uint64_t min, uint64_t max_inclusive,
                                                   SourceLocation where) {
  return Op<uint64_t>([run = &run_, min, max_inclusive, where]() {
    NativeRun::CallScope scope(*run, where);
    return Take(run->run().RandomU64Inclusive(min, max_inclusive));
  });
}

Op<std::string> WorkflowContext::random_string(uint32_t min_length, uint32_t max_length_exclusive,
                                               SourceLocation where) {
  return Op<std::string>([run = &run_, min_length, max_length_exclusive, where]() {
    NativeRun::CallScope scope(*run, where);
    return Take(run->run().RandomString(min_length, max_length_exclusive));
  });
}

Op<ExecutionResult> WorkflowContext::StepOp(std::string_view name,
                                            std::function<Result<Json, Json>()> fn,
                                            SourceLocation where) {
  return Op<ExecutionResult>([run = &run_, name = std::string(name), fn = std::move(fn),
                              where]() -> std::optional<ExecutionResult> {
    NativeRun::CallScope scope(*run, where);
    using StepValue = Result<core::SupportedFunctionReturnValue, std::string>;
    auto result = run->run().RunStep(name, [&]() -> StepValue {
      // User code: nothing it throws may cross into the engine.
      try {
        Result<Json, Json> value = fn();
        if (value)
          return core::SupportedFunctionReturnValue(core::ReturnValueOk{std::move(*value)});
        return core::SupportedFunctionReturnValue(core::ReturnValueErr{std::move(value.error())});
      } catch (const std::exception& e) {
        return StepValue(Unexpected(std::string("it threw: ") + e.what()));
      } catch (...) {
        return StepValue(Unexpected(std::string("it threw a non-standard exception")));
      }
    });
    if (!result) return std::nullopt;
    return runtime::native::ToPublic(*result);
  });
}

void WorkflowContext::log(std::string_view message, LogLevel level) const {
  // An interruption (lease, cancellation, limits) poisons the run: the
  // workflow's next awaited operation ends it.
  (void)run_.run().Log(level, message);
}

}  // namespace stele
