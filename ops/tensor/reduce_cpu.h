// CPU drivers of the reductions. Two layouts cover every ReducePlan:
//  - rows: the innermost axis is reduced. Each output reads contiguous runs,
//    reduced in blocks of kBlock with kLanes independent accumulators (the
//    compiler vectorises the lanes); block results go to the outer
//    accumulator. OpenMP over outputs; a few outputs with long reductions
//    split into fixed-size chunks combined in order afterwards.
//  - columns: the innermost axis is kept. Each reduction step reads one
//    contiguous row of kept elements and accumulates it into a row of
//    accumulators (vectorises across outputs). OpenMP over column chunks;
//    few columns with many rows split the rows into chunks as well.
// Chunking depends only on the shapes, never on the thread count, so results
// are the same bit for bit with any number of threads.
#pragma once

#include <algorithm>
#include <memory>

#include "engine/op/kernel_launch.h"
#include "ops/tensor/reduce_reducers.h"
#include "ops/tensor/reduce_utils.h"

namespace tessera::op::reduce {

inline constexpr int kLanes = 8;
inline constexpr int64_t kBlock = 64;
inline constexpr int64_t kChunk = 32768;  // reduced elements per parallel chunk
inline constexpr int64_t kCols = 256;     // kept elements per column task
inline constexpr int64_t kFewOutputs = 64;

#define TS_REDUCE_PRAGMA(x) _Pragma(#x)
#ifdef _OPENMP
#define TS_REDUCE_PARALLEL_FOR(threads) \
  TS_REDUCE_PRAGMA(omp parallel for num_threads(threads) schedule(static) if (threads > 1))
#else
#define TS_REDUCE_PARALLEL_FOR(threads)
#endif

// acc combined with the n contiguous elements at x.
template <typename R, typename T, typename Outer>
inline Outer ReduceContiguous(const T* x, int64_t n, Outer acc) {
  using Inner = typename R::template Inner<T>;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    Inner lane[kLanes];
    for (int j = 0; j < kLanes; ++j) lane[j] = R::template Identity<Inner>();
    for (int64_t k = i; k < i + kBlock; k += kLanes)
      for (int j = 0; j < kLanes; ++j)
        lane[j] = R::Combine(lane[j], R::template Map<Inner>(x[k + j]));
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int j = 0; j < w; ++j) lane[j] = R::Combine(lane[j], lane[j + w]);
    acc = R::Combine(acc, static_cast<Outer>(lane[0]));
  }
  for (; i < n; ++i) acc = R::Combine(acc, R::template Map<Outer>(x[i]));
  return acc;
}

// Reduced elements [rb, re) of output o, for plans whose innermost axis is reduced.
template <typename R, typename T, typename Outer>
inline Outer ReduceRuns(const ReducePlan& p, const T* x, int64_t o, int64_t rb, int64_t re,
                        Outer acc) {
  const int64_t run = p.red_dim[p.n_red - 1];
  const int64_t base = p.OutBase(o);
  while (rb < re) {
    const int64_t in_run = rb % run;
    const int64_t len = std::min(run - in_run, re - rb);
    acc = ReduceContiguous<R>(x + base + p.RedOffset(rb), len, acc);
    rb += len;
  }
  return acc;
}

template <typename R, typename T, typename O>
void ReduceRowsCpu(const RunContext& rctx, const ReducePlan& p, const T* x, O* y, OpReqType req) {
  using Outer = typename R::template Outer<T>;
  const Outer id = R::template Identity<Outer>();
  [[maybe_unused]] const int threads = CpuThreads(rctx, p.out_size * p.red_size);
  if (p.out_size >= kFewOutputs || p.red_size < 2 * kChunk) {
    TS_REDUCE_PARALLEL_FOR(threads)
    for (int64_t o = 0; o < p.out_size; ++o)
      StoreReq(y[o], R::Finalize(ReduceRuns<R>(p, x, o, 0, p.red_size, id), p.red_size), req);
    return;
  }
  const int64_t chunks = (p.red_size + kChunk - 1) / kChunk;
  // Not std::vector: Outer may be bool (max/min of bool).
  std::unique_ptr<Outer[]> part(new Outer[static_cast<size_t>(p.out_size * chunks)]);
  TS_REDUCE_PARALLEL_FOR(threads)
  for (int64_t t = 0; t < p.out_size * chunks; ++t) {
    const int64_t o = t / chunks, c = t % chunks;
    part[t] = ReduceRuns<R>(p, x, o, c * kChunk, std::min(p.red_size, (c + 1) * kChunk), id);
  }
  for (int64_t o = 0; o < p.out_size; ++o) {
    Outer acc = id;
    for (int64_t c = 0; c < chunks; ++c) acc = R::Combine(acc, part[o * chunks + c]);
    StoreReq(y[o], R::Finalize(acc, p.red_size), req);
  }
}

// Rows [rb, re) of the reduction accumulated into acc[0, n) for the n
// columns starting at kept element `first` (plans whose innermost axis is kept).
template <typename R, typename T, typename Outer>
inline void ReduceColumns(const ReducePlan& p, const T* x, int64_t first, int64_t n, int64_t rb,
                          int64_t re, Outer* acc) {
  const T* base = x + p.OutBase(first);
  for (int64_t j = 0; j < n; ++j) acc[j] = R::template Identity<Outer>();
  for (int64_t r = rb; r < re; ++r) {
    const T* row = base + p.RedOffset(r);
    for (int64_t j = 0; j < n; ++j) acc[j] = R::Combine(acc[j], R::template Map<Outer>(row[j]));
  }
}

