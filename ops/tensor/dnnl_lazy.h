// oneDNN is opened on first use (dnnl_lazy.cc); where it cannot be, its
// calls fail and the kernels run their plain loops.
#pragma once

namespace tessera::op::nn_dnnl {

// Whether oneDNN is loaded, opening it on the first call.
bool Available();

}  // namespace tessera::op::nn_dnnl
