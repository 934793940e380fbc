# `cmake --install`: the tessera executable (component Runtime) and what an
# outside project needs to build C++ operator plugins (component
# Development): the headers a plugin compiles against, under
# include/tessera/ with the in-tree paths ("engine/legacy_op/simple_op.h"), and
# the CMake package (lib/cmake/Tessera: find_package(Tessera),
# tessera_add_op_library). Also the in-tree Tessera::headers target, so the
# tests build plugins with the same helper.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS tessera RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)
install(TARGETS tessera_runtime LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime)
install(TARGETS tessera_imgproc tessera_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime)
if(TARGET tessera_omp_wait_policy)
  install(TARGETS tessera_omp_wait_policy LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          COMPONENT Runtime)
endif()
# The installed binaries find the project's libraries beside them; the build
# tree's carry the same $ORIGIN paths (the shell sits beside libtessera.so and
# the OpenMP policy library there). Built with their install RPATH, nothing is
# rewritten at install, so CMake adds no padding to the build RPATH: its
# padding is an empty entry, which the loader reads as the current directory
# (a `libgomp.so.1` in the folder a user runs build/tessera from was loaded).
set_target_properties(tessera PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}:$ORIGIN"
                                         BUILD_WITH_INSTALL_RPATH ON)
set_target_properties(tessera_runtime PROPERTIES INSTALL_RPATH "$ORIGIN" BUILD_WITH_INSTALL_RPATH ON)

# The closure of what op_plugin.h, op.h, simple_op.h and the attribute types
# include, by folder, so a header added to one of them is installed without
# editing this list (the plugin package test compiles every installed header).
set(TESSERA_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/tessera)
foreach(dir engine/base engine/scheduler engine/storage engine/resource engine/op engine/legacy_op
            engine/ndarray)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${TESSERA_INSTALL_INCLUDEDIR}/${dir}
          COMPONENT Development FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/ops/custom/op_plugin.h
        DESTINATION ${TESSERA_INSTALL_INCLUDEDIR}/ops/custom COMPONENT Development)

file(STRINGS ${PROJECT_SOURCE_DIR}/ops/custom/op_plugin.h TESSERA_OP_PLUGIN_ABI_LINE
     REGEX "^#define TESSERA_OP_PLUGIN_ABI_VERSION [0-9]+$")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" TESSERA_OP_PLUGIN_ABI_VERSION "${TESSERA_OP_PLUGIN_ABI_LINE}")
if(TARGET OpenMP::OpenMP_CXX)
  set(TESSERA_WITH_OPENMP ON)
else()
  set(TESSERA_WITH_OPENMP OFF)
endif()

set(TESSERA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)
configure_package_config_file(cmake/TesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/TesseraConfig.cmake
  INSTALL_DESTINATION ${TESSERA_CMAKE_DIR}
  PATH_VARS TESSERA_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
# Plugins are checked against the exact executable when they load (the ABI
# version and layout in op_plugin.h); at configure time, a 0.x release only
# matches its own minor version.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TesseraConfig.cmake
              ${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/TesseraOpLibrary.cmake
        DESTINATION ${TESSERA_CMAKE_DIR} COMPONENT Development)

# In tree: the same target name and helper over the source tree.
add_library(tessera_plugin_headers INTERFACE)
target_include_directories(tessera_plugin_headers INTERFACE ${PROJECT_SOURCE_DIR})
target_compile_features(tessera_plugin_headers INTERFACE cxx_std_20)
add_library(Tessera::headers ALIAS tessera_plugin_headers)
set(Tessera_WITH_OPENMP ${TESSERA_WITH_OPENMP})
include(${PROJECT_SOURCE_DIR}/cmake/TesseraOpLibrary.cmake)
