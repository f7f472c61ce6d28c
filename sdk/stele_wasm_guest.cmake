# stele_add_wasm_guest(<name> KIND workflow|activity SOURCES <c/cc files> [DEFINES X=1 ...])
# Builds <binary dir>/<name>.wasm with Debian's clang and wasm-ld and
# defines the custom target stele_wasm_<name> (property WASM_FILE = path).
#   workflow: --target=wasm32, freestanding, no libc; imports only "stele".
#   activity: --target=wasm32-wasi against wasi-libc (a WASI reactor).
# Each source is compiled with -O2; the link step gets no -O: with binaryen
# installed clang would run wasm-opt on it, which strips the `name` section
# that backtraces need. STELE_WASM_GUESTS is TRUE when the toolchain exists.
# No include_guard: STELE_WASM_GUESTS is a directory-scoped variable, so every
# including folder must run this (find_program results are cached).

find_program(STELE_WASM_CLANG NAMES clang-14 clang)
find_program(STELE_WASM_LD NAMES wasm-ld-14 wasm-ld)
set(STELE_WASI_SYSROOT "/usr" CACHE PATH "sysroot holding include/wasm32-wasi and lib/wasm32-wasi")
set(STELE_SDK_DIR ${CMAKE_CURRENT_LIST_DIR})
if(STELE_WASM_CLANG AND STELE_WASM_LD)
  set(STELE_WASM_GUESTS TRUE)
else()
  set(STELE_WASM_GUESTS FALSE)
  if(STELE_REQUIRE_WASM)
    message(FATAL_ERROR "wasm guests: clang or wasm-ld not found, and STELE_REQUIRE_WASM is ON "
                        "(apt-get install clang-14 lld-14 wasi-libc)")
  endif()
  message(STATUS "wasm guests: clang or wasm-ld not found; wasm examples and tests are skipped")
endif()

function(stele_add_wasm_guest name)
  cmake_parse_arguments(ARG "" "KIND" "SOURCES;DEFINES" ${ARGN})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${name}.wasm)
  set(objects)
  if(ARG_KIND STREQUAL "workflow")
    set(cflags --target=wasm32 -mcpu=mvp -O2 -ffreestanding -nostdlib -fno-builtin)
  elseif(ARG_KIND STREQUAL "activity")
    set(cflags --target=wasm32-wasi --sysroot=${STELE_WASI_SYSROOT} -mcpu=mvp -O2)
  else()
    message(FATAL_ERROR "stele_add_wasm_guest(${name}): KIND must be workflow or activity")
  endif()
  foreach(src ${ARG_SOURCES})
    get_filename_component(src_abs ${src} ABSOLUTE)
    get_filename_component(base ${src} NAME_WE)
    set(obj ${CMAKE_CURRENT_BINARY_DIR}/${name}_${base}.o)
    set(lang_flags)
    foreach(def ${ARG_DEFINES})
      list(APPEND lang_flags -D${def})
    endforeach()
    if(src MATCHES "\\.(cc|cpp)$")
      list(APPEND lang_flags -x c++ -std=c++17 -fno-exceptions -fno-rtti)
    endif()
    add_custom_command(OUTPUT ${obj}
      COMMAND ${STELE_WASM_CLANG} ${cflags} ${lang_flags} -Wall -Wextra -I${STELE_SDK_DIR}
              -c ${src_abs} -o ${obj}
      DEPENDS ${src_abs} ${STELE_SDK_DIR}/stele_guest.h ${STELE_SDK_DIR}/stele_workflow.h
              ${STELE_SDK_DIR}/stele_activity.h ${STELE_SDK_DIR}/stele_webhook.h
              ${STELE_SDK_DIR}/stele.hpp
      COMMENT "wasm guest ${name}: compiling ${base}"
      VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  if(ARG_KIND STREQUAL "workflow")
    add_custom_command(OUTPUT ${out}
      COMMAND ${STELE_WASM_LD} --no-entry ${objects} -o ${out}
      DEPENDS ${objects}
      COMMENT "wasm guest ${name}: linking"
      VERBATIM)
  else()
    add_custom_command(OUTPUT ${out}
      COMMAND ${STELE_WASM_CLANG} --target=wasm32-wasi --sysroot=${STELE_WASI_SYSROOT}
              -mexec-model=reactor -Wno-unused-command-line-argument ${objects} -o ${out}
      DEPENDS ${objects}
      COMMENT "wasm guest ${name}: linking against wasi-libc"
      VERBATIM)
  endif()
  add_custom_target(stele_wasm_${name} ALL DEPENDS ${out})
  set_target_properties(stele_wasm_${name} PROPERTIES WASM_FILE ${out})
endfunction()
