# Writes OUT, a C++ file defining stele::runtime::js::kRuntimeJs with the
# text of IN (runtime.js) as a raw string literal.
file(READ ${IN} text)
string(FIND "${text}" ")STELE_JS\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw string delimiter )STELE_JS\"")
endif()
file(WRITE ${OUT}.tmp "// Generated from src/runtime/js/runtime.js by embed_runtime_js.cmake.\n"
  "namespace stele::runtime::js {\n"
  "extern const char kRuntimeJs[];\n"
  "const char kRuntimeJs[] = R\"STELE_JS(${text})STELE_JS\";\n"
  "}  // namespace stele::runtime::js\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
