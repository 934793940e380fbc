// Convolution as batched im2col + GEMM (float32). The reference kernels
// (convolution.cc) multiply one image at a time; when an image has few
// output positions (a 2x2 map in ResNet's last stage) those products are
// slivers that no GEMM runs well. Here a chunk of images is laid out side by
// side, column block i holding image i, so that one product per group covers
// the chunk:
//
//   forward          Y[fg, b*ohw]  = W[fg, K] * col[K, b*ohw]
//   backward data    dcol[K, b*ohw] = W^T * dY[fg, b*ohw], then col2im
//   backward weights dW[fg, K]    += dY * col^T
//
// with K = channels per group x kernel size. Y and dY are kept filter-major
// in the temp space and moved to or from the (n, f, spatial) arrays by plain
// copies of one output map each. Chunks are sized so the temp space stays
// within kChunkBudget elements.
#include <algorithm>
#include <cstring>

#include "engine/base/error.h"
#include "ops/nn/convolution-inl.h"
#include "ops/nn/im2col.h"
#include "ops/tensor/gemm.h"

namespace tessera::op {

namespace {

// Elements of temp space a chunk may take (16 MB): large enough that the
// geometries this path is for (small maps) run the whole batch as one chunk.
constexpr int64_t kChunkBudget = int64_t{4} << 20;

struct GemmShape {
  int64_t k, ohw, fg, cg, chunk;
  int64_t ColElems() const { return k * chunk * ohw; }
  int64_t YElems() const { return fg * chunk * ohw; }
};

GemmShape ShapeOf(const ConvGeom& g) {
  GemmShape s;
  s.cg = g.cg();
  s.fg = g.fg();
  s.k = s.cg * g.ksize();
  s.ohw = g.out_size();
  const int64_t per_image = std::max<int64_t>(1, (s.k + s.fg) * s.ohw);
  s.chunk = std::clamp<int64_t>(kChunkBudget / per_image, 1, std::max<int64_t>(1, g.n));
  return s;
}

// The column matrix, then the filter-major outputs, then `extra` floats.
float* Space(const OpContext& ctx, const GemmShape& s, int64_t extra = 0) {
  return ctx.requested[0].get_space_typed<float>(
      static_cast<size_t>(s.ColElems() + s.YElems() + extra));
}

// col[:, i*ohw ...] = im2col of image n0 + i, group gi.
void ChunkIm2Col(const ConvGeom& g, const GemmShape& s, const float* data, int64_t n0, int64_t b,
                 int64_t gi, float* col, int threads) {
  const int64_t ld = b * s.ohw;
#pragma omp parallel for num_threads(threads) if (b > 1)
  for (int64_t i = 0; i < b; ++i)
    Im2Col(g, data + ((n0 + i) * g.c + gi * s.cg) * g.in_size(), col + i * s.ohw, ld);
}

// Adds column block i of dcol into image n0 + i's gradient, group gi.
void ChunkCol2Im(const ConvGeom& g, const GemmShape& s, const float* col, int64_t n0, int64_t b,
                 int64_t gi, float* gdata, int threads) {
  const int64_t ld = b * s.ohw;
#pragma omp parallel for num_threads(threads) if (b > 1)
  for (int64_t i = 0; i < b; ++i)
    Col2Im(g, col + i * s.ohw, gdata + ((n0 + i) * g.c + gi * s.cg) * g.in_size(), ld);
}

// y[f, i*ohw + e] -> out[n0 + i, gi*fg + f, e], written or added, plus bias.
void ScatterOutput(const ConvGeom& g, const GemmShape& s, const float* y, int64_t n0, int64_t b,
                   int64_t gi, const float* bias, bool add, float* out, int threads) {
  const int64_t ld = b * s.ohw;
#pragma omp parallel for collapse(2) num_threads(threads)
  for (int64_t i = 0; i < b; ++i)
    for (int64_t f = 0; f < s.fg; ++f) {
      const float* src = y + f * ld + i * s.ohw;
      float* dst = out + ((n0 + i) * g.f + gi * s.fg + f) * s.ohw;
      const float bv = bias ? bias[gi * s.fg + f] : 0.f;
      if (add) {
        for (int64_t e = 0; e < s.ohw; ++e) dst[e] += src[e] + bv;
      } else {
        for (int64_t e = 0; e < s.ohw; ++e) dst[e] = src[e] + bv;
      }
    }
}

// ograd[n0 + i, gi*fg + f, :] -> dy[f, i*ohw ...].
void GatherOgrad(const ConvGeom& g, const GemmShape& s, const float* ograd, int64_t n0, int64_t b,
                 int64_t gi, float* dy, int threads) {
  const int64_t ld = b * s.ohw;
#pragma omp parallel for collapse(2) num_threads(threads)
  for (int64_t i = 0; i < b; ++i)
    for (int64_t f = 0; f < s.fg; ++f)
      std::memcpy(dy + f * ld + i * s.ohw, ograd + ((n0 + i) * g.f + gi * s.fg + f) * s.ohw,
                  sizeof(float) * size_t(s.ohw));
}

// db[gi*fg + f] += the sum of row f of dy.
void AddBiasGrad(const GemmShape& s, const float* dy, int64_t cols, int64_t gi, float* db) {
  for (int64_t f = 0; f < s.fg; ++f) {
    const float* row = dy + f * cols;
    float sum = 0.f;
    for (int64_t e = 0; e < cols; ++e) sum += row[e];
    db[gi * s.fg + f] += sum;
  }
}

}  // namespace

void GemmConvForward(const ConvGeom& g, const OpContext& ctx, const float* data,
                     const float* weight, const float* bias, float* out, OpReqType req) {
  if (req == kNullOp) return;
  TS_DCHECK(g.spatial <= 2);  // 3-D runs the reference kernels
  const GemmShape s = ShapeOf(g);
  const int threads = ctx.run_ctx.omp_threads;
  float* col = Space(ctx, s);
  float* y = col + s.ColElems();
  for (int64_t n0 = 0; n0 < g.n; n0 += s.chunk) {
    const int64_t b = std::min(s.chunk, g.n - n0), cols = b * s.ohw;
    for (int64_t gi = 0; gi < g.g; ++gi) {
      ChunkIm2Col(g, s, data, n0, b, gi, col, threads);
      Gemm(false, false, s.fg, cols, s.k, 1.f, weight + gi * s.fg * s.k, s.k, col, cols, 0.f, y,
           cols, threads);
      ScatterOutput(g, s, y, n0, b, gi, bias, req == kAddTo, out, threads);
    }
  }
}

void GemmConvBackward(const ConvGeom& g, const OpContext& ctx, const float* ograd,
                      const float* data, const float* weight, float* gdata, OpReqType req_data,
                      float* gweight, OpReqType req_weight, float* gbias, OpReqType req_bias) {
  TS_DCHECK(g.spatial <= 2);  // 3-D runs the reference kernels
  const bool want_data = req_data != kNullOp, want_w = req_weight != kNullOp;
  const bool want_b = gbias && req_bias != kNullOp;
  if (!want_data && !want_w && !want_b) return;
  const GemmShape s = ShapeOf(g);
  const int threads = ctx.run_ctx.omp_threads;
  float* col = Space(ctx, s, g.f);
  float* dy = col + s.ColElems();
  float* db = dy + s.YElems();
  // Col2Im adds, so a written gradient starts from zero.
  if (want_data && req_data != kAddTo) std::fill(gdata, gdata + g.n * g.c * g.in_size(), 0.f);
  std::fill(db, db + g.f, 0.f);
  for (int64_t n0 = 0; n0 < g.n; n0 += s.chunk) {
    const int64_t b = std::min(s.chunk, g.n - n0), cols = b * s.ohw;
    // The first chunk writes a written weight gradient; later ones add.
    const float beta = (n0 == 0 && req_weight != kAddTo) ? 0.f : 1.f;
    for (int64_t gi = 0; gi < g.g; ++gi) {
      const float* w = weight + gi * s.fg * s.k;
      GatherOgrad(g, s, ograd, n0, b, gi, dy, threads);
      if (want_data) {
        Gemm(true, false, s.k, cols, s.fg, 1.f, w, s.k, dy, cols, 0.f, col, cols, threads);
        ChunkCol2Im(g, s, col, n0, b, gi, gdata, threads);
      }
      if (want_w) {
        ChunkIm2Col(g, s, data, n0, b, gi, col, threads);
        Gemm(false, true, s.fg, s.k, cols, 1.f, dy, cols, col, cols, beta,
             gweight + gi * s.fg * s.k, s.k, threads);
      }
      if (want_b) AddBiasGrad(s, dy, cols, gi, db);
    }
  }
  if (want_b) {
    for (int64_t f = 0; f < g.f; ++f) gbias[f] = req_bias == kAddTo ? gbias[f] + db[f] : db[f];
  }
}

}  // namespace tessera::op
