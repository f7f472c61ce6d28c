#include "runtime/wasm_host/wasm_activity_worker.h"

#include <optional>
#include <string>
#include <utility>

#include "base/log.h"
#include "runtime/wasm_host/guest_abi.h"
#include "runtime/wasm_host/http_host.h"

namespace stele::runtime::wasm_host {

namespace {

using wasm::WasmError;

void LogOutput(const std::string& execution_id, const WasiState& state) {
  auto emit = [&](const std::string& text, const char* stream) {
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      STELE_LOG(kInfo, execution_id << " [" << stream << "] "
                                    << std::string_view(text).substr(pos, end - pos));
      pos = end + 1;
    }
  };
  emit(state.stdout_text, "stdout");
  emit(state.stderr_text, "stderr");
  if (state.dropped_bytes > 0) {
    STELE_LOG(kWarn, execution_id << ": " << state.dropped_bytes << " bytes of output dropped");
  }
}

}  // namespace

WasmActivityWorker::WasmActivityWorker(std::shared_ptr<const WasmComponent> component,
                                       WasmActivityOptions options)
    : component_(std::move(component)),
      options_(std::move(options)),
      engine_id_(component_->engine->EngineId()),
      ffqns_(component_->Ffqns()),
      pool_(std::make_unique<InstancePool>(
          component_->engine, component_->module, options_.instance_pool,
          [](wasm::WasmInstance& instance,
             const wasm::CallBudget& budget) -> Result<void, WasmError> {
            if (instance.module().FindExport("_initialize") == nullptr) return {};
            STELE_TRY(instance.Call("_initialize", {}, budget));
            return {};
          })) {}

executor::WorkerResult WasmActivityWorker::Run(executor::WorkerContext ctx) {
  executor::WorkerResult result = RunGuest(std::move(ctx));
  result.engine = engine_id_;
  return result;
}

executor::WorkerResult WasmActivityWorker::RunGuest(executor::WorkerContext ctx) {
  const DeclaredFunction* fn = component_->Find(ctx.ffqn);
  if (fn == nullptr) {
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCannotInstantiate,
                                         "component " + component_->component_id.ToString() +
                                             " does not export " + ctx.ffqn.ToString());
  }
  auto state = std::make_shared<WasiState>();
  state->config = options_.wasi;
  auto table = std::make_shared<wasm::ImportTable>();
  AddWasiImports(*table, state, component_->module.get());
  auto http = std::make_shared<HttpState>();
  http->config = options_.http;
  http->cancel = ctx.cancel;
  AddHttpImports(*table, http);

  const std::string id = ctx.execution_id.ToString();
  auto trap = [&](const WasmError& error) {
    std::string reason = error.message;
    if (state->exit_code)
      reason = "activity called proc_exit(" + std::to_string(*state->exit_code) + ")";
    return executor::WorkerResult::Err(
        ctx.version, executor::ActivityTrap{reason, error.ToString(), TakeTraces(*http)});
  };
  auto failed = [&](const WasmError& error) {
    LogOutput(id, *state);
    if (error.kind == WasmError::Kind::kInterrupted) {
      return executor::WorkerResult::Err(ctx.version,
                                         executor::TemporaryTimeout{TakeTraces(*http)});
    }
    if (error.kind == WasmError::Kind::kOutOfResources) {
      return executor::WorkerResult::Err(ctx.version, executor::LimitReached{error.ToString()});
    }
    return trap(error);
  };

  const wasm::CallBudget budget{std::nullopt, ctx.cancel};
  auto lease = pool_->Acquire(table, budget);  // `_initialize` done
  if (!lease) return failed(lease.error());
  wasm::WasmInstance& guest = lease->instance();
  const std::string params = ctx.params.dump();
  auto ptr = PlaceInGuest(guest, params);
  if (!ptr) return failed(ptr.error());
  const wasm::Value args[] = {wasm::Value::I32(static_cast<int32_t>(*ptr)),
                              wasm::Value::I32(static_cast<int32_t>(params.size()))};
  auto called = guest.Call(fn->export_name, args, budget);
  if (!called) return failed(called.error());
  LogOutput(id, *state);

  if (called->size() != 1 || (*called)[0].type != wasm::ValType::kI64) {
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kResultParsingError,
                                         "export `" + fn->export_name + "` must return one i64");
  }
  uint64_t packed = static_cast<uint64_t>((*called)[0].AsI64());
  auto bytes = guest.ReadBytes(PackedPtr(packed), PackedLen(packed));
  if (!bytes) {
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kResultParsingError,
                                         "result out of guest memory: " + bytes.error().ToString());
  }
  bool non_retryable = false;
  auto value = ParseExportResult(
      std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
      &non_retryable);
  if (!value) {
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kResultParsingError,
                                         value.error());
  }
  if (auto* err = std::get_if<core::ReturnValueErr>(&*value);
      err && options_.retry_on_err && !non_retryable) {
    return executor::WorkerResult::Err(
        ctx.version, executor::ActivityReturnedError{std::move(*err), {}, TakeTraces(*http)});
  }
  return executor::WorkerResult::Ok(std::move(*value), ctx.version, TakeTraces(*http));
}

}  // namespace stele::runtime::wasm_host
