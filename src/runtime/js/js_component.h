// Loading a JavaScript component (docs/js.md): an ES module file whose
// `functions` export declares the workflows or activities it serves. The
// loader evaluates the module once (JsEngine::Load), parses the declared
// ffqns and derives the ComponentId: type workflow_js or activity_js, the
// component's name, and the sha256 of the file's bytes — so changing the
// code makes a new component version, as for wasm.
//
//   auto engine = CreateV8JsEngine();
//   auto wf = LoadJsComponentFile(engine, "hello.js", "hello", JsFlavor::kWorkflow, {});
//   wf.value()->RegisterIn(registry);
//   auto worker = std::make_shared<JsWorkflowWorker>(*wf, JsWorkflowWorkerDeps{...});
//
// Threading: a JsComponent is immutable and shared by the workers and
// threads that run it. Ownership: shared_ptr; it keeps the engine and the
// module alive.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "core/component_id.h"
#include "core/function_fqn.h"
#include "runtime/js/js_engine.h"
#include "runtime/workflow/function_registry.h"

namespace stele::runtime::js {

struct JsFunction {
  core::FunctionFqn ffqn;
  std::vector<std::pair<std::string, std::string>> params;  // [name, WIT-like type]
  std::optional<std::string> returns;
};

struct JsComponent {
  JsFlavor flavor = JsFlavor::kWorkflow;
  core::ComponentId component_id;  // kWorkflowJs or kActivityJs, digest of the file
  std::shared_ptr<JsEngine> engine;
  std::shared_ptr<const JsModule> module;
  std::vector<JsFunction> functions;

  std::vector<core::FunctionFqn> Ffqns() const;
  const JsFunction* Find(const core::FunctionFqn& ffqn) const;
  // Adds every function to the registry workflows consult (kWorkflow or
  // kActivity, with this component's id).
  void RegisterIn(workflow::MapFunctionRegistry& registry) const;
};

// Loads `source` as component `name` ([A-Za-z0-9_-]+); `file_name` is what
// stack frames name (the file's base name). Errors are one readable line
// (with file:line:column for the module's own errors).
Result<std::shared_ptr<const JsComponent>, std::string> LoadJsComponent(
    std::shared_ptr<JsEngine> engine, std::string source, std::string file_name, std::string name,
    JsFlavor flavor, const JsLimits& limits = {});

// Reads the file and calls LoadJsComponent.
Result<std::shared_ptr<const JsComponent>, std::string> LoadJsComponentFile(
    std::shared_ptr<JsEngine> engine, const std::filesystem::path& path, std::string name,
    JsFlavor flavor, const JsLimits& limits = {});

}  // namespace stele::runtime::js
