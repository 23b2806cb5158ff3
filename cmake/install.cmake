# `cmake --install` for C and C++ users: libkiln_runtime with the C API headers (include/kiln/) and
# the runtime's C++ headers (include/kiln/runtime/), the `kiln` command line, the kernel sources and
# headers generated code is compiled against (share/kiln/), and a CMake package:
#   find_package(kiln) ... target_link_libraries(app PRIVATE kiln::runtime)
# C programs include "kiln/c_runtime_api.h"; C++ programs "runtime/module.h", as in the source tree.
# The Python package installs its own copy of these (component python, python/CMakeLists.txt).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
set_target_properties(kiln_runtime PROPERTIES EXPORT_NAME runtime)
install(TARGETS kiln_runtime EXPORT kilnTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
if(TARGET kiln_dnnl)  # loaded by libkiln_runtime from its own directory
  install(TARGETS kiln_dnnl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/kiln/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln COMPONENT runtime)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/runtime/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/runtime
  COMPONENT runtime FILES_MATCHING PATTERN "*.h")
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_DIR} COMPONENT runtime)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/kilnConfig.cmake.in
  ${CMAKE_BINARY_DIR}/kilnConfig.cmake INSTALL_DESTINATION ${KILN_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/kilnConfig.cmake ${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
  DESTINATION ${KILN_CMAKE_DIR} COMPONENT runtime)

install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
# What `kiln compile` compiles generated code against (found beside the binary, see
# backend/compiler.cc): the kernels, the C API headers and DLPack's header.
# Extra arguments (EXCLUDE_FROM_ALL) go to each install().
function(kiln_install_kernel_tree destination component)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/kernels/ DESTINATION ${destination}/kernels COMPONENT ${component}
    ${ARGN} FILES_MATCHING PATTERN "*.h" PATTERN "*.cc" PATTERN "sources.txt")
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/kiln/ DESTINATION ${destination}/include/kiln
    COMPONENT ${component} ${ARGN})
  install(FILES ${DLPACK_INCLUDE_DIR}/dlpack/dlpack.h DESTINATION ${destination}/include/dlpack
    COMPONENT ${component} ${ARGN})
endfunction()
kiln_install_kernel_tree(${CMAKE_INSTALL_DATADIR}/kiln cli)
