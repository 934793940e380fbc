# CPU GEMM and neural-network primitives: OpenBLAS and oneDNN, both from
# Debian (libopenblas-dev, libdnnl-dev). GEMM picks the faster per shape.
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
find_library(DNNL_LIBRARY NAMES dnnl REQUIRED)
find_path(DNNL_INCLUDE_DIR NAMES oneapi/dnnl/dnnl.h REQUIRED)
# The kernels call both; the tensor layer holds the GEMM and the oneDNN helpers.
# Both libraries are opened on first use, from the paths found here: OpenBLAS
# by ops/tensor/gemm_openblas.cc, oneDNN by ops/tensor/dnnl_lazy.cc (which
# defines the oneDNN C functions the kernels call). Only their headers are
# needed to build; a program starts without binding either.
find_library(OPENBLAS_LIBRARY NAMES openblas PATHS ${OPENBLAS_LIBRARY_DIRS} NO_DEFAULT_PATH REQUIRED)
get_filename_component(OPENBLAS_LIBRARY_REAL ${OPENBLAS_LIBRARY} REALPATH)
get_filename_component(DNNL_LIBRARY_REAL ${DNNL_LIBRARY} REALPATH)
target_include_directories(tessera_tensor SYSTEM PUBLIC ${DNNL_INCLUDE_DIR} ${OPENBLAS_INCLUDE_DIRS})
target_compile_definitions(tessera_tensor PRIVATE
  TESSERA_OPENBLAS_LIBRARY="${OPENBLAS_LIBRARY_REAL}" TESSERA_DNNL_LIBRARY="${DNNL_LIBRARY_REAL}")
target_link_libraries(tessera_tensor PUBLIC ${CMAKE_DL_LIBS})
# Tests and benchmarks that call oneDNN or OpenBLAS directly link them
# themselves (tests/CMakeLists.txt).
target_include_directories(tessera_runtime_deps SYSTEM INTERFACE ${DNNL_INCLUDE_DIR}
  ${OPENBLAS_INCLUDE_DIRS})
target_link_libraries(tessera_runtime_deps INTERFACE ${CMAKE_DL_LIBS})
# LeakSanitizer (GCC 12's, on Debian 12's glibc) cannot walk the dynamic TLS
# of a library opened with dlopen and aborts at exit ("Tracer caught signal
# 11"). The address-sanitizer build therefore loads oneDNN and OpenBLAS with
# the program, where their TLS is static; opening them later finds them
# loaded, and the forwarding in dnnl_lazy.cc works as in the other builds.
if(TESSERA_SANITIZE STREQUAL "address")
  target_link_libraries(tessera_runtime_deps INTERFACE
    -Wl,--push-state,--no-as-needed ${DNNL_LIBRARY} ${OPENBLAS_LIBRARY} -Wl,--pop-state)
endif()
