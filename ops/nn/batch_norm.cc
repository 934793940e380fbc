// BatchNorm and _backward_BatchNorm, MXNet's parameters and semantics.
//
// Inputs data, gamma, beta and the auxiliary states moving_mean, moving_var
// (written by the op: FMutateInputs). Outputs: the normalised data, and the
// mean and inverse standard deviation used (visible with output_mean_var, as
// MXNet's "Output the mean and inverse std"). In training (is_train and not
// use_global_stats) the statistics are the batch's (biased variance) and the
// moving states become moving * momentum + batch * (1 - momentum); otherwise
// the moving states normalise and stay unchanged. fix_gamma (default True)
// uses gamma = 1 and gives gamma a zero gradient.
#include <cmath>
#include <optional>

#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "ops/nn/batch_norm-inl.h"

namespace tessera::op {

namespace {

bool BatchNormShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  TS_CHECK(in->size() == 5) << OpLabel(attrs)
                            << ": expects 5 inputs (data, gamma, beta, moving_mean, moving_var), "
                               "got "
                            << in->size();
  if ((*in)[0].ndim() == 0 && (*out)[0].ndim() > 0) AssignShape(attrs, in, 0, (*out)[0], "input");
  const Shape& data = (*in)[0];
  if (data.ndim() == 0) return false;
  const auto& p = ParamsOf<BatchNormParam>(attrs);
  const int nd = data.ndim();
  TS_CHECK(p.axis >= -nd && p.axis < nd) << OpLabel(attrs) << ": parameter 'axis' is " << p.axis
                                         << ", out of range for data of shape " << data;
  const int ax = p.axis < 0 ? p.axis + nd : p.axis;
  const Shape ch{data[ax]};
  static const char* names[] = {"data", "gamma", "beta", "moving_mean", "moving_var"};
  for (size_t i = 1; i < 5; ++i) AssignShape(attrs, in, i, ch, names[i]);
  AssignShape(attrs, out, 0, data, "output");
  AssignShape(attrs, in, 0, (*out)[0], "input");
  AssignShape(attrs, out, 1, ch, "output");
  AssignShape(attrs, out, 2, ch, "output");
  return AllKnown(*in) && AllKnown(*out);
}

bool BatchNormType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const bool ok = SameTypeAll(attrs, in, out);
  for (DType t : *in)
    TS_CHECK(t == DType::kUnknown || IsFloatingPoint(t))
        << OpLabel(attrs) << ": dtype " << DTypeName(t)
        << " is not supported (float16, bfloat16, float32, float64)";
  return ok;
}

// Row sums in double with eight independent partial sums: one running sum
// is a chain of dependent additions, several times slower than the loads.
constexpr int kLanes = 8;

template <typename T, typename Term>
double RowSum(int64_t n, Term term) {
  double s = 0;
  int64_t i = 0;
  if (n >= kLanes) {
    double acc[kLanes] = {};
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) acc[j] += term(i + j);
    for (double a : acc) s += a;
  }
  for (; i < n; ++i) s += term(i);
  return s;
}

// Sum of p[i].
template <typename T>
double Sum(const T* p, int64_t n) {
  return RowSum<T>(n, [p](int64_t i) { return static_cast<double>(p[i]); });
}

// Sum of (p[i] - mean)^2.
template <typename T>
double SumSqDev(const T* p, int64_t n, double mean) {
  return RowSum<T>(n, [p, mean](int64_t i) {
    const double d = static_cast<double>(p[i]) - mean;
    return d * d;
  });
}

// Sum of dy[i] * (x[i] - mean).
template <typename T>
double SumDyDev(const T* dy, const T* x, int64_t n, double mean) {
  return RowSum<T>(n, [dy, x, mean](int64_t i) {
    return static_cast<double>(dy[i]) * (static_cast<double>(x[i]) - mean);
  });
}

template <typename T>
void Store(T& dst, double v, OpReqType req) {
  if (req == kNullOp) return;
  dst = req == kAddTo ? static_cast<T>(static_cast<double>(dst) + v) : static_cast<T>(v);
}

// fn(c) for each channel, on the op's threads.
template <typename Fn>
void ForEachChannel(const OpContext& ctx, int64_t channels, Fn&& fn) {
  [[maybe_unused]] const int threads = ctx.run_ctx.omp_threads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (channels > 1)
#endif
  for (int64_t c = 0; c < channels; ++c) fn(c);
}

