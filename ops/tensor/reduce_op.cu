// GPU kernels of every reduction op, and ReduceToShape<gpu>.
#include "ops/tensor/reduce_gpu.cuh"

namespace tessera::op {

TS_REGISTER_OP(sum).set_attr<FCompute>(kFComputeGPU,
                                       ReduceAxesCompute<gpu, reduce::Sum, TypeSet::kNumeric>);
TS_REGISTER_OP(mean).set_attr<FCompute>(kFComputeGPU,
                                        ReduceAxesCompute<gpu, reduce::Mean, TypeSet::kNumeric>);
TS_REGISTER_OP(prod).set_attr<FCompute>(kFComputeGPU,
                                        ReduceAxesCompute<gpu, reduce::Prod, TypeSet::kNumeric>);
TS_REGISTER_OP(nansum).set_attr<FCompute>(
    kFComputeGPU, ReduceAxesCompute<gpu, reduce::NanSum, TypeSet::kNumeric>);
TS_REGISTER_OP(nanprod).set_attr<FCompute>(
    kFComputeGPU, ReduceAxesCompute<gpu, reduce::NanProd, TypeSet::kNumeric>);
TS_REGISTER_OP(max).set_attr<FCompute>(kFComputeGPU,
                                       ReduceAxesCompute<gpu, reduce::Max, TypeSet::kAll>);
TS_REGISTER_OP(min).set_attr<FCompute>(kFComputeGPU,
                                       ReduceAxesCompute<gpu, reduce::Min, TypeSet::kAll>);
TS_REGISTER_OP(norm).set_attr<FCompute>(kFComputeGPU, NormCompute<gpu>);
TS_REGISTER_OP(argmax).set_attr<FCompute>(kFComputeGPU, ArgReduceCompute<gpu, reduce::ArgMax>);
TS_REGISTER_OP(argmin).set_attr<FCompute>(kFComputeGPU, ArgReduceCompute<gpu, reduce::ArgMin>);
TS_REGISTER_OP(argmax_channel)
    .set_attr<FCompute>(kFComputeGPU, ArgReduceCompute<gpu, reduce::ArgMax>);

TS_REGISTER_OP(_backward_sum)
    .set_attr<FCompute>(kFComputeGPU, ReduceBackwardCompute<gpu, SumGrad, TypeSet::kNumeric>);
TS_REGISTER_OP(_backward_mean)
    .set_attr<FCompute>(kFComputeGPU, ReduceBackwardCompute<gpu, MeanGrad, TypeSet::kNumeric>);
TS_REGISTER_OP(_backward_nansum)
    .set_attr<FCompute>(kFComputeGPU, ReduceBackwardCompute<gpu, NanSumGrad, TypeSet::kNumeric>);
TS_REGISTER_OP(_backward_max)
    .set_attr<FCompute>(kFComputeGPU, ReduceBackwardCompute<gpu, MinMaxGrad, TypeSet::kNumeric>);
TS_REGISTER_OP(_backward_min)
    .set_attr<FCompute>(kFComputeGPU, ReduceBackwardCompute<gpu, MinMaxGrad, TypeSet::kNumeric>);
TS_REGISTER_OP(_backward_prod).set_attr<FCompute>(kFComputeGPU, ProdBackwardCompute<gpu, false>);
TS_REGISTER_OP(_backward_nanprod).set_attr<FCompute>(kFComputeGPU, ProdBackwardCompute<gpu, true>);
TS_REGISTER_OP(_backward_norm).set_attr<FCompute>(kFComputeGPU, NormBackwardCompute<gpu>);

template <>
void ReduceToShape<gpu>(const OpContext& ctx, const TBlob& in, const TBlob& out, OpReqType req) {
  ReduceToShapeOn<gpu>(ctx, in, out, req);
}

}  // namespace tessera::op
