# tessera_add_op_library(<name> <source>...): builds a C++ operator plugin, a
# MODULE library that `tessera --load-ops` and mx.operator.load() open.
#
# It compiles against the Tessera headers (target Tessera::headers) as C++20
# with -fPIC, and links no Tessera library: the registry and the rest of the
# runtime are resolved, when the plugin loads, from the libtessera.so the
# process (the `tessera` executable) has already loaded, so the one registry
# in the process is the one the plugin adds to. OpenMP,
# when Tessera was built with it, parallelises Kernel<Op, cpu>::Launch loops
# as it does in tree.
function(tessera_add_op_library name)
  if(NOT ARGN)
    message(FATAL_ERROR "tessera_add_op_library(${name}): no source files")
  endif()
  if(NOT TARGET Tessera::headers)
    message(FATAL_ERROR "tessera_add_op_library: Tessera::headers is missing; call find_package(Tessera) first")
  endif()
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE Tessera::headers)
  target_compile_features(${name} PRIVATE cxx_std_20)
  set_target_properties(${name} PROPERTIES
    CXX_EXTENSIONS OFF
    POSITION_INDEPENDENT_CODE ON)
  if(Tessera_WITH_OPENMP AND TARGET OpenMP::OpenMP_CXX)
    target_link_libraries(${name} PRIVATE OpenMP::OpenMP_CXX)
  endif()
endfunction()