// The channel-blocked layout (MemLayout::kNChw16c, float32, axis 1): the 16
// channels of a block are the innermost 16 floats, so each block's
// statistics are 16 sums side by side over (batch, position), one vector
// per element. Blocks go to the op's threads.
constexpr int64_t kBlock = 16;

struct BlockedGeom {
  int64_t n = 0, blocks = 0, hw = 0;
  explicit BlockedGeom(const Shape& s) : n(s[0]), blocks(s[1] / kBlock), hw(s[2] * s[3]) {}
  // The first element of image i in block b.
  int64_t At(int64_t i, int64_t b) const { return (i * blocks + b) * hw * kBlock; }
};

template <typename Fn>
void ForEachBlock(const OpContext& ctx, int64_t blocks, Fn&& fn) {
  [[maybe_unused]] const int threads = ctx.run_ctx.omp_threads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (blocks > 1)
#endif
  for (int64_t b = 0; b < blocks; ++b) fn(b);
}

// acc[l] += term(x + k * 16 + l) over every (image, position) of block b.
template <typename Term>
void BlockSums(const BlockedGeom& g, int64_t b, double* acc, Term term) {
  for (int64_t i = 0; i < g.n; ++i) {
    const int64_t at = g.At(i, b);
    for (int64_t k = 0; k < g.hw; ++k)
      for (int l = 0; l < kBlock; ++l) acc[l] += term(at + k * kBlock + l, l);
  }
}

void BatchNormForwardBlocked(const BatchNormParam& p, const OpContext& ctx,
                             const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                             const std::vector<TBlob>& out) {
  const BlockedGeom g(in[0].shape());
  const bool batch_stats = UsesBatchStats(p, ctx);
  const double m = static_cast<double>(g.n * g.hw);
  const BnForwardBlobs<float> b(in, out);
  ForEachBlock(ctx, g.blocks, [&](int64_t blk) {
    const int64_t c0 = blk * kBlock;
    double mean[kBlock] = {}, var[kBlock] = {};
    if (batch_stats && m > 0) {
      BlockSums(g, blk, mean, [&](int64_t j, int) { return double(b.x[j]); });
      for (double& v : mean) v /= m;
      BlockSums(g, blk, var, [&](int64_t j, int l) {
        const double d = double(b.x[j]) - mean[l];
        return d * d;
      });
      for (double& v : var) v /= m;
    }
    float sa[kBlock], sb[kBlock];
    for (int l = 0; l < kBlock; ++l) {
      const int64_t c = c0 + l;
      if (batch_stats) {
        const double mom = p.momentum;
        b.moving_mean[c] = float(double(b.moving_mean[c]) * mom + mean[l] * (1 - mom));
        b.moving_var[c] = float(double(b.moving_var[c]) * mom + var[l] * (1 - mom));
      } else {
        mean[l] = double(b.moving_mean[c]);
        var[l] = double(b.moving_var[c]);
      }
      const double invstd = 1.0 / std::sqrt(var[l] + p.eps);
      const double scale = (p.fix_gamma ? 1.0 : double(b.gamma[c])) * invstd;
      sa[l] = float(scale);
      sb[l] = float(double(b.beta[c]) - mean[l] * scale);
      Store(b.mean[c], mean[l], req[1]);
      Store(b.invstd[c], invstd, req[2]);
    }
    if (req[0] == kNullOp) return;
    const bool add = req[0] == kAddTo;
    for (int64_t i = 0; i < g.n; ++i) {
      const float* px = b.x + g.At(i, blk);
      float* py = b.y + g.At(i, blk);
      for (int64_t k = 0; k < g.hw; ++k)
        for (int l = 0; l < kBlock; ++l) {
          const float v = px[k * kBlock + l] * sa[l] + sb[l];
          py[k * kBlock + l] = add ? py[k * kBlock + l] + v : v;
        }
    }
  });
}

