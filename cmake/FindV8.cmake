# Finds V8 10.2 as shipped by Debian 12's libnode108 + libnode-dev (see
# scripts/setup_v8.sh), and defines the imported target V8::V8.
#
# Looks first in STELE_V8_ROOT (default <repo>/build/third_party/libnode, where
# setup_v8.sh unpacks the packages when apt cannot install them), then in /usr
# when libnode-dev is installed. Headers and library must come from the same
# prefix: another Node.js's /usr/include/node holds a different V8, so the
# version in v8-version.h is checked (10.2).
#
# Debian builds V8 without pointer compression and without 31-bit Smis, so no
# V8_COMPRESS_POINTERS / V8_31BIT_SMIS_ON_64BIT_ARCH define may be set here.
#
# Sets V8_FOUND, V8_VERSION, V8_INCLUDE_DIR, V8_LIBRARY, V8_LIBRARY_DIR.

set(STELE_V8_ROOT "${PROJECT_SOURCE_DIR}/build/third_party/libnode" CACHE PATH
    "Prefix holding usr/include/node and usr/lib/<triplet>/libnode.so.108")

set(_v8_candidates "${STELE_V8_ROOT}/usr" "/usr")
set(V8_FOUND FALSE)
foreach(_prefix ${_v8_candidates})
  set(_hdr "${_prefix}/include/node/v8-version.h")
  file(GLOB _lib "${_prefix}/lib/*/libnode.so.108" "${_prefix}/lib/libnode.so.108")
  if(EXISTS "${_hdr}" AND _lib)
    file(STRINGS "${_hdr}" _major REGEX "^#define V8_MAJOR_VERSION ")
    file(STRINGS "${_hdr}" _minor REGEX "^#define V8_MINOR_VERSION ")
    file(STRINGS "${_hdr}" _build REGEX "^#define V8_BUILD_NUMBER ")
    file(STRINGS "${_hdr}" _patch REGEX "^#define V8_PATCH_LEVEL ")
    foreach(_v _major _minor _build _patch)
      string(REGEX REPLACE ".* ([0-9]+).*" "\\1" ${_v} "${${_v}}")
    endforeach()
    if(_major EQUAL 10 AND _minor EQUAL 2)
      list(GET _lib 0 V8_LIBRARY)
      set(V8_INCLUDE_DIR "${_prefix}/include/node")
      get_filename_component(V8_LIBRARY_DIR "${V8_LIBRARY}" DIRECTORY)
      set(V8_VERSION "${_major}.${_minor}.${_build}.${_patch}")
      set(V8_FOUND TRUE)
      break()
    endif()
  endif()
endforeach()

if(V8_FOUND AND NOT TARGET V8::V8)
  add_library(V8::V8 SHARED IMPORTED GLOBAL)
  set_target_properties(V8::V8 PROPERTIES
    IMPORTED_LOCATION "${V8_LIBRARY}"
    IMPORTED_NO_SONAME FALSE
    INTERFACE_INCLUDE_DIRECTORIES "${V8_INCLUDE_DIR}")
  # The unpacked libnode.so.108 is not on the loader's path: every binary
  # linking V8 carries an RPATH to it (CMake adds the build RPATH for an
  # imported shared library outside the system dirs automatically).
  message(STATUS "V8 ${V8_VERSION}: ${V8_LIBRARY} (headers ${V8_INCLUDE_DIR})")
endif()

if(NOT V8_FOUND AND V8_FIND_REQUIRED)
  message(FATAL_ERROR "V8 10.2 (libnode108 + libnode-dev) not found; run scripts/setup_v8.sh")
endif()
