#include "ops/tensor/smooth_l1_op-inl.h"

namespace tessera::op {

// The forward is not in place: the gradient reads the input. The gradient may
// overwrite out_grad, which nothing needs afterwards.
TS_REGISTER_SIMPLE_OP(smooth_l1, cpu)
    .set_function(cpu::kDevice, SmoothL1Forward<cpu>, kNoInplace)
    .set_gradient(cpu::kDevice, SmoothL1BackwardUseIn<cpu>, kInplaceOutIn)
    .set_enable_scalar(true)
    .describe(R"(Smooth L1 loss, elementwise, with sigma = `scalar`:

    f(x) = 0.5 (sigma x)^2        if |x| < 1 / sigma^2
           |x| - 0.5 / sigma^2    otherwise

It is quadratic near zero and linear beyond, so large errors do not dominate the
gradient (as in Fast R-CNN's box regression loss).

Example: smooth_l1([-2, -0.5, 0, 0.5, 2], scalar=1) = [1.5, 0.125, 0, 0.125, 1.5].)");

}  // namespace tessera::op
