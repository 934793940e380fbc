# CPU GEMM and neural-network primitives: OpenBLAS and oneDNN, both from
# Debian (libopenblas-dev, libdnnl-dev). GEMM picks the faster per shape.
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
find_library(DNNL_LIBRARY NAMES dnnl REQUIRED)
find_path(DNNL_INCLUDE_DIR NAMES oneapi/dnnl/dnnl.h REQUIRED)
# The kernels call both; the tensor layer holds the GEMM and the oneDNN helpers.
target_include_directories(tessera_tensor SYSTEM PUBLIC ${DNNL_INCLUDE_DIR})
target_link_libraries(tessera_tensor PUBLIC PkgConfig::OPENBLAS ${DNNL_LIBRARY})
# The runtime's objects need both wherever they are linked; tests and
# benchmarks call both directly, against libtessera.so.
target_include_directories(tessera_runtime_deps SYSTEM INTERFACE ${DNNL_INCLUDE_DIR})
target_link_libraries(tessera_runtime_deps INTERFACE PkgConfig::OPENBLAS ${DNNL_LIBRARY})
