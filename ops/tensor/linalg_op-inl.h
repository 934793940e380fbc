// The linalg operators, MXNet's `_linalg_*` (mx.nd.linalg / mx.sym.linalg):
// products (gemm, gemm2, trmm, trsm, syrk), factorisations (potrf, potri,
// gelqf, syevd), LU-based ops (inverse, det, slogdet) and the diagonal and
// triangle ops. Every input is a stack of row-major matrices on its last two
// axes, batched over the leading ones (gemm and gemm2 may put the rows on
// another axis); float32 and float64 only, as MXNet's. Kernels call OpenBLAS's
// BLAS and LAPACK (lapack.h), one matrix per call, the matrices of a batch
// split over the op's threads.
//
// Files: linalg_common.cc (layouts, batching, triangles), linalg_gemm_op.cc,
// linalg_triangular_op.cc (trmm, trsm, syrk), linalg_factor_op.cc (potrf,
// potri, gelqf, syevd), linalg_lu_op.cc (inverse, det, slogdet),
// linalg_diag_op.cc (sumlogdiag, extract/make diag and trian).
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "engine/base/shape.h"
#include "engine/op/float_dispatch.h"
#include "engine/op/infer_utils.h"
#include "engine/op/kernel_launch.h"
#include "engine/op/op.h"
#include "engine/op/params.h"

