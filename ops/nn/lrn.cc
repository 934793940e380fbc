// LRN: local response normalisation across channels (AlexNet's),
//   s_c = knorm + alpha / nsize * sum of x_c'^2 over the nsize channels
//         centred on c,
//   out_c = x_c * s_c^-beta.
// The backward, with a_c = g_c * x_c * s_c^(-beta-1):
//   dx_c = g_c * s_c^-beta - 2 * alpha * beta / nsize * x_c * sum of a_c'
//          over the window centred on c (the window is symmetric).
#include <cmath>
#include <memory>
#include <tuple>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/op/op_attr_types.h"
#include "ops/nn/lrn-inl.h"
#include "ops/tensor/dnnl_util.h"

namespace tessera::op {

namespace {

bool LRNShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known() && (*out)[0].known()) (*in)[0] = (*out)[0];
  const Shape& s = (*in)[0];
  if (!s.known()) return false;
  TS_CHECK(s.ndim() >= 3) << OpLabel(attrs) << ": data must be (batch, channel, ...), got " << s;
  AssignShape(attrs, out, 0, s, "output");
  return true;
}

bool LRNType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  CheckFloatTypes(attrs, *in, *out);
  return SameTypeAll(attrs, in, out);
}

// Calls fn(n, c, p, scale) for every element: sample n, channel c, spatial
// position p, scale = s at that element; `inner` positions per channel.
template <typename T, typename F>
void ForEachScale(const RunContext& rctx, const LRNParam& p, const Shape& s, const T* x, F fn) {
  using A = AccType<T>;
  const int64_t batch = s[0], channels = s[1], inner = s.ProdRange(2, s.ndim());
  const int64_t half = p.nsize / 2;
  const A coef = static_cast<A>(p.alpha) / static_cast<A>(p.nsize);
  [[maybe_unused]] const int threads = CpuThreads(rctx, s.Size());
  // Each (sample, channel) plane is written by one thread.
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
  for (int64_t nc = 0; nc < batch * channels; ++nc) {
    const int64_t n = nc / channels, c = nc % channels;
    const int64_t d0 = std::max<int64_t>(0, c - half), d1 = std::min(channels - 1, c + half);
    for (int64_t q = 0; q < inner; ++q) {
      A sum = 0;
      for (int64_t d = d0; d <= d1; ++d) {
        const A v = static_cast<A>(x[(n * channels + d) * inner + q]);
        sum += v * v;
      }
      fn(n, c, q, static_cast<A>(p.knorm) + coef * sum);
    }
  }
}

// oneDNN's LRN across channels (float32, plain layout, written not added):
// the same formula, 6-9x faster than the loop above on 2 threads
// (tests/bench/nn_dnnl_bench.cc). Its backward on a plain layout is a
// reference loop slower than ours, so only the forward is taken.
bool DnnlLRNForward(const LRNParam& p, const Shape& s, const float* x, float* y, int threads) {
  if (!nn_dnnl::Available()) return false;
  using dnnl::memory;
  using Key = std::tuple<int64_t, int64_t, int64_t, int, float, float, float>;
  struct Prim {
    memory::desc data;
    dnnl::lrn_forward fwd;
  };
  static nn_dnnl::PrimitiveCache<Key, Prim> cache;
  const int64_t batch = s[0], channels = s[1], inner = s.ProdRange(2, s.ndim());
  try {
    auto prim =
        cache.Get(Key{batch, channels, inner, p.nsize, p.alpha, p.beta, p.knorm}, threads, [&] {
          auto made = std::make_shared<Prim>();
          // (batch, channel, inner, 1): any number of spatial axes as one.
          made->data = memory::desc({batch, channels, inner, 1}, memory::data_type::f32,
                                    memory::format_tag::nchw);
          made->fwd = dnnl::lrn_forward(dnnl::lrn_forward::primitive_desc(
              dnnl::lrn_forward::desc(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::lrn_across_channels, made->data, p.nsize,
                                      p.alpha, p.beta, p.knorm),
              nn_dnnl::CpuEngine()));
          return made;
        });
    const auto& eng = nn_dnnl::CpuEngine();
    nn_dnnl::RunPrimitive(prim->fwd,
                          {{DNNL_ARG_SRC, memory(prim->data, eng, const_cast<float*>(x))},
                           {DNNL_ARG_DST, memory(prim->data, eng, y)}},
                          threads);
  } catch (const dnnl::error&) {
    return false;  // the loop does it
  }
  return true;
}