void BatchNormBackwardBlocked(const BatchNormParam& p, const OpContext& ctx,
                              const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                              const std::vector<TBlob>& out) {
  const BlockedGeom g(in[1].shape());
  const bool batch_stats = UsesBatchStats(p, ctx);
  const double m = static_cast<double>(g.n * g.hw);
  const BnBackwardBlobs<float> b(in, out);
  ForEachBlock(ctx, g.blocks, [&](int64_t blk) {
    const int64_t c0 = blk * kBlock;
    double mean[kBlock], invstd[kBlock], sdy[kBlock] = {}, sdyx[kBlock] = {};
    for (int l = 0; l < kBlock; ++l) {
      mean[l] = double(b.mean[c0 + l]);
      invstd[l] = double(b.invstd[c0 + l]);
    }
    BlockSums(g, blk, sdy, [&](int64_t j, int) { return double(b.dy[j]); });
    BlockSums(g, blk, sdyx,
              [&](int64_t j, int l) { return double(b.dy[j]) * (double(b.x[j]) - mean[l]); });
    float ka[kBlock], ua[kBlock], va[kBlock];
    for (int l = 0; l < kBlock; ++l) {
      const int64_t c = c0 + l;
      sdyx[l] *= invstd[l];
      const double gm = p.fix_gamma ? 1.0 : double(b.gamma[c]);
      const double k = gm * invstd[l];
      const double a = batch_stats && m > 0 ? sdy[l] / m : 0.0;
      const double bm = batch_stats && m > 0 ? sdyx[l] / m : 0.0;
      ka[l] = float(k);
      ua[l] = float(-k * invstd[l] * bm);
      va[l] = float(-k * a + k * invstd[l] * bm * mean[l]);
      Store(b.dgamma[c], p.fix_gamma ? 0.0 : sdyx[l], req[1]);
      Store(b.dbeta[c], sdy[l], req[2]);
    }
    if (req[0] == kNullOp) return;
    const bool add = req[0] == kAddTo;
    for (int64_t i = 0; i < g.n; ++i) {
      const int64_t at = g.At(i, blk);
      const float *px = b.x + at, *pd = b.dy + at;
      float* pdx = b.dx + at;
      for (int64_t k = 0; k < g.hw; ++k)
        for (int l = 0; l < kBlock; ++l) {
          const int64_t j = k * kBlock + l;
          const float v = ka[l] * pd[j] + ua[l] * px[j] + va[l];
          pdx[j] = add ? pdx[j] + v : v;
        }
    }
  });
}

// BatchNorm's arrays of data shape may be channel-blocked (one class): the
// kernels above compute in that layout. Only along axis 1, where the blocks are.
LayoutClasses BatchNormLayouts(const NodeAttrs& attrs, const std::vector<Shape>&) {
  if (ParamsOf<BatchNormParam>(attrs).axis != 1) return {};
  return {{1, kLayoutPlain, kLayoutPlain, kLayoutPlain, kLayoutPlain},
          {1, kLayoutPlain, kLayoutPlain}};
}

LayoutClasses BatchNormBackwardLayouts(const NodeAttrs& attrs, const std::vector<Shape>&) {
  if (ParamsOf<BatchNormParam>(attrs).axis != 1) return {};
  return {{1, 1, kLayoutPlain, kLayoutPlain, kLayoutPlain}, {1, kLayoutPlain, kLayoutPlain}};
}

// Inputs: data, gamma, beta, moving_mean, moving_var; outputs: out, mean, invstd.
void BatchNormCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<BatchNormParam>(attrs);
  if (in[0].channel_blocked()) return BatchNormForwardBlocked(p, ctx, in, req, out);
  const BnGeom g = MakeBnGeom(attrs, in[0].shape());
  const bool batch_stats = UsesBatchStats(p, ctx);
  const double m = static_cast<double>(g.outer * g.inner);
  WithBnBlobs<BnForwardBlobs>(in, out, "BatchNorm", [&](auto tag, const auto& b) {
    using T = typename decltype(tag)::type;
    ForEachChannel(ctx, g.c, [&](int64_t c) {
      double mean, var;
      if (batch_stats) {
        double s = 0;
        for (int64_t o = 0; o < g.outer; ++o) s += Sum(b.x + (o * g.c + c) * g.inner, g.inner);
        mean = m > 0 ? s / m : 0.0;
        double s2 = 0;
        for (int64_t o = 0; o < g.outer; ++o)
          s2 += SumSqDev(b.x + (o * g.c + c) * g.inner, g.inner, mean);
        var = m > 0 ? s2 / m : 0.0;
        const double mom = p.momentum;
        b.moving_mean[c] =
            static_cast<T>(static_cast<double>(b.moving_mean[c]) * mom + mean * (1 - mom));
        b.moving_var[c] =
            static_cast<T>(static_cast<double>(b.moving_var[c]) * mom + var * (1 - mom));
      } else {
        mean = static_cast<double>(b.moving_mean[c]);
        var = static_cast<double>(b.moving_var[c]);
      }
      const double invstd = 1.0 / std::sqrt(var + p.eps);
      const double gm = p.fix_gamma ? 1.0 : static_cast<double>(b.gamma[c]);
      const double scale = gm * invstd, shift = static_cast<double>(b.beta[c]) - mean * scale;
      using A = AccType<T>;
      const A sa = static_cast<A>(scale), sb = static_cast<A>(shift);
      if (req[0] != kNullOp)
        for (int64_t o = 0; o < g.outer; ++o) {
          const T* px = b.x + (o * g.c + c) * g.inner;
          T* py = b.y + (o * g.c + c) * g.inner;
          if (req[0] == kAddTo) {
            for (int64_t i = 0; i < g.inner; ++i)
              py[i] = static_cast<T>(static_cast<A>(py[i]) + static_cast<A>(px[i]) * sa + sb);
          } else {
            for (int64_t i = 0; i < g.inner; ++i)
              py[i] = static_cast<T>(static_cast<A>(px[i]) * sa + sb);
          }
        }
      Store(b.mean[c], mean, req[1]);
      Store(b.invstd[c], invstd, req[2]);
    });
  });
}

