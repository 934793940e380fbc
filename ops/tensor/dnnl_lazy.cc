// The oneDNN C functions the kernels reach through dnnl.hpp's inline
// wrappers, defined here and forwarded to libdnnl, which is opened on the
// first call instead of with the program: loading it binds its symbols and
// its OpenCL loader, about a fifth of the start-up of `tessera -e ''`
// (measured with scripts/bench/startup.sh). Programs that call oneDNN
// themselves (tests, benchmarks) link libdnnl as usual and these forward to
// the same library.
//
// A oneDNN function the kernels start to use fails to link until it joins
// the list below (its declaration is in oneapi/dnnl/dnnl.h). Where oneDNN
// cannot be loaded, every call fails with dnnl_runtime_error: dnnl.hpp
// throws dnnl::error, and the kernels run their plain loops instead.
#include "ops/tensor/dnnl_lazy.h"

#include <dlfcn.h>

#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/op/deferred_init.h"

namespace tessera::op::nn_dnnl {
namespace {

// clang-format off
#define TS_DNNL_FUNCTIONS(X) \
  X(dnnl_status_t, dnnl_dilated_convolution_backward_data_desc_init, (dnnl_convolution_desc_t* conv_desc, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t* diff_src_desc, const dnnl_memory_desc_t* weights_desc, const dnnl_memory_desc_t* diff_dst_desc, const dnnl_dims_t strides, const dnnl_dims_t dilates, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r), (conv_desc, alg_kind, diff_src_desc, weights_desc, diff_dst_desc, strides, dilates, padding_l, padding_r)) \
  X(dnnl_status_t, dnnl_dilated_convolution_backward_weights_desc_init, (dnnl_convolution_desc_t* conv_desc, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t* src_desc, const dnnl_memory_desc_t* diff_weights_desc, const dnnl_memory_desc_t* diff_bias_desc, const dnnl_memory_desc_t* diff_dst_desc, const dnnl_dims_t strides, const dnnl_dims_t dilates, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r), (conv_desc, alg_kind, src_desc, diff_weights_desc, diff_bias_desc, diff_dst_desc, strides, dilates, padding_l, padding_r)) \
  X(dnnl_status_t, dnnl_dilated_convolution_forward_desc_init, (dnnl_convolution_desc_t* conv_desc, dnnl_prop_kind_t prop_kind, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t* src_desc, const dnnl_memory_desc_t* weights_desc, const dnnl_memory_desc_t* bias_desc, const dnnl_memory_desc_t* dst_desc, const dnnl_dims_t strides, const dnnl_dims_t dilates, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r), (conv_desc, prop_kind, alg_kind, src_desc, weights_desc, bias_desc, dst_desc, strides, dilates, padding_l, padding_r)) \
  X(dnnl_status_t, dnnl_engine_create, (dnnl_engine_t* engine, dnnl_engine_kind_t kind, size_t index), (engine, kind, index)) \
  X(dnnl_status_t, dnnl_engine_destroy, (dnnl_engine_t engine), (engine)) \
  X(dnnl_status_t, dnnl_lbr_gru_forward_desc_init, (dnnl_rnn_desc_t* rnn_desc, dnnl_prop_kind_t prop_kind, dnnl_rnn_direction_t direction, const dnnl_memory_desc_t* src_layer_desc, const dnnl_memory_desc_t* src_iter_desc, const dnnl_memory_desc_t* weights_layer_desc, const dnnl_memory_desc_t* weights_iter_desc, const dnnl_memory_desc_t* bias_desc, const dnnl_memory_desc_t* dst_layer_desc, const dnnl_memory_desc_t* dst_iter_desc, unsigned flags), (rnn_desc, prop_kind, direction, src_layer_desc, src_iter_desc, weights_layer_desc, weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, flags)) \
  X(dnnl_status_t, dnnl_lrn_forward_desc_init, (dnnl_lrn_desc_t* lrn_desc, dnnl_prop_kind_t prop_kind, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t* data_desc, dnnl_dim_t local_size, float alpha, float beta, float k), (lrn_desc, prop_kind, alg_kind, data_desc, local_size, alpha, beta, k)) \
  X(dnnl_status_t, dnnl_lstm_backward_desc_init, (dnnl_rnn_desc_t* rnn_desc, dnnl_prop_kind_t prop_kind, dnnl_rnn_direction_t direction, const dnnl_memory_desc_t* src_layer_desc, const dnnl_memory_desc_t* src_iter_desc, const dnnl_memory_desc_t* src_iter_c_desc, const dnnl_memory_desc_t* weights_layer_desc, const dnnl_memory_desc_t* weights_iter_desc, const dnnl_memory_desc_t* bias_desc, const dnnl_memory_desc_t* dst_layer_desc, const dnnl_memory_desc_t* dst_iter_desc, const dnnl_memory_desc_t* dst_iter_c_desc, const dnnl_memory_desc_t* diff_src_layer_desc, const dnnl_memory_desc_t* diff_src_iter_desc, const dnnl_memory_desc_t* diff_src_iter_c_desc, const dnnl_memory_desc_t* diff_weights_layer_desc, const dnnl_memory_desc_t* diff_weights_iter_desc, const dnnl_memory_desc_t* diff_bias_desc, const dnnl_memory_desc_t* diff_dst_layer_desc, const dnnl_memory_desc_t* diff_dst_iter_desc, const dnnl_memory_desc_t* diff_dst_iter_c_desc, unsigned flags), (rnn_desc, prop_kind, direction, src_layer_desc, src_iter_desc, src_iter_c_desc, weights_layer_desc, weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, dst_iter_c_desc, diff_src_layer_desc, diff_src_iter_desc, diff_src_iter_c_desc, diff_weights_layer_desc, diff_weights_iter_desc, diff_bias_desc, diff_dst_layer_desc, diff_dst_iter_desc, diff_dst_iter_c_desc, flags)) \
  X(dnnl_status_t, dnnl_lstm_forward_desc_init, (dnnl_rnn_desc_t* rnn_desc, dnnl_prop_kind_t prop_kind, dnnl_rnn_direction_t direction, const dnnl_memory_desc_t* src_layer_desc, const dnnl_memory_desc_t* src_iter_desc, const dnnl_memory_desc_t* src_iter_c_desc, const dnnl_memory_desc_t* weights_layer_desc, const dnnl_memory_desc_t* weights_iter_desc, const dnnl_memory_desc_t* bias_desc, const dnnl_memory_desc_t* dst_layer_desc, const dnnl_memory_desc_t* dst_iter_desc, const dnnl_memory_desc_t* dst_iter_c_desc, unsigned flags), (rnn_desc, prop_kind, direction, src_layer_desc, src_iter_desc, src_iter_c_desc, weights_layer_desc, weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, dst_iter_c_desc, flags)) \
  X(dnnl_status_t, dnnl_memory_create, (dnnl_memory_t* memory, const dnnl_memory_desc_t* memory_desc, dnnl_engine_t engine, void* handle), (memory, memory_desc, engine, handle)) \
  X(int, dnnl_memory_desc_equal, (const dnnl_memory_desc_t* lhs, const dnnl_memory_desc_t* rhs), (lhs, rhs)) \
  X(size_t, dnnl_memory_desc_get_size, (const dnnl_memory_desc_t* memory_desc), (memory_desc)) \
  X(dnnl_status_t, dnnl_memory_desc_init_by_strides, (dnnl_memory_desc_t* memory_desc, int ndims, const dnnl_dims_t dims, dnnl_data_type_t data_type, const dnnl_dims_t strides), (memory_desc, ndims, dims, data_type, strides)) \
  X(dnnl_status_t, dnnl_memory_desc_init_by_tag, (dnnl_memory_desc_t* memory_desc, int ndims, const dnnl_dims_t dims, dnnl_data_type_t data_type, dnnl_format_tag_t tag), (memory_desc, ndims, dims, data_type, tag)) \
  X(dnnl_status_t, dnnl_memory_destroy, (dnnl_memory_t memory), (memory)) \
  X(dnnl_status_t, dnnl_pooling_backward_desc_init, (dnnl_pooling_desc_t* pool_desc, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t* diff_src_desc, const dnnl_memory_desc_t* diff_dst_desc, const dnnl_dims_t strides, const dnnl_dims_t kernel, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r), (pool_desc, alg_kind, diff_src_desc, diff_dst_desc, strides, kernel, padding_l, padding_r)) \
  X(dnnl_status_t, dnnl_pooling_forward_desc_init, (dnnl_pooling_desc_t* pool_desc, dnnl_prop_kind_t prop_kind, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t* src_desc, const dnnl_memory_desc_t* dst_desc, const dnnl_dims_t strides, const dnnl_dims_t kernel, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r), (pool_desc, prop_kind, alg_kind, src_desc, dst_desc, strides, kernel, padding_l, padding_r)) \
  X(dnnl_status_t, dnnl_primitive_attr_create, (dnnl_primitive_attr_t* attr), (attr)) \
  X(dnnl_status_t, dnnl_primitive_attr_destroy, (dnnl_primitive_attr_t attr), (attr)) \
  X(dnnl_status_t, dnnl_primitive_attr_set_scratchpad_mode, (dnnl_primitive_attr_t attr, dnnl_scratchpad_mode_t mode), (attr, mode)) \
  X(dnnl_status_t, dnnl_primitive_create, (dnnl_primitive_t* primitive, const_dnnl_primitive_desc_t primitive_desc), (primitive, primitive_desc)) \
  X(dnnl_status_t, dnnl_primitive_desc_destroy, (dnnl_primitive_desc_t primitive_desc), (primitive_desc)) \
  X(dnnl_status_t, dnnl_primitive_desc_iterator_create, (dnnl_primitive_desc_iterator_t* iterator, const_dnnl_op_desc_t op_desc, const_dnnl_primitive_attr_t attr, dnnl_engine_t engine, const_dnnl_primitive_desc_t hint_forward_primitive_desc), (iterator, op_desc, attr, engine, hint_forward_primitive_desc)) \
  X(dnnl_status_t, dnnl_primitive_desc_iterator_destroy, (dnnl_primitive_desc_iterator_t iterator), (iterator)) \
  X(dnnl_primitive_desc_t, dnnl_primitive_desc_iterator_fetch, (const_dnnl_primitive_desc_iterator_t iterator), (iterator)) \
  X(const dnnl_memory_desc_t*, dnnl_primitive_desc_query_md, (const_dnnl_primitive_desc_t primitive_desc, dnnl_query_t what, int index), (primitive_desc, what, index)) \
  X(dnnl_status_t, dnnl_primitive_destroy, (dnnl_primitive_t primitive), (primitive)) \
  X(dnnl_status_t, dnnl_primitive_execute, (const_dnnl_primitive_t primitive, dnnl_stream_t stream, int nargs, const dnnl_exec_arg_t* args), (primitive, stream, nargs, args)) \
  X(dnnl_status_t, dnnl_reorder_primitive_desc_create, (dnnl_primitive_desc_t* reorder_primitive_desc, const dnnl_memory_desc_t* src_desc, dnnl_engine_t src_engine, const dnnl_memory_desc_t* dst_desc, dnnl_engine_t dst_engine, const_dnnl_primitive_attr_t attr), (reorder_primitive_desc, src_desc, src_engine, dst_desc, dst_engine, attr)) \
  X(dnnl_status_t, dnnl_sgemm, (char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha, const float* A, dnnl_dim_t lda, const float* B, dnnl_dim_t ldb, float beta, float* C, dnnl_dim_t ldc), (transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) \
  X(dnnl_status_t, dnnl_softmax_v2_backward_desc_init, (dnnl_softmax_v2_desc_t* softmax_desc, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t* diff_src_desc, const dnnl_memory_desc_t* diff_dst_desc, const dnnl_memory_desc_t* dst_desc, int softmax_axis), (softmax_desc, alg_kind, diff_src_desc, diff_dst_desc, dst_desc, softmax_axis)) \
  X(dnnl_status_t, dnnl_softmax_v2_forward_desc_init, (dnnl_softmax_v2_desc_t* softmax_desc, dnnl_prop_kind_t prop_kind, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t* src_desc, const dnnl_memory_desc_t* dst_desc, int softmax_axis), (softmax_desc, prop_kind, alg_kind, src_desc, dst_desc, softmax_axis)) \
  X(dnnl_status_t, dnnl_stream_create, (dnnl_stream_t* stream, dnnl_engine_t engine, unsigned flags), (stream, engine, flags)) \
  X(dnnl_status_t, dnnl_stream_destroy, (dnnl_stream_t stream), (stream)) \
  X(dnnl_status_t, dnnl_stream_wait, (dnnl_stream_t stream), (stream)) \
  X(dnnl_status_t, dnnl_vanilla_rnn_backward_desc_init, (dnnl_rnn_desc_t* rnn_desc, dnnl_prop_kind_t prop_kind, const dnnl_alg_kind_t activation, const dnnl_rnn_direction_t direction, const dnnl_memory_desc_t* src_layer_desc, const dnnl_memory_desc_t* src_iter_desc, const dnnl_memory_desc_t* weights_layer_desc, const dnnl_memory_desc_t* weights_iter_desc, const dnnl_memory_desc_t* bias_desc, const dnnl_memory_desc_t* dst_layer_desc, const dnnl_memory_desc_t* dst_iter_desc, const dnnl_memory_desc_t* diff_src_layer_desc, const dnnl_memory_desc_t* diff_src_iter_desc, const dnnl_memory_desc_t* diff_weights_layer_desc, const dnnl_memory_desc_t* diff_weights_iter_desc, const dnnl_memory_desc_t* diff_bias_desc, const dnnl_memory_desc_t* diff_dst_layer_desc, const dnnl_memory_desc_t* diff_dst_iter_desc, unsigned flags, float alpha, float beta), (rnn_desc, prop_kind, activation, direction, src_layer_desc, src_iter_desc, weights_layer_desc, weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, diff_src_layer_desc, diff_src_iter_desc, diff_weights_layer_desc, diff_weights_iter_desc, diff_bias_desc, diff_dst_layer_desc, diff_dst_iter_desc, flags, alpha, beta)) \
  X(dnnl_status_t, dnnl_vanilla_rnn_forward_desc_init, (dnnl_rnn_desc_t* rnn_desc, dnnl_prop_kind_t prop_kind, const dnnl_alg_kind_t activation, const dnnl_rnn_direction_t direction, const dnnl_memory_desc_t* src_layer_desc, const dnnl_memory_desc_t* src_iter_desc, const dnnl_memory_desc_t* weights_layer_desc, const dnnl_memory_desc_t* weights_iter_desc, const dnnl_memory_desc_t* bias_desc, const dnnl_memory_desc_t* dst_layer_desc, const dnnl_memory_desc_t* dst_iter_desc, unsigned flags, float alpha, float beta), (rnn_desc, prop_kind, activation, direction, src_layer_desc, src_iter_desc, weights_layer_desc, weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, flags, alpha, beta))
// clang-format on

enum Function {
#define TS_DNNL_ENUM(ret, name, params, args) k_##name,
  TS_DNNL_FUNCTIONS(TS_DNNL_ENUM)
#undef TS_DNNL_ENUM
      kNumFunctions
};

constexpr const char* kNames[] = {
#define TS_DNNL_NAME(ret, name, params, args) #name,
    TS_DNNL_FUNCTIONS(TS_DNNL_NAME)
#undef TS_DNNL_NAME
};

struct Library {
  void* fn[kNumFunctions] = {};
  bool ok = false;
};

// The library named by the environment's TESSERA_DNNL_LIBRARY alone, else
// the one the build found, else the system's libdnnl.so.2. A failure is said
// once, on stderr: the process goes on, slower.
Library Open() {
#if defined(__SANITIZE_THREAD__)
  // libgomp is not instrumented, so ThreadSanitizer cannot see its barriers:
  // under it, oneDNN's OpenMP regions run on one thread, as the runtime's own
  // do (CMakeLists.txt). libgomp reads this when oneDNN brings it in, below.
  setenv("OMP_NUM_THREADS", "1", 0);
#endif
  Library lib;
  std::string why;
  void* handle = nullptr;
  const char* chosen = std::getenv("TESSERA_DNNL_LIBRARY");
  std::vector<const char*> paths{TESSERA_DNNL_LIBRARY, "libdnnl.so.2"};
  if (chosen && *chosen) paths = {chosen};
  for (const char* path : paths) {
    if ((handle = dlopen(path, RTLD_NOW | RTLD_LOCAL))) break;
    const char* err = dlerror();
    why += std::string(why.empty() ? "" : "; ") + (err ? err : path);
  }
  lib.ok = handle != nullptr;
  for (int i = 0; lib.ok && i < kNumFunctions; ++i)
    if (!(lib.fn[i] = dlsym(handle, kNames[i]))) {
      why = std::string("the oneDNN loaded has no ") + kNames[i];
      lib.ok = false;
    }
  if (!lib.ok)
    std::fprintf(stderr,
                 "tessera: cannot load oneDNN (install libdnnl2): %s; convolution, pooling, "
                 "softmax, LRN and GEMM run their plain kernels\n",
                 why.c_str());
  return lib;
}

// Opened once, on the first call from any thread.
const Library& Loaded() {
  static const Library lib = Open();
  return lib;
}

template <typename R>
R Failed() {
  if constexpr (std::is_same_v<R, dnnl_status_t>)
    return dnnl_runtime_error;
  else
    return R{};
}

}  // namespace

bool Available() {
  return Loaded().ok;
}

#if defined(__SANITIZE_THREAD__)
// Under ThreadSanitizer oneDNN is opened at start-up, as when it was linked:
// its static state is then made before any thread exists. Opened later from
// an engine worker, its uninstrumented locks and initialisers look racy to
// the sanitizer, which cannot see their synchronisation.
// TS_INIT_AT_START: this library's other static initialisers run on the
// registry's first use, which may come after threads exist.
struct OpenAtStart {
  OpenAtStart() { Available(); }
};
[[maybe_unused]] const OpenAtStart kOpenedAtStart TS_INIT_AT_START;
#endif

}  // namespace tessera::op::nn_dnnl

#define TS_DNNL_FORWARD(ret, name, params, args)                                             \
  extern "C" ret name params {                                                               \
    using tessera::op::nn_dnnl::Loaded;                                                      \
    const auto& lib = Loaded();                                                              \
    if (!lib.ok) return tessera::op::nn_dnnl::Failed<ret>();                                 \
    return reinterpret_cast<decltype(&::name)>(lib.fn[tessera::op::nn_dnnl::k_##name]) args; \
  }
TS_DNNL_FUNCTIONS(TS_DNNL_FORWARD)
#undef TS_DNNL_FORWARD
