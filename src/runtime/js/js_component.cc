#include "runtime/js/js_component.h"

#include <openssl/sha.h>

#include <fstream>
#include <iterator>
#include <utility>

namespace stele::runtime::js {

std::vector<core::FunctionFqn> JsComponent::Ffqns() const {
  std::vector<core::FunctionFqn> out;
  for (const auto& f : functions) out.push_back(f.ffqn);
  return out;
}

const JsFunction* JsComponent::Find(const core::FunctionFqn& ffqn) const {
  for (const auto& f : functions) {
    if (f.ffqn == ffqn) return &f;
  }
  return nullptr;
}

void JsComponent::RegisterIn(workflow::MapFunctionRegistry& registry) const {
  const auto kind = flavor == JsFlavor::kWorkflow ? workflow::FunctionKind::kWorkflow
                                                  : workflow::FunctionKind::kActivity;
  for (const auto& f : functions) registry.Add(f.ffqn, workflow::FunctionInfo{component_id, kind});
}

Result<std::shared_ptr<const JsComponent>, std::string> LoadJsComponent(
    std::shared_ptr<JsEngine> engine, std::string source, std::string file_name, std::string name,
    JsFlavor flavor, const JsLimits& limits) {
  const std::string what = "JavaScript component `" + name + "`";
  if (!core::ComponentId::IsValidName(name)) {
    return Unexpected(what + ": invalid name (use [A-Za-z0-9_-])");
  }
  core::InputContentDigest::Bytes digest{};
  SHA256(reinterpret_cast<const unsigned char*>(source.data()), source.size(), digest.data());
  auto module = engine->Load(std::move(file_name), std::move(source), flavor, limits);
  if (!module) return Unexpected(module.error().message);
  auto component = std::make_shared<JsComponent>();
  component->flavor = flavor;
  component->component_id =
      core::ComponentId{flavor == JsFlavor::kWorkflow ? core::ComponentType::kWorkflowJs
                                                      : core::ComponentType::kActivityJs,
                        std::move(name), core::InputContentDigest(digest)};
  for (const JsDeclaredFunction& declared : (*module)->functions()) {
    auto ffqn = core::FunctionFqn::Parse(declared.ffqn);
    if (!ffqn) {
      return Unexpected((*module)->name() + ": functions[\"" + declared.ffqn +
                        "\"]: invalid ffqn: " + ffqn.error().message);
    }
    component->functions.push_back(JsFunction{*std::move(ffqn), declared.params, declared.returns});
  }
  component->engine = std::move(engine);
  component->module = std::move(*module);
  return std::shared_ptr<const JsComponent>(std::move(component));
}

Result<std::shared_ptr<const JsComponent>, std::string> LoadJsComponentFile(
    std::shared_ptr<JsEngine> engine, const std::filesystem::path& path, std::string name,
    JsFlavor flavor, const JsLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Unexpected("cannot open `" + path.string() + "`");
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Unexpected("cannot read `" + path.string() + "`");
  if (source.size() > limits.max_source_bytes) {
    return Unexpected("`" + path.string() + "` is " + std::to_string(source.size()) +
                      " bytes, over the limit of " + std::to_string(limits.max_source_bytes));
  }
  return LoadJsComponent(std::move(engine), std::move(source), path.filename().string(),
                         std::move(name), flavor, limits);
}

}  // namespace stele::runtime::js
