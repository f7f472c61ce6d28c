# Helpers that keep every module a single CMake target with explicit,
# downward-only dependencies (see docs/architecture.md).

set(STELE_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough)
# GCC 12 reports false positives of -Wmaybe-uninitialized through
# std::variant copies at -O2 (GCC bug 105562 and relatives), and of
# -Wrestrict in `"literal" + std::string` at -O3 (GCC bug 105329: nineteen
# of them in the Release build `scripts/run.sh` shows a new user); the
# sanitizer builds catch real uninitialised reads and overlapping copies.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND STELE_WARNINGS -Wno-maybe-uninitialized -Wno-restrict)
endif()
if(STELE_WERROR)
  list(APPEND STELE_WARNINGS -Werror)
endif()

if(STELE_SANITIZE STREQUAL "address")
  # No vptr check: libnode (V8, src/runtime/wasm) is built without RTTI, and its
  # calls into libstdc++'s shared_ptr code bind to the executable's instrumented
  # copy, whose vptr check then rejects every V8-owned object.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(STELE_FUZZ)
  # libFuzzer build (tests/fuzz, docs/reliability.md): every library gets
  # coverage instrumentation, ASan and UBSan; only the fuzz targets link the
  # libFuzzer driver (-fsanitize=fuzzer, stele_add_fuzzer). -O1 after the
  # build type's flags: fuzz throughput and fast builds.
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "STELE_FUZZ needs clang (-DCMAKE_CXX_COMPILER=clang++)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr
                      -fno-omit-frame-pointer -fno-sanitize-recover=undefined -O1 -g)
  add_link_options(-fsanitize=address,undefined)
elseif(STELE_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# Unity builds (scripts/test.sh turns them on for CI): under the sanitizers
# most of a file's compile time goes to the templates of gtest,
# nlohmann/json and the standard library, which every file of a target
# instantiates and compiles again; a batch of files compiles them once.
# CPU seconds, ASan+UBSan, gcc 12, file by file -> one batch:
# stele_storage_memory 54 -> 29, stele_executor_tests 94 -> 50. Off by
# default: an edit would recompile its whole batch.
option(STELE_UNITY_BUILD "Compile test binaries and libraries as unity batches" OFF)
set(STELE_UNITY_BATCH_SIZE 8 CACHE STRING "Sources per unity batch (STELE_UNITY_BUILD)")
function(stele_unity target)
  if(STELE_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
      UNITY_BUILD_BATCH_SIZE ${STELE_UNITY_BATCH_SIZE})
  endif()
endfunction()

# stele_unity_skip(<source>...): these sources (of the current folder)
# compile on their own in a unity build, because a helper in their
# anonymous namespace has the name of one in another file of the same
# target. A unity build error "redefinition of ... {anonymous}::X" means
# such a pair: rename one of them, or list its file here.
function(stele_unity_skip)
  set_source_files_properties(${ARGN} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

# stele_add_library(<name> SOURCES ... DEPS ...)
# Creates target stele_<name>; headers are included by module path from src/.
function(stele_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(stele_${name} STATIC ${ARG_SOURCES})
  # src/ only inside the build: an installed libstele exposes include/stele.
  target_include_directories(stele_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>)
  target_compile_options(stele_${name} PRIVATE ${STELE_WARNINGS})
  target_link_libraries(stele_${name} PUBLIC ${ARG_DEPS})
  stele_unity(stele_${name})
endfunction()

# stele_test_code(<target>): test code (gtest binaries and their helper
# libraries) is compiled at -O1 in the optimised configurations: a quarter
# less compile time per test file (measured on examples_test.cc: 17.4 s →
# 13.5 s), and what the tests measure runs in the libraries, which keep
# the build type's flags. Debug keeps -O0.
function(stele_test_code target)
  target_compile_options(${target} PRIVATE $<$<NOT:$<CONFIG:Debug>>:-O1>)
endfunction()

# stele_add_test(<name> SOURCES ... DEPS ... LABELS ...)
# One gtest binary per module; every test case becomes a ctest test.
function(stele_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${STELE_WARNINGS})
  stele_test_code(${name})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  stele_unity(${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()