// _backward_BatchNorm: inputs ograd, data, gamma, mean, invstd (the forward's
// outputs 1 and 2); outputs the gradients of data, gamma, beta.
void BatchNormBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx,
                              const std::vector<TBlob>& in, const std::vector<OpReqType>& req,
                              const std::vector<TBlob>& out) {
  const auto& p = ParamsOf<BatchNormParam>(attrs);
  if (in[1].channel_blocked()) return BatchNormBackwardBlocked(p, ctx, in, req, out);
  const BnGeom g = MakeBnGeom(attrs, in[1].shape());
  const bool batch_stats = UsesBatchStats(p, ctx);
  const double m = static_cast<double>(g.outer * g.inner);
  WithBnBlobs<BnBackwardBlobs>(in, out, "_backward_BatchNorm", [&](auto tag, const auto& b) {
    using T = typename decltype(tag)::type;
    ForEachChannel(ctx, g.c, [&](int64_t c) {
      const double mean = static_cast<double>(b.mean[c]);
      const double invstd = static_cast<double>(b.invstd[c]);
      // sdyx: the sum of dy * (x - mean) * invstd.
      double sdy = 0, sdyx = 0;
      for (int64_t o = 0; o < g.outer; ++o) {
        const int64_t at = (o * g.c + c) * g.inner;
        sdy += Sum(b.dy + at, g.inner);
        sdyx += SumDyDev(b.dy + at, b.x + at, g.inner, mean);
      }
      sdyx *= invstd;
      const double gm = p.fix_gamma ? 1.0 : static_cast<double>(b.gamma[c]);
      if (req[0] != kNullOp) {
        const double k = gm * invstd;
        const double a = batch_stats && m > 0 ? sdy / m : 0.0;
        const double bm = batch_stats && m > 0 ? sdyx / m : 0.0;
        // dx = k * (dy - a - (x - mean) * invstd * bm) = k * dy + u * x + v.
        using A = AccType<T>;
        const A ka = static_cast<A>(k), ua = static_cast<A>(-k * invstd * bm),
                va = static_cast<A>(-k * a + k * invstd * bm * mean);
        for (int64_t o = 0; o < g.outer; ++o) {
          const T* px = b.x + (o * g.c + c) * g.inner;
          const T* pd = b.dy + (o * g.c + c) * g.inner;
          T* pdx = b.dx + (o * g.c + c) * g.inner;
          if (req[0] == kAddTo) {
            for (int64_t i = 0; i < g.inner; ++i)
              pdx[i] = static_cast<T>(static_cast<A>(pdx[i]) + ka * static_cast<A>(pd[i]) +
                                      ua * static_cast<A>(px[i]) + va);
          } else {
            for (int64_t i = 0; i < g.inner; ++i)
              pdx[i] = static_cast<T>(ka * static_cast<A>(pd[i]) + ua * static_cast<A>(px[i]) + va);
          }
        }
      }
      Store(b.dgamma[c], p.fix_gamma ? 0.0 : sdyx, req[1]);
      Store(b.dbeta[c], sdy, req[2]);
    });
  });
}

// Inputs: output gradient, data, gamma, and the batch mean and variance.
// gamma, mean and variance have one value per channel of the data, as the
// forward op's shape function says: the kernel reads them per channel.
bool BatchNormBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in,
                            std::vector<Shape>* out) {
  AssignShape(attrs, in, 0, (*in)[1], "input");
  AssignShape(attrs, in, 1, (*in)[0], "input");
  if ((*in)[1].known()) {
    std::vector<Shape> forward_in{(*in)[1], Shape(), Shape(), Shape(), Shape()}, forward_out(3);
    BatchNormShape(attrs, &forward_in, &forward_out);
    for (size_t i = 2; i < 5; ++i) AssignShape(attrs, in, i, forward_in[1], "input");
  }
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  AssignShape(attrs, out, 2, (*in)[2], "output");
  return AllKnown(*in) && AllKnown(*out);
}

