// The sequence ops' parameters, geometry, element kernels and computation,
// shared by the CPU (sequence_ops.cc) and GPU (sequence_ops.cu)
// registrations. The lengths are checked on the host (a length that is no
// whole number in range is an error naming the row), so the GPU copies them
// there first: SeqLengths<xpu> gives the kernels an int64 array on the
// op's device.
#pragma once

#include <string>
#include <vector>

#include "engine/op/kernel_launch.h"
#include "ops/nn/nn_common.h"

namespace tessera::op {

struct SequenceParam : Params<SequenceParam> {
  bool use_sequence_length = false;
  float value = 0.f;
  int axis = 0;
  static void Declare(ParamDecl<SequenceParam>& d) {
    d.field("use_sequence_length", &SequenceParam::use_sequence_length)
        .set_default(false)
        .describe("Whether a second input, sequence_length (batch,), gives each row's length.");
    d.field("value", &SequenceParam::value)
        .set_default(0.f)
        .describe("SequenceMask: the value written past each row's length.");
    d.field("axis", &SequenceParam::axis)
        .set_default(0)
        .set_axis()
        .describe("The time axis: the first (default) or the second (batch first).");
  }
};

inline const SequenceParam& SeqParams(const NodeAttrs& attrs) {
  return ParamsOf<SequenceParam>(attrs);
}

// Where element (t, n, k) of a (time, batch, rest) view lives.
struct SeqGeom {
  int64_t T = 0, N = 0, K = 1;
  bool batch_first = false;
  TS_XINLINE int64_t At(int64_t t, int64_t n) const {
    return (batch_first ? n * T + t : t * N + n) * K;
  }
  // Element i of the (time, batch, rest) array: its t and n.
  TS_XINLINE void Split(int64_t i, int64_t* t, int64_t* n) const {
    const int64_t r = i / K;
    *t = batch_first ? r % T : r / N;
    *n = batch_first ? r / T : r % N;
  }
};

inline int TimeAxis(const NodeAttrs& attrs, const Shape& data) {
  const int axis = SeqParams(attrs).axis;
  TS_CHECK(axis == 0 || axis == 1 || axis == -data.ndim() || axis == 1 - data.ndim())
      << OpLabel(attrs) << ": axis must be the first or the second axis of data " << data;
  return axis < 0 ? axis + data.ndim() : axis;
}

inline SeqGeom MakeSeqGeom(const NodeAttrs& attrs, const Shape& data) {
  SeqGeom g;
  g.batch_first = TimeAxis(attrs, data) == 1;
  g.T = data[g.batch_first ? 1 : 0];
  g.N = data[g.batch_first ? 0 : 1];
  g.K = data.ProdRange(2, data.ndim());
  return g;
}

// Each row's length from `values` (host memory, dtype t), or all T when the
// op takes none; a length outside [min_len, T] is an error naming the row.
inline std::vector<int64_t> CheckedLengths(const NodeAttrs& attrs, const SeqGeom& g, DType t,
                                           const void* values, int64_t min_len) {
  std::vector<int64_t> len(static_cast<size_t>(g.N), g.T);
  if (!values) return len;
  SwitchDType(
      t,
      [&](auto tag) {
        using L = typename decltype(tag)::type;
        const L* p = static_cast<const L*>(values);
        for (int64_t n = 0; n < g.N; ++n) {
          const double v = static_cast<double>(p[n]);
          TS_CHECK(v >= static_cast<double>(min_len) && v <= static_cast<double>(g.T) &&
                   v == static_cast<double>(static_cast<int64_t>(v)))
              << OpLabel(attrs) << ": sequence_length[" << n << "] = " << v
              << " is not a whole number in [" << min_len << ", " << g.T << "]";
          len[static_cast<size_t>(n)] = static_cast<int64_t>(v);
        }
      },
      "sequence_length");
  return len;
}

// SeqLengths<xpu>::Get(ctx, attrs, g, in, index, min_len, &keep): the rows'
// lengths as an array on the op's device (keep holds the host copy).
template <typename xpu>
struct SeqLengths;

template <>
struct SeqLengths<cpu> {
  static const int64_t* Get(const OpContext&, const NodeAttrs& attrs, const SeqGeom& g,
                            const std::vector<TBlob>& in, size_t index, int64_t min_len,
                            std::vector<int64_t>* keep) {
    const bool given = SeqParams(attrs).use_sequence_length;
    *keep = CheckedLengths(attrs, g, given ? in[index].dtype() : DType::kInt64,
                           given ? in[index].dptr_ : nullptr, min_len);
    return keep->data();
  }
};

template <typename T>
TS_XINLINE void SeqPut(OpReqType req, T* dst, T v) {
  if (req == kAddTo)
    *dst = static_cast<T>(static_cast<AccType<T>>(*dst) + static_cast<AccType<T>>(v));
  else if (req != kNullOp)
    *dst = v;
}

// y = x, with `fill` from each row's length on (SequenceMask; its backward
// with fill 0).
struct SeqMaskKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* y, const T* x, const int64_t* len, SeqGeom g, T fill,
                             OpReqType req) {
    int64_t t, n;
    g.Split(i, &t, &n);
    SeqPut(req, y + i, t < len[n] ? x[i] : fill);
  }
};

