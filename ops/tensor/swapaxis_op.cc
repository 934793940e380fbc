#include "ops/tensor/swapaxis_op-inl.h"

namespace tessera::op {

bool SwapAxisProp::InferShape(std::vector<Shape>* in_shape, std::vector<Shape>* out_shape,
                              std::vector<Shape>*) const {
  TS_CHECK(in_shape->size() == 1) << "SwapAxis: takes 1 input, got " << in_shape->size();
  out_shape->resize(1);
  Shape& in = (*in_shape)[0];
  Shape& out = (*out_shape)[0];
  if (in.ndim() == 0 && out.ndim() == 0) return false;
  // Each side fills the other's unknowns; disagreement is an error.
  Shape merged = in.ndim() ? SwapAxes(in, param_.dim1, param_.dim2) : out;
  TS_CHECK(MergeShape(&merged, out))
      << "SwapAxis: output shape " << out << " does not match input shape " << in << " with axes "
      << param_.dim1 << " and " << param_.dim2 << " swapped";
  out = merged;
  in = SwapAxes(out, param_.dim1, param_.dim2);
  return in.known() && out.known();
}

Operator* SwapAxisProp::CreateOperator(Context ctx) const {
  if (ctx.is_gpu()) {
#ifdef TESSERA_WITH_CUDA
    return CreateSwapAxisOpGpu(param_);
#else
    TS_THROW << "SwapAxis on " << ctx.ToString() << ": this build has no CUDA";
#endif
  }
  return new SwapAxisOp<cpu>(param_);
}

TS_REGISTER_OP_PROPERTY(SwapAxis, SwapAxisProp)
    .add_alias("swapaxes")
    .describe(R"(Interchanges two axes of an array.

Example: for x of shape (2, 3, 4), SwapAxis(x, dim1=0, dim2=2) has shape (4, 3, 2)
and element [k, j, i] equal to x[i, j, k]. Swapping an axis with itself copies.)")
    .add_argument("data", "NDArray", "Input array.")
    .add_arguments(SwapAxisParam::Fields());

}  // namespace tessera::op