std::vector<ResourceRequest> BnTempSpace(const NodeAttrs&) {
  return {ResourceRequest::kTempSpace};
}

struct BatchNormGrad {
  std::vector<NodeEntry> operator()(const NodePtr& n, const std::vector<NodeEntry>& ograds) const {
    std::vector<NodeEntry> r = MakeGradNode(
        "_backward_BatchNorm", n,
        {ograds[0], n->inputs[0], n->inputs[1], NodeEntry{n, 1, 0}, NodeEntry{n, 2, 0}});
    for (size_t i = 3; i < 5; ++i)
      r.push_back(MakeNode("zeros_like", n->attrs.name + "_in" + std::to_string(i) + "_zerograd",
                           {n->inputs[i]}));
    return r;
  }
};

}  // namespace

TS_REGISTER_OP(BatchNorm)
    .describe(R"(Batch normalisation (Ioffe and Szegedy, 2015), as MXNet.

out = (data - mean) / sqrt(var + eps) * gamma + beta, per channel along axis
(default 1). In training (is_train and not use_global_stats) mean and var are
the batch's (biased variance over every axis but `axis`) and the auxiliary
states are updated: moving_mean = moving_mean * momentum + mean * (1 - momentum),
likewise moving_var. Otherwise moving_mean and moving_var normalise.
fix_gamma (default True) uses gamma = 1 and leaves its gradient 0.
output_mean_var also returns the mean and the inverse std used.)")
    .set_num_inputs(5)
    .set_num_outputs(3)
    .set_attr_parser(ParamParser<BatchNormParam>)
    .add_argument("data", "NDArray", "Input data to batch normalization.")
    .add_argument("gamma", "NDArray", "gamma array (scale).")
    .add_argument("beta", "NDArray", "beta array (shift).")
    .add_argument("moving_mean", "NDArray", "running mean of input (auxiliary state).")
    .add_argument("moving_var", "NDArray", "running variance of input (auxiliary state).")
    .add_arguments(BatchNormParam::Fields())
    .set_attr<FListInputNames>(
        "FListInputNames",
        [](const NodeAttrs&) {
          return std::vector<std::string>{"data", "gamma", "beta", "moving_mean", "moving_var"};
        })
    .set_attr<FListOutputNames>("FListOutputNames",
                                [](const NodeAttrs&) {
                                  return std::vector<std::string>{"output", "mean", "var"};
                                })
    .set_attr<FNumVisibleOutputs>("FNumVisibleOutputs",
                                  [](const NodeAttrs& attrs) {
                                    return ParamsOf<BatchNormParam>(attrs).output_mean_var ? 3u
                                                                                           : 1u;
                                  })
    .set_attr<FMutateInputs>("FMutateInputs",
                             [](const NodeAttrs&) {
                               return std::vector<uint32_t>{3, 4};
                             })
    .set_attr<FInferShape>("FInferShape", BatchNormShape)
    .set_attr<FInferType>("FInferType", BatchNormType)
    .set_attr<FResourceRequest>("FResourceRequest", BnTempSpace)  // the GPU's partial sums
    .set_attr<FCompute>(kFComputeCPU, BatchNormCompute)
    .set_attr<FLayoutClasses>("FLayoutClasses", BatchNormLayouts)
    .set_attr<FGradient>("FGradient", BatchNormGrad{});

TS_REGISTER_OP(_backward_BatchNorm)
    .describe(
        "Gradient of BatchNorm. Inputs: ograd, data, gamma, and the forward's mean and "
        "inverse std outputs; outputs: the gradients of data, gamma and beta. In "
        "training the batch statistics' dependence on data is included.")
    .set_num_inputs(5)
    .set_num_outputs(3)
    .set_attr_parser(ParamParser<BatchNormParam>)
    .set_attr<TIsBackward>("TIsBackward", true)
    .set_attr<FInferShape>("FInferShape", BatchNormBackwardShape)
    .set_attr<FInferType>("FInferType", ElemwiseType<5, 3>)
    .set_attr<FResourceRequest>("FResourceRequest", BnTempSpace)
    .set_attr<FCompute>(kFComputeCPU, BatchNormBackwardCompute)
    .set_attr<FLayoutClasses>("FLayoutClasses", BatchNormBackwardLayouts);

}  // namespace tessera::op