void LRNForward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<LRNParam>(attrs);
  const Shape& s = in[0].shape();
  // Odd windows only: oneDNN centres an even one differently from the loop.
  if (in[0].dtype() == DType::kFloat32 && req[0] == kWriteTo && p.nsize % 2 == 1 &&
      s.Size() >= kOmpMinElements && in[0].dptr_ != out[0].dptr_ &&
      DnnlLRNForward(p, s, in[0].dptr<float>(), out[0].dptr<float>(), ctx.run_ctx.omp_threads))
    return;
  LRNForwardElems<cpu>(attrs, ctx, in, req, out);
}

// (out_grad, data) -> data_grad.
void LRNBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  if (req[0] == kNullOp) return;
  const auto& p = ParamsOf<LRNParam>(attrs);
  const Shape& s = in[1].shape();
  SwitchFloatDType(
      in[1].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = AccType<T>;
        const T* g = in[0].dptr<T>();
        const T* x = in[1].dptr<T>();
        T* dx = out[0].dptr<T>();
        const int64_t channels = s[1], inner = s.ProdRange(2, s.ndim()), size = s.Size();
        const A beta = static_cast<A>(p.beta);
        std::vector<A> direct(static_cast<size_t>(size)), a(static_cast<size_t>(size));
        ForEachScale(ctx.run_ctx, p, s, x, [&](int64_t n, int64_t c, int64_t q, A scale) {
          const int64_t at = (n * channels + c) * inner + q;
          const A scaled = std::pow(scale, -beta);  // s^-beta; s^(-beta-1) is that over s
          direct[at] = static_cast<A>(g[at]) * scaled;
          a[at] = static_cast<A>(g[at]) * static_cast<A>(x[at]) * scaled / scale;
        });
        const int64_t half = p.nsize / 2;
        const A coef = 2 * static_cast<A>(p.alpha) * beta / static_cast<A>(p.nsize);
        [[maybe_unused]] const int threads = CpuThreads(ctx.run_ctx, size);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
        for (int64_t nc = 0; nc < s[0] * channels; ++nc) {
          const int64_t n = nc / channels, c = nc % channels;
          const int64_t d0 = std::max<int64_t>(0, c - half), d1 = std::min(channels - 1, c + half);
          for (int64_t q = 0; q < inner; ++q) {
            A sum = 0;
            for (int64_t d = d0; d <= d1; ++d) sum += a[(n * channels + d) * inner + q];
            const int64_t at = (n * channels + c) * inner + q;
            const A v = direct[at] - coef * static_cast<A>(x[at]) * sum;
            dx[at] = static_cast<T>(req[0] == kAddTo ? static_cast<A>(dx[at]) + v : v);
          }
        }
      },
      "_backward_LRN");
}

}  // namespace

TS_REGISTER_OP(LRN)
    .describe(R"(Local response normalisation across channels of (batch, channel, ...):
out = x / (knorm + alpha / nsize * sum of x^2 over nsize neighbouring channels)^beta.)")
    .set_num_inputs(1)
    .set_attr_parser(ParamParser<LRNParam>)
    .add_argument("data", "NDArray", "The input, (batch, channel, ...).")
    .add_arguments(LRNParam::Fields())
    .set_attr<FListInputNames>("FListInputNames", DataInputName)
    .set_attr<FInferShape>("FInferShape", LRNShape)
    .set_attr<FInferType>("FInferType", LRNType)
    .set_attr<FCompute>(kFComputeCPU, LRNForward)
    .set_attr<FGradient>("FGradient", [](const NodePtr& n, const std::vector<NodeEntry>& g) {
      return MakeGradNode("_backward_LRN", n, {g[0], n->inputs[0]});
    });

TS_REGISTER_OP(_backward_LRN)
    .describe("Gradient of LRN: (out_grad, data) -> data gradient.")
    .set_num_inputs(2)
    .set_attr_parser(ParamParser<LRNParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", ElemwiseShape<2, 1>)
    .set_attr<FInferType>("FInferType", LRNType)
    .set_attr<FCompute>(kFComputeCPU, LRNBackward);

}  // namespace tessera::op