// y[n, k] = x[len[n] - 1, n, k].
struct SeqLastKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t j, T* y, const T* x, const int64_t* len, SeqGeom g,
                             OpReqType req) {
    const int64_t n = j / g.K, k = j % g.K;
    SeqPut(req, y + j, x[g.At(len[n] - 1, n) + k]);
  }
};

// dx = dy at each row's last step, 0 elsewhere.
struct SeqLastGradKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* dx, const T* dy, const int64_t* len, SeqGeom g,
                             OpReqType req) {
    int64_t t, n;
    g.Split(i, &t, &n);
    SeqPut(req, dx + i, t == len[n] - 1 ? dy[n * g.K + i % g.K] : T(0));
  }
};

// The first len[n] steps of row n reversed; the steps past it stay (MXNet's
// rule). Its own inverse: the backward is the same map.
struct SeqReverseKernel {
  template <typename T>
  TS_XINLINE static void Map(int64_t i, T* y, const T* x, const int64_t* len, SeqGeom g,
                             OpReqType req) {
    int64_t t, n;
    g.Split(i, &t, &n);
    const int64_t l = len[n];
    SeqPut(req, y + i, x[g.At(t < l ? l - 1 - t : t, n) + i % g.K]);
  }
};

// SequenceMask, and its backward (the same map with fill 0).
template <typename xpu>
void MaskCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const SeqGeom g = MakeSeqGeom(attrs, in[0].shape());
  std::vector<int64_t> keep;
  const int64_t* len = SeqLengths<xpu>::Get(ctx, attrs, g, in, 1, 0, &keep);
  const bool backward = attrs.op->name() != "SequenceMask";
  SwitchDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T fill = backward ? T(0) : static_cast<T>(SeqParams(attrs).value);
        Kernel<SeqMaskKernel, xpu>::Launch(ctx.run_ctx, in[0].Size(), out[0].dptr<T>(),
                                           in[0].dptr<T>(), len, g, fill, req[0]);
      },
      OpLabel(attrs).c_str());
}

template <typename xpu>
void LastCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const SeqGeom g = MakeSeqGeom(attrs, in[0].shape());
  std::vector<int64_t> keep;
  const int64_t* len = SeqLengths<xpu>::Get(ctx, attrs, g, in, 1, 1, &keep);
  SwitchDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<SeqLastKernel, xpu>::Launch(ctx.run_ctx, g.N * g.K, out[0].dptr<T>(),
                                           in[0].dptr<T>(), len, g, req[0]);
      },
      "SequenceLast");
}

// Inputs: ograd (batch, ...), data (for its shape), [lengths].
template <typename xpu>
void LastBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const SeqGeom g = MakeSeqGeom(attrs, in[1].shape());
  std::vector<int64_t> keep;
  const int64_t* len = SeqLengths<xpu>::Get(ctx, attrs, g, in, 2, 1, &keep);
  SwitchDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<SeqLastGradKernel, xpu>::Launch(ctx.run_ctx, in[1].Size(), out[0].dptr<T>(),
                                               in[0].dptr<T>(), len, g, req[0]);
      },
      "_backward_SequenceLast");
}

template <typename xpu>
void ReverseCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReqType>& req, const std::vector<TBlob>& out) {
  const SeqGeom g = MakeSeqGeom(attrs, in[0].shape());
  std::vector<int64_t> keep;
  const int64_t* len = SeqLengths<xpu>::Get(ctx, attrs, g, in, 1, 0, &keep);
  SwitchDType(
      in[0].dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        Kernel<SeqReverseKernel, xpu>::Launch(ctx.run_ctx, in[0].Size(), out[0].dptr<T>(),
                                              in[0].dptr<T>(), len, g, req[0]);
      },
      OpLabel(attrs).c_str());
}

}  // namespace tessera::op
