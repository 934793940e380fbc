#include "engine/op/kernel_launch_cuda.cuh"
#include "ops/tensor/shape_transpose_op-inl.h"

namespace tessera::op {
namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;

// out (cols x rows) (req)= in (rows x cols)^T through a shared-memory tile, so
// both the reads and the writes are coalesced. Tiles along the rows are
// visited grid-stride, so any number of rows fits the grid.
template <int req, typename T>
__global__ void Transpose2DKernel(T* out, const T* in, int64_t rows, int64_t cols) {
  // Raw storage: the 16-bit float types have constructors, which __shared__ forbids.
  __shared__ __align__(8) unsigned char raw[kTile * (kTile + 1) * sizeof(T)];
  T* tile = reinterpret_cast<T*>(raw);
  const int64_t c0 = int64_t(blockIdx.x) * kTile;
  for (int64_t r0 = int64_t(blockIdx.y) * kTile; r0 < rows; r0 += int64_t(gridDim.y) * kTile) {
    for (int j = threadIdx.y; j < kTile; j += kRowsPerPass) {
      const int64_t r = r0 + j, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[j * (kTile + 1) + threadIdx.x] = in[r * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kRowsPerPass) {
      const int64_t oc = c0 + j, orow = r0 + threadIdx.x;  // output row oc, column orow
      if (oc < cols && orow < rows)
        AssignReq<req>(out[oc * rows + orow], tile[threadIdx.x * (kTile + 1) + j]);
    }
    __syncthreads();
  }
}

}  // namespace

template <>
bool Transpose2D<gpu>(const RunContext& rctx, OpReqType req, const TBlob& out, const TBlob& in,
                      const StridedLayout& layout) {
  StridedLayout l = layout;
  l.Coalesce();
  // Output (D0, D1) reading the input at i0 + i1 * D0: a (D1 x D0) matrix transposed.
  if (l.ndim != 2 || l.offset != 0 || l.strides[0] != 1 || l.strides[1] != l.dims[0]) return false;
  const int64_t rows = l.dims[1], cols = l.dims[0];
  const dim3 block(kTile, kRowsPerPass);
  const int64_t grid_x = (cols + kTile - 1) / kTile;
  if (grid_x > 0x7fffffff) return false;
  const dim3 grid(static_cast<unsigned>(grid_x),
                  static_cast<unsigned>(std::min<int64_t>((rows + kTile - 1) / kTile, 65535)));
  cudaStream_t stream = rctx.get_stream<cudaStream_t>();
  SwitchDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    SwitchReq(req, [&](auto r) {
      Transpose2DKernel<r.value, T>
          <<<grid, block, 0, stream>>>(out.dptr<T>(), in.dptr<T>(), rows, cols);
    });
  });
  TS_CUDA_CALL(cudaGetLastError());
  return true;
}

TS_REGISTER_OP(transpose).set_attr<FCompute>(kFComputeGPU, TransposeCompute<gpu>);

}  // namespace tessera::op
