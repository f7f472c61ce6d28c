# `cmake --install <build> --prefix P` installs libstele like any library
# on Debian: the static libraries it is made of, the public headers
# (include/stele), a CMake package and a pkg-config file. A consumer writes
#
#   find_package(Stele REQUIRED)
#   target_link_libraries(app PRIVATE Stele::stele)
#
# (examples/consumer; docs/sdk.md, "Getting libstele"). The server, the
# CLI and the wasm runtime are not part of it.
include(CMakePackageConfigHelpers)

# Lowest first: the order pkg-config's Libs lists them in (a static
# library before the ones it needs).
set(STELE_LIBSTELE_TARGETS stele_engine stele_service stele_service_cron stele_runtime_native
    stele_runtime_workflow stele_executor stele_storage_sqlite stele_storage stele_core
    stele_base)
set_target_properties(stele_engine PROPERTIES EXPORT_NAME stele)
install(TARGETS ${STELE_LIBSTELE_TARGETS} EXPORT SteleTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/stele DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(STELE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Stele)
install(EXPORT SteleTargets NAMESPACE Stele:: DESTINATION ${STELE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/SteleConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/SteleConfig.cmake INSTALL_DESTINATION ${STELE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/SteleConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/SteleConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/SteleConfigVersion.cmake
        DESTINATION ${STELE_CMAKE_DIR})

# pkg-config: `pkg-config --cflags --libs stele`.
set(STELE_PC_LIBS "")
foreach(target ${STELE_LIBSTELE_TARGETS})
  string(APPEND STELE_PC_LIBS " -l${target}")
endforeach()
# Time zones of cron schedules (libhowardhinnant-date-dev ships no .pc file).
string(APPEND STELE_PC_LIBS " -ldate-tz")
set(STELE_PC_LINK_FLAGS "")
if(STELE_SANITIZE STREQUAL "address")
  set(STELE_PC_LINK_FLAGS "-fsanitize=address,undefined")
elseif(STELE_SANITIZE STREQUAL "thread")
  set(STELE_PC_LINK_FLAGS "-fsanitize=thread")
endif()
# Relocatable: the prefix is found from the file's own place, so that
# `cmake --install --prefix` anywhere gives a working stele.pc.
file(RELATIVE_PATH STELE_PC_TO_PREFIX "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig"
     "${CMAKE_INSTALL_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/stele.pc.in ${CMAKE_CURRENT_BINARY_DIR}/stele.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/stele.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
