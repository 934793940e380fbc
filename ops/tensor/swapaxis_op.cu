#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/swapaxis_op-inl.h"

namespace tessera::op {

Operator* CreateSwapAxisOpGpu(const SwapAxisParam& param) {
  return new SwapAxisOp<gpu>(param);
}

}  // namespace tessera::op
