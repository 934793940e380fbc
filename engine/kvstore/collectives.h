// Collectives across the processes of a job (MPI): the communication lane
// under the stores that span processes (mx.kv 'dist_sync').
//
//   Collectives& c = Collectives::Get();     // starts MPI on first use
//   c.PushAllreduce({g1, g2}, Collectives::Reduce::kSum, 0, "key 3");  // returns at once
//   g1.WaitToRead();                         // g1 = the sum over processes
//
// Each collective is an engine op (PushAsync, kAsync lane) that reads and
// writes its arrays' variables, so it waits for the ops that compute them
// and the ops that read them wait for it, as any op. Once its inputs are
// ready it is handed to one communication thread, which makes the MPI calls.
//
// Ordering. A collective matches the one of the same number on every other
// process, so every process must start them in the same order. The lane
// numbers collectives as they are pushed (a script pushes in the same order
// on every process) and runs them in that order, whatever order their inputs
// become ready in: a collective whose inputs are late holds back the later
// ones. Callers push in the order inputs become ready (a training step
// pushes the last layer's gradients first, as backward computes them), as
// PyTorch's DistributedDataParallel orders its buckets. `priority` orders
// the op among ready engine ops as usual; it cannot reorder the lane.
//
// Fusion. One PushAllreduce over several arrays is one MPI call over one
// buffer (arrays copied in and out): small gradients cost one latency
// rather than one each. Callers decide the buckets; the lane never merges
// two pushes, since that would depend on timing and differ between processes.
//
// Faults. Each collective starts with a non-blocking barrier polled against
// a deadline (TESSERA_KV_TIMEOUT seconds, 120 by default), then moves its
// data with the blocking MPI call: a collective the other processes never
// join fails with an error naming this rank and the
// collective, instead of hanging. After that the lane is broken (the
// processes disagree on what comes next) and every later collective fails
// at once. A collective whose input was poisoned (an op that computed it
// failed) is skipped by the engine; the lane still joins it on the other
// processes' behalf, contributing NaN (float) or 0, so they do not hang.
// A process that dies is mpirun's to report: it stops the job and names
// the rank. Abort(code) takes every process down (a script that failed).
#pragma once

#include <string>
#include <vector>

#include "engine/ndarray/ndarray.h"

namespace tessera::kvstore {

class Collectives {
 public:
  // The process's lane: loads libtessera_mpi.so and starts MPI on the first
  // call. Throws when MPI cannot start (not installed, no launcher).
  static Collectives& Get();
  // True once Get() has started the lane.
  static bool Started();

  int rank() const { return rank_; }
  int size() const { return size_; }
  double timeout_seconds() const { return timeout_s_; }

  enum class Reduce { kSum = 0, kMin = 1, kMax = 2 };
  // arrays[i] = its sum (min, max) over the processes, in place. CPU arrays
  // of one dtype (float32, float64, int32, int64, int8, uint8), more than
  // one fused into one call. `what` names it in errors ("key 3"). A
  // one-element min is how processes agree (does every one have another
  // batch?), and any allreduce is a barrier for what it carries.
  // `copies` (empty, or one per array, same shape and dtype): also written
  // with each result by the lane, in the same op (a store keeping its own
  // copy of what it reduced saves an engine op and its hand-offs).
  void PushAllreduce(const std::vector<NDArray>& arrays, Reduce op, int priority,
                     const std::string& what, const std::vector<NDArray>& copies = {});
  // arrays[i] = root's arrays[i], in place.
  void PushBroadcast(const std::vector<NDArray>& arrays, int root, int priority,
                     const std::string& what);

  // ---- one-sided: the asynchronous store ('dist_async') ----
  //
  // A window holds one value on its owner; the other processes reach it
  // without the owner taking part (MPI one-sided operations, passive
  // target). Collective: every process pushes the same windows in the same
  // order, with an array of the value's shape and dtype; the owner's
  // values are copied in. Returns the window's id (the same everywhere).
  int PushWindow(const NDArray& value, int owner, const std::string& what);
  enum class Access { kReplace = 0, kAdd = 1, kRead = 2 };
  // The window's values on its owner: replaced by `a`'s, `a`'s added to
  // them, or read into `a`. Not collective. Each is atomic per element
  // against every other access (MPI_Accumulate, MPI_Get_accumulate), not
  // per array: a read can see another process's add half done.
  void PushAccess(int window, Access how, const NDArray& a, int priority, const std::string& what);

  // At exit. Finalize: after the collectives pushed have ended, MPI ends
  // (call once the engine is idle). Abort: every process of the job is
  // stopped with `code`; does not return when the lane runs.
  static void Finalize();
  static void Abort(int code);

  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

 private:
  struct Impl;
  Collectives();
  ~Collectives();
  Impl* impl_;
  int rank_ = 0;
  int size_ = 1;
  double timeout_s_ = 120;
};

}  // namespace tessera::kvstore
