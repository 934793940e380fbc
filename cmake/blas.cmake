# CPU GEMM and neural-network primitives: OpenBLAS and oneDNN, both from
# Debian (libopenblas-dev, libdnnl-dev). GEMM picks the faster per shape.
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
find_library(DNNL_LIBRARY NAMES dnnl REQUIRED)
find_path(DNNL_INCLUDE_DIR NAMES oneapi/dnnl/dnnl.h REQUIRED)
# The kernels call both; the tensor layer holds the GEMM and the oneDNN helpers.
# OpenBLAS is opened on first use (ops/tensor/gemm_openblas.cc), from the
# library pkg-config names: only its header is needed to build.
find_library(OPENBLAS_LIBRARY NAMES openblas PATHS ${OPENBLAS_LIBRARY_DIRS} NO_DEFAULT_PATH REQUIRED)
get_filename_component(OPENBLAS_LIBRARY_REAL ${OPENBLAS_LIBRARY} REALPATH)
target_include_directories(tessera_tensor SYSTEM PUBLIC ${DNNL_INCLUDE_DIR} ${OPENBLAS_INCLUDE_DIRS})
target_compile_definitions(tessera_tensor PRIVATE
  TESSERA_OPENBLAS_LIBRARY="${OPENBLAS_LIBRARY_REAL}")
target_link_libraries(tessera_tensor PUBLIC ${DNNL_LIBRARY})
# The runtime's objects need oneDNN wherever they are linked; tests and
# benchmarks call it directly, against libtessera.so (and OpenBLAS, which
# gemm_bench links itself).
target_include_directories(tessera_runtime_deps SYSTEM INTERFACE ${DNNL_INCLUDE_DIR}
  ${OPENBLAS_INCLUDE_DIRS})
target_link_libraries(tessera_runtime_deps INTERFACE ${DNNL_LIBRARY})
