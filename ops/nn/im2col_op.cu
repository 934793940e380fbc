// im2col and col2im on the GPU: the element kernels of im2col_op-inl.h on
// the op's stream.
#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/nn/im2col_op-inl.h"

namespace tessera::op {

TS_REGISTER_OP(im2col).set_attr<FCompute>(kFComputeGPU, PatchCompute<gpu, Im2ColParam, true, 0>);
TS_REGISTER_OP(_backward_im2col)
    .set_attr<FCompute>(kFComputeGPU, PatchCompute<gpu, Im2ColParam, false, 1>);
TS_REGISTER_OP(col2im).set_attr<FCompute>(kFComputeGPU, PatchCompute<gpu, Col2ImParam, false, -1>);
TS_REGISTER_OP(_backward_col2im)
    .set_attr<FCompute>(kFComputeGPU, PatchCompute<gpu, Col2ImParam, true, 0>);

}  // namespace tessera::op