template <typename R, typename T, typename O>
void ReduceColumnsCpu(const RunContext& rctx, const ReducePlan& p, const T* x, O* y,
                      OpReqType req) {
  using Outer = typename R::template Outer<T>;
  const int64_t width = p.n_keep ? p.keep_dim[p.n_keep - 1] : 1;
  const int64_t groups = p.out_size / width;
  const int64_t col_chunks = (width + kCols - 1) / kCols;
  const int64_t tasks = groups * col_chunks;
  // Few columns and many rows: split the rows too, in chunks of ~kChunk elements.
  const int64_t rows_per_chunk = std::max<int64_t>(64, kChunk / width);
  const int64_t row_chunks =
      tasks >= kFewOutputs ? 1 : (p.red_size + rows_per_chunk - 1) / rows_per_chunk;
  [[maybe_unused]] const int threads = CpuThreads(rctx, p.out_size * p.red_size);
  if (row_chunks == 1) {
    TS_REDUCE_PARALLEL_FOR(threads)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t first = (t / col_chunks) * width + (t % col_chunks) * kCols;
      const int64_t n = std::min(kCols, width - (t % col_chunks) * kCols);
      Outer acc[kCols];
      ReduceColumns<R>(p, x, first, n, 0, p.red_size, acc);
      for (int64_t j = 0; j < n; ++j) StoreReq(y[first + j], R::Finalize(acc[j], p.red_size), req);
    }
    return;
  }
  std::unique_ptr<Outer[]> part(new Outer[static_cast<size_t>(p.out_size * row_chunks)]);
  TS_REDUCE_PARALLEL_FOR(threads)
  for (int64_t t = 0; t < tasks * row_chunks; ++t) {
    const int64_t task = t / row_chunks, c = t % row_chunks;
    const int64_t first = (task / col_chunks) * width + (task % col_chunks) * kCols;
    const int64_t n = std::min(kCols, width - (task % col_chunks) * kCols);
    const int64_t rb = c * rows_per_chunk, re = std::min(p.red_size, rb + rows_per_chunk);
    ReduceColumns<R>(p, x, first, n, rb, re, part.get() + c * p.out_size + first);
  }
  for (int64_t o = 0; o < p.out_size; ++o) {
    Outer acc = part[o];
    for (int64_t c = 1; c < row_chunks; ++c) acc = R::Combine(acc, part[c * p.out_size + o]);
    StoreReq(y[o], R::Finalize(acc, p.red_size), req);
  }
}

// y (req)= the reduction R of x under plan p; y has p.out_size elements.
template <typename R, typename T, typename O>
void ReduceCpu(const RunContext& rctx, const ReducePlan& p, const T* x, O* y, OpReqType req) {
  if (req == kNullOp) return;
  if (p.inner_reduced)
    ReduceRowsCpu<R>(rctx, p, x, y, req);
  else
    ReduceColumnsCpu<R>(rctx, p, x, y, req);
}

// argmax/argmin over the middle axis of x seen as (outer, len, inner); the
// index (0-based) is stored as O. Ties keep the first position.
template <typename Cmp, typename T, typename O>
void ArgReduceCpu(const RunContext& rctx, int64_t outer, int64_t len, int64_t inner, const T* x,
                  O* y, OpReqType req) {
  if (req == kNullOp) return;
  using A = AccType<T>;
  [[maybe_unused]] const int threads = CpuThreads(rctx, outer * len * inner);
  if (inner == 1) {
    TS_REDUCE_PARALLEL_FOR(threads)
    for (int64_t m = 0; m < outer; ++m) {
      const T* row = x + m * len;
      A best = static_cast<A>(row[0]);
      int64_t at = 0;
      for (int64_t k = 1; k < len; ++k) {
        const A v = static_cast<A>(row[k]);
        if (Cmp::Better(v, best)) best = v, at = k;
      }
      StoreReq(y[m], static_cast<double>(at), req);
    }
    return;
  }
  const int64_t col_chunks = (inner + kCols - 1) / kCols;
  TS_REDUCE_PARALLEL_FOR(threads)
  for (int64_t t = 0; t < outer * col_chunks; ++t) {
    const int64_t m = t / col_chunks, j0 = (t % col_chunks) * kCols;
    const int64_t n = std::min(kCols, inner - j0);
    const T* base = x + m * len * inner + j0;
    A best[kCols];
    int64_t at[kCols];
    for (int64_t j = 0; j < n; ++j) best[j] = static_cast<A>(base[j]), at[j] = 0;
    for (int64_t k = 1; k < len; ++k)
      for (int64_t j = 0; j < n; ++j) {
        const A v = static_cast<A>(base[k * inner + j]);
        if (Cmp::Better(v, best[j])) best[j] = v, at[j] = k;
      }
    for (int64_t j = 0; j < n; ++j)
      StoreReq(y[m * inner + j0 + j], static_cast<double>(at[j]), req);
  }
}

template <bool kIgnoreNaN, typename T, typename Acc>
void ProdGradCpu(const RunContext& rctx, const ReducePlan& p, const T* x, const T* g, T* gx,
                 Acc* tmp, OpReqType req) {
  if (req == kNullOp) return;
  [[maybe_unused]] const int threads = CpuThreads(rctx, p.out_size * p.red_size);
  TS_REDUCE_PARALLEL_FOR(threads)
  for (int64_t o = 0; o < p.out_size; ++o) ProdGradOne<kIgnoreNaN>(p, o, x, g, gx, tmp, req);
}

}  // namespace tessera::op::reduce