namespace tessera::op {

// ---------------------------------------------------------------------------
// Parameters

template <typename P>
void DeclareProductFields(ParamDecl<P>& d) {
  d.field("transpose_a", &P::transpose_a).set_default(false).describe("Use A's transpose.");
  d.field("transpose_b", &P::transpose_b).set_default(false).describe("Use B's transpose.");
  d.field("alpha", &P::alpha).set_default(1.0).describe("Scale of the product.");
  d.field("axis", &P::axis)
      .set_default(-2)
      .set_axis()
      .describe(
          "The axis of the matrices' rows (their columns are on the last axis; every other "
          "axis is a batch axis).");
}

struct LinalgGemmParam : Params<LinalgGemmParam> {
  bool transpose_a = false, transpose_b = false;
  double alpha = 1.0, beta = 1.0;
  int axis = -2;
  static void Declare(ParamDecl<LinalgGemmParam>& d) {
    DeclareProductFields(d);
    d.field("beta", &LinalgGemmParam::beta).set_default(1.0).describe("Scale of C.");
  }
};

struct LinalgGemm2Param : Params<LinalgGemm2Param> {
  bool transpose_a = false, transpose_b = false;
  double alpha = 1.0;
  int axis = -2;
  static void Declare(ParamDecl<LinalgGemm2Param>& d) { DeclareProductFields(d); }
};

// trmm and trsm.
struct LinalgTriangParam : Params<LinalgTriangParam> {
  bool transpose = false, rightside = false, lower = true;
  double alpha = 1.0;
  static void Declare(ParamDecl<LinalgTriangParam>& d) {
    d.field("transpose", &LinalgTriangParam::transpose)
        .set_default(false)
        .describe("Use the triangular matrix's transpose.");
    d.field("rightside", &LinalgTriangParam::rightside)
        .set_default(false)
        .describe("The triangular matrix on the right of B instead of the left.");
    d.field("lower", &LinalgTriangParam::lower)
        .set_default(true)
        .describe("A is lower triangular (else upper); only that triangle is read.");
    d.field("alpha", &LinalgTriangParam::alpha).set_default(1.0).describe("Scale of the result.");
  }
};

struct LinalgSyrkParam : Params<LinalgSyrkParam> {
  bool transpose = false;
  double alpha = 1.0;
  static void Declare(ParamDecl<LinalgSyrkParam>& d) {
    d.field("transpose", &LinalgSyrkParam::transpose)
        .set_default(false)
        .describe("alpha A^T A instead of alpha A A^T.");
    d.field("alpha", &LinalgSyrkParam::alpha).set_default(1.0).describe("Scale of the result.");
  }
};

// potrf and potri.
struct LinalgLowerParam : Params<LinalgLowerParam> {
  bool lower = true;
  static void Declare(ParamDecl<LinalgLowerParam>& d) {
    d.field("lower", &LinalgLowerParam::lower)
        .set_default(true)
        .describe("The Cholesky factor is lower triangular (A = L L^T), else upper (A = U^T U).");
  }
};

// extractdiag, makediag (lower unused) and extracttrian, maketrian.
struct LinalgDiagParam : Params<LinalgDiagParam> {
  int offset = 0;
  static void Declare(ParamDecl<LinalgDiagParam>& d) {
    d.field("offset", &LinalgDiagParam::offset)
        .set_default(0)
        .describe("The diagonal: 0 the main one, k > 0 above it, k < 0 below.");
  }
};
struct LinalgTrianParam : Params<LinalgTrianParam> {
  int offset = 0;
  bool lower = true;
  static void Declare(ParamDecl<LinalgTrianParam>& d) {
    d.field("offset", &LinalgTrianParam::offset)
        .set_default(0)
        .describe(
            "The triangle's diagonal: k < 0 the lower triangle below diagonal k, k > 0 the "
            "upper one above it.");
    d.field("lower", &LinalgTrianParam::lower)
        .set_default(true)
        .describe("With offset 0: the lower triangle (else the upper), diagonal included.");
  }
};

// ---------------------------------------------------------------------------
// Layouts and batches

// A tensor as a batch of matrices: rows on one axis, columns on the last,
// every other axis a batch axis. Matrix b starts at Offset(b) and rows are ld
// elements apart. With rows on the second-last axis (the usual case) inner is
// 1 and the matrices lie back to back.
struct MatrixLayout {
  int64_t outer = 1, inner = 1, rows = 0, cols = 0;
  int64_t count() const { return outer * inner; }
  int64_t ld() const { return inner * cols; }
  int64_t Offset(int64_t b) const { return (b / inner) * rows * inner * cols + (b % inner) * cols; }
};

// The layout of `s` with rows on `axis` (0-based, normalised, < ndim - 1).
MatrixLayout LayoutOf(const Shape& s, int axis);
// Rows on the second-last axis; the op's label in the error when ndim < 2.
MatrixLayout StackOf(const NodeAttrs& attrs, const Shape& s, const char* arg);

// One value per matrix of the stack `s`: its batch axes, or (1) for a
// single matrix (MXNet's rule for det, slogdet and sumlogdiag).
Shape PerMatrixShape(const Shape& s);

// The shape of op(A) op(B) for gemm/gemm2 with rows on `axis` (checked: equal
// ranks and batch axes, matching inner dimensions); errors name both shapes.
Shape ProductShape(const NodeAttrs& attrs, const Shape& a, const Shape& b, bool ta, bool tb,
                   int axis);

// C (layout lc) = alpha op(A) op(B) + beta C for every matrix of the batch.
template <typename T>
void BatchedProduct(bool ta, bool tb, T alpha, const T* a, const MatrixLayout& la, const T* b,
                    const MatrixLayout& lb, T beta, T* c, const MatrixLayout& lc, int threads);

// A LAPACK failure: matrix `index` of the batch returned `info` (index -1:
// none failed).
struct MatrixFailure {
  int64_t index = -1;
  int info = 0;
};

// fn(b, scratch) for b in [0, count): the matrices split over the op's
// threads, every library call inside single-threaded; `scratch` is
// scratch_per_matrix elements of T of the op's temp space (requested as
// ctx.requested[0]) owned by the calling thread. fn returns LAPACK's info;
// the lowest failing matrix is returned.
template <typename T, typename F>
MatrixFailure ForEachMatrix(const OpContext& ctx, int64_t count, int64_t work_per_matrix,
                            int64_t scratch_per_matrix, F&& fn) {
  // Below about 2^15 flops a matrix a second thread costs more than it saves.
  const int64_t want = count * work_per_matrix < (int64_t{1} << 15) ? 1 : count;
  const int threads = static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(want, std::max(1, ctx.run_ctx.omp_threads))));
  T* scratch = scratch_per_matrix == 0
                   ? nullptr
                   : ctx.requested[0].get_space_typed<T>(size_t(threads * scratch_per_matrix));
  MatrixFailure first;
  if (threads == 1) {
    // Parenthesised: nvcc's front end misreads `b < count && first.index < 0`.
    for (int64_t b = 0; (b < count) && (first.index < 0); ++b)
      if (int info = fn(b, scratch); info != 0) first = {b, info};
    return first;
  }
  std::vector<MatrixFailure> failed(static_cast<size_t>(threads));
  // An exception must not leave an OpenMP region: kept, rethrown after.
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
  for (int64_t b = 0; b < count; ++b) {
    const int t = OmpThreadIndex();
    if (failed[t].index >= 0 || errors[t]) continue;
    try {
      if (int info = fn(b, scratch + t * scratch_per_matrix); info != 0) failed[t] = {b, info};
    } catch (...) {
      errors[t] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  for (const MatrixFailure& f : failed)
    if (f.index >= 0 && (first.index < 0 || f.index < first.index)) first = f;
  return first;
}

// The output a kernel writes: `out` itself, or for kAddTo a scratch array
// that Commit() adds to it; kNullOp gives a scratch array that is dropped.
template <typename T>
class ReqOutput {
 public:
  ReqOutput(const TBlob& out, OpReqType req);
  T* data() { return direct_ ? out_ : scratch_.data(); }
  void Commit();

 private:
  T* out_;
  int64_t size_;
  OpReqType req_;
  bool direct_;
  std::vector<T> scratch_;
};

// Triangles of one n x n matrix with leading dimension ld.
template <typename T>
void ZeroStrictUpper(T* a, int64_t n, int64_t ld);
template <typename T>
void ZeroStrictLower(T* a, int64_t n, int64_t ld);
// Mirrors the strict lower triangle onto the upper (lower_to_upper) or back.
template <typename T>
void Symmetrize(T* a, int64_t n, int64_t ld, bool lower_to_upper);
// b = a + a^T (n x n, contiguous).
template <typename T>
void AddTranspose(const T* a, T* b, int64_t n);

// FInferType of the linalg ops: one dtype for every input and output,
// float32 or float64.
bool LinalgType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out);

// The temp space every linalg op requests (scratch per thread).
std::vector<ResourceRequest> LinalgTempSpace(const NodeAttrs&);

// What every linalg backward op registers: its doc, `num_inputs` inputs (the
// output gradients, then what the forward op kept), `num_outputs` gradients,
// its shape and dtype rules and its CPU kernel. An op whose kernel needs the
// forward op's parameters or temp space adds them to the op returned.
Op& LinalgBackward(Op& op, std::string doc, uint32_t num_inputs, uint32_t num_outputs,
                   FInferShape shape, FCompute compute, FInferType type = LinalgType);

}  // namespace tessera::op
