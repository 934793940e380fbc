#include "ops/tensor/reduce_utils.h"

#include <sstream>

#include "ops/tensor/reduce_op-inl.h"

namespace tessera::op {

namespace {

std::string AxisContext(const std::string& op, const Shape& in) {
  std::ostringstream os;
  os << op << " on input of shape " << in;
  return os.str();
}

}  // namespace

AxisMask ReduceAxesMask(const Shape& in, const std::optional<std::vector<int64_t>>& axis,
                        bool exclude, const std::string& op) {
  const int ndim = in.ndim();
  const AxisMask all = ndim >= 32 ? ~AxisMask(0) : (AxisMask(1) << ndim) - 1;
  if (!axis || axis->empty()) return all;
  AxisMask listed = 0;
  for (int64_t a : *axis) {
    const int ax = NormalizeAxis(a, ndim, AxisContext(op, in).c_str());
    TS_CHECK(!(listed & (AxisMask(1) << ax)))
        << op << ": axis " << a << " is listed twice in axis=" << FormatValue(*axis)
        << " (input shape " << in << ")";
    listed |= AxisMask(1) << ax;
  }
  return exclude ? (all & ~listed) : listed;
}

AxisMask ReduceAxisMask(const Shape& in, const std::optional<int>& axis, const std::string& op) {
  const int ndim = in.ndim();
  if (!axis) return (AxisMask(1) << ndim) - 1;
  return AxisMask(1) << NormalizeAxis(*axis, ndim, AxisContext(op, in).c_str());
}

Shape ReducedShape(const Shape& in, AxisMask mask, bool keepdims) {
  Shape out;
  for (int i = 0; i < in.ndim(); ++i) {
    if (!(mask & (AxisMask(1) << i)))
      out.push_back(in[i]);
    else if (keepdims)
      out.push_back(1);
  }
  if (out.ndim() == 0) out.push_back(1);
  return out;
}

Shape KeepDimsShape(const Shape& in, AxisMask mask) {
  Shape out = in;
  for (int i = 0; i < in.ndim(); ++i)
    if (mask & (AxisMask(1) << i)) out[i] = 1;
  return out;
}

void FillInputFromReduced(Shape* in, AxisMask mask, bool keepdims, const Shape& out) {
  if (out.ndim() == 0) return;
  int j = 0;
  for (int i = 0; i < in->ndim(); ++i) {
    const bool reduced = mask & (AxisMask(1) << i);
    if (reduced && !keepdims) continue;
    if (!reduced && j < out.ndim() && (*in)[i] == 0) (*in)[i] = out[j];
    ++j;
  }
}

ReducePlan MakeReducePlan(const Shape& in, const Shape& small) {
  ReducePlan p;
  // Walk from the innermost axis out, merging neighbours of the same kind.
  int64_t stride = 1;
  int last_kind = -1;  // 0 kept, 1 reduced
  int64_t keep_rev[Shape::kMaxNdim], keep_st[Shape::kMaxNdim];
  int64_t red_rev[Shape::kMaxNdim], red_st[Shape::kMaxNdim];
  int nk = 0, nr = 0;
  for (int i = in.ndim() - 1; i >= 0; --i) {
    const int64_t d = in[i];
    if (d == 1) continue;
    const int kind = small[i] == 1 ? 1 : 0;
    if (last_kind == -1) p.inner_reduced = kind == 1;
    if (kind == last_kind) {
      if (kind)
        red_rev[nr - 1] *= d;
      else
        keep_rev[nk - 1] *= d;
    } else if (kind) {
      red_rev[nr] = d, red_st[nr++] = stride;
    } else {
      keep_rev[nk] = d, keep_st[nk++] = stride;
    }
    last_kind = kind;
    stride *= d;
  }
  p.n_keep = nk;
  p.n_red = nr;
  for (int i = 0; i < nk; ++i) {
    p.keep_dim[i] = keep_rev[nk - 1 - i];
    p.keep_stride[i] = keep_st[nk - 1 - i];
    p.out_size *= p.keep_dim[i];
  }
  for (int i = 0; i < nr; ++i) {
    p.red_dim[i] = red_rev[nr - 1 - i];
    p.red_stride[i] = red_st[nr - 1 - i];
    p.red_size *= p.red_dim[i];
  }
  return p;
}

BroadcastIndex MakeBroadcastIndex(const Shape& big, const Shape& small) {
  // Collapse from the innermost axis out: merged axes keep the stride of
  // their innermost member in the output (0 when broadcast).
  int64_t dims[Shape::kMaxNdim], strides[Shape::kMaxNdim];
  int n = 0, last_kind = -1;
  int64_t out_stride = 1;
  for (int i = big.ndim() - 1; i >= 0; --i) {
    const int64_t d = big[i];
    if (d == 1) continue;
    const int kind = small[i] == 1 ? 1 : 0;
    if (kind == last_kind) {
      dims[n - 1] *= d;
    } else {
      dims[n] = d;
      strides[n++] = kind ? 0 : out_stride;
    }
    if (!kind) out_stride *= d;
    last_kind = kind;
  }
  BroadcastIndex b;
  b.ndim = n;
  for (int i = 0; i < n; ++i) {
    b.dim[i] = dims[n - 1 - i];
    b.out_stride[i] = strides[n - 1 - i];
  }
  return b;
}

Shape AlignToBroadcast(const Shape& in, const Shape& out, const char* op) {
  TS_CHECK(out.ndim() <= in.ndim())
      << op << ": cannot reduce shape " << in << " to " << out << " (more dimensions)";
  Shape aligned = Shape::Filled(in.ndim(), 1);
  const int pad = in.ndim() - out.ndim();
  for (int i = 0; i < out.ndim(); ++i) {
    TS_CHECK(out[i] == in[pad + i] || out[i] == 1)
        << op << ": cannot reduce shape " << in << " to " << out << " (dimension " << i << ")";
    aligned[pad + i] = out[i];
  }
  return aligned;
}

template <>
void ReduceToShape<cpu>(const OpContext& ctx, const TBlob& in, const TBlob& out, OpReqType req) {
  ReduceToShapeOn<cpu>(ctx, in, out, req);
}

}  // namespace tessera::op
