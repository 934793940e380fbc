// The communication lane: libtessera_mpi.so's entry points, the requests in
// push order, and the thread that runs them (see collectives.h).
#include "engine/kvstore/collectives.h"

#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/base/env.h"
#include "engine/base/error.h"
#include "engine/base/shared_library.h"
#include "engine/scheduler/engine.h"
#include "engine/scheduler/push_group.h"

namespace tessera::kvstore {
namespace {

using Clock = std::chrono::steady_clock;

// ---- libtessera_mpi.so -------------------------------------------------------

// The shim's entry points, X(member, symbol, signature) for each: the shim
// is built apart (it links libmpi), so no header declares them here.
#define TS_MPI_FUNCTIONS(X)                                                     \
  X(init, tessera_mpi_init, int(int*, int*, char*, size_t))                     \
  X(allreduce, tessera_mpi_allreduce, int(void*, int, int, int, char*, size_t)) \
  X(bcast, tessera_mpi_bcast, int(void*, int, int, int, char*, size_t))         \
  X(ibarrier, tessera_mpi_ibarrier, int(void**, char*, size_t))                 \
  X(test, tessera_mpi_test, int(void*, int*, char*, size_t))                    \
  X(abort, tessera_mpi_abort, void(int))                                        \
  X(finalize, tessera_mpi_finalize, void())                                     \
  X(win_allocate, tessera_mpi_win_allocate,                                     \
    int(size_t, int, const void*, void**, void**, char*, size_t))               \
  X(win_free, tessera_mpi_win_free, void(void*))                                \
  X(rma, tessera_mpi_rma, int(void*, int, int, void*, int, int, char*, size_t)) \
  X(progress, tessera_mpi_progress, void())

struct MpiApi {
  TS_LIBRARY_FUNCTIONS_SIGNED(TS_MPI_FUNCTIONS)
};

// RTLD_GLOBAL: Open MPI's components, opened by libmpi itself, resolve
// their symbols against libmpi and libopen-pal, which must be global.
MpiApi LoadMpi() {
  std::string tried;
  for (const char* path : {TESSERA_MPI_LIBRARY, "libtessera_mpi.so"}) {
    if (void* lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL)) {
      MpiApi api{};
      api.Bind(lib, "kvstore: the MPI library");
      return api;
    }
    const char* why = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (why ? why : path);
  }
  TS_THROW << "kvstore: cannot load the MPI library (install libopenmpi3 and openmpi-bin): "
           << tried;
  return {};  // not reached: TS_THROW throws
}

// The shim's dtype codes (engine/kvstore/mpi/mpi_shim.cc).
int MpiType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return 0;
    case DType::kFloat64:
      return 1;
    case DType::kInt32:
      return 2;
    case DType::kInt64:
      return 3;
    case DType::kUint8:
      return 4;
    case DType::kInt8:
      return 5;
    default:
      return -1;
  }
}

enum class Kind { kAllreduce, kBroadcast, kWindow, kAccess };

struct Request {
  Kind kind = Kind::kAllreduce;
  Collectives::Reduce op = Collectives::Reduce::kSum;
  int root = 0;  // kBroadcast: the root; kWindow: the owner
  int window = -1;
  Collectives::Access access = Collectives::Access::kRead;
  std::vector<NDArray> arrays;
  std::vector<NDArray> copies;  // written with the results too (kAllreduce)
  std::string what;
  uint64_t seq = 0;
  // Handed to the lane once: by the op (its inputs ready) or, when the
  // engine skipped the op, by its group's end.
  std::atomic<bool> delivered{false};
  bool skipped = false;
  std::optional<engine::CallbackOnComplete> done;
};

}  // namespace

// A window of the asynchronous store (lane thread only).
struct Window {
  void* win = nullptr;
  void* base = nullptr;
  int owner = 0;
  size_t count = 0;
  DType dtype = DType::kFloat32;
};

struct Collectives::Impl {
  MpiApi api{};
  std::vector<Window> windows;  // by id (lane thread only)
  std::atomic<int> next_window{0};
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, std::shared_ptr<Request>> ready;  // delivered, by number (mu)
  uint64_t next_run = 0;                               // the number the lane runs next (mu)
  std::atomic<uint64_t> next_push{0};
  bool stop = false;                // (mu)
  std::atomic<int> abort_code{-1};  // >= 0: Abort was called
  std::string broken;               // why the lane is broken (lane thread only)
  std::vector<char> fusion;         // the fused buffer (lane thread only)
  std::string start_error;          // MPI's start failed (set before `started`)
  bool started = false;             // (mu)
  int rank = 0, size = 1;
  double timeout_s = 120;

  void Submit(const std::shared_ptr<Request>& r, const std::vector<engine::VarHandle>& reads,
              const std::vector<engine::VarHandle>& writes, int priority);
  void RunWindow(Request& r);
  void RunAccess(Request& r);
  void WaitForWork(std::unique_lock<std::mutex>& lock);
  void Deliver(const std::shared_ptr<Request>& r, bool skipped);
  void Loop();
  std::exception_ptr Run(Request& r);
  void RunOne(Request& r, char* data, size_t count, int type);
  void Await(void* request, const Request& r, const char* call);
  void Check(int rc, const char* error_text);
};

namespace {

std::atomic<Collectives*> g_lane{nullptr};
std::mutex g_start_mu;

constexpr size_t kErrLen = 512;

}  // namespace

// ---- pushing -------------------------------------------------------------------

namespace {

void CheckArrays(const std::vector<NDArray>& arrays, const char* call, const std::string& what) {
  TS_CHECK(!arrays.empty()) << "kvstore " << call << " (" << what << "): no arrays";
  const DType t = arrays[0].dtype();
  TS_CHECK(MpiType(t) >= 0) << "kvstore " << call << " (" << what << "): dtype " << DTypeName(t)
                            << " is not carried between processes (float32, float64, int32, "
                               "int64, int8, uint8 are)";
  for (const NDArray& a : arrays) {
    TS_CHECK(!a.is_none()) << "kvstore " << call << " (" << what << "): an array is empty";
    TS_CHECK(!a.ctx().is_gpu()) << "kvstore " << call << " (" << what
                                << "): the arrays must be on the CPU, got " << a.ctx().ToString();
    TS_CHECK(a.dtype() == t) << "kvstore " << call << " (" << what
                             << "): the arrays of one call share a dtype, got " << DTypeName(t)
                             << " and " << DTypeName(a.dtype());
  }
}

}  // namespace

const char* OpName(Kind k) {
  switch (k) {
    case Kind::kAllreduce:
      return "kvstore.allreduce";
    case Kind::kBroadcast:
      return "kvstore.broadcast";
    case Kind::kWindow:
      return "kvstore.window";
    default:
      return "kvstore.access";
  }
}

void Collectives::Impl::Submit(const std::shared_ptr<Request>& r,
                               const std::vector<engine::VarHandle>& reads,
                               const std::vector<engine::VarHandle>& writes, int priority) {
  r->seq = next_push.fetch_add(1, std::memory_order_relaxed);
  const char* name = OpName(r->kind);
  // The group tells when the op ended without running (an input poisoned).
  engine::PushGroup group;
  try {
    engine::Engine::Get()->PushAsync(
        [this, r](RunContext, engine::CallbackOnComplete done) {
          r->done = done;
          Deliver(r, false);
        },
        Context::CPU(), reads, writes, engine::FnProperty::kAsync, priority, name);
  } catch (...) {
    group.Close();
    Deliver(r, true);  // the other processes still run it
    throw;
  }
  group.Close();
  group.SetOnDone([this, r] { Deliver(r, true); });
  if (group.done()) Deliver(r, true);
}

void Collectives::Impl::Deliver(const std::shared_ptr<Request>& r, bool skipped) {
  if (r->delivered.exchange(true, std::memory_order_acq_rel)) return;
  r->skipped = skipped;
  {
    std::lock_guard lock(mu);
    ready.emplace(r->seq, r);
  }
  cv.notify_all();
}

void Collectives::PushAllreduce(const std::vector<NDArray>& arrays, Reduce op, int priority,
                                const std::string& what, const std::vector<NDArray>& copies) {
  CheckArrays(arrays, "allreduce", what);
  TS_CHECK(copies.empty() || copies.size() == arrays.size())
      << "kvstore allreduce (" << what << "): " << copies.size() << " copies for " << arrays.size()
      << " arrays";
  for (size_t i = 0; i < copies.size(); ++i)
    TS_CHECK(!copies[i].is_none() && !copies[i].ctx().is_gpu() &&
             copies[i].dtype() == arrays[i].dtype() && copies[i].Size() == arrays[i].Size())
        << "kvstore allreduce (" << what << "): copy " << i + 1
        << " must be a CPU array of the same size and dtype as its array";
  auto r = std::make_shared<Request>();
  r->kind = Kind::kAllreduce;
  r->op = op;
  r->arrays = arrays;
  r->what = what;
  r->copies = copies;
  // Read and written: an input that failed poisons the result (the engine
  // skips the op) rather than being overwritten as clean.
  std::vector<engine::VarHandle> reads, writes;
  for (const NDArray& a : arrays) reads.push_back(a.var());
  writes = reads;
  for (const NDArray& a : copies) writes.push_back(a.var());
  impl_->Submit(r, reads, writes, priority);
}

void Collectives::PushBroadcast(const std::vector<NDArray>& arrays, int root, int priority,
                                const std::string& what) {
  CheckArrays(arrays, "broadcast", what);
  TS_CHECK(root >= 0 && root < size_) << "kvstore broadcast (" << what << "): root " << root
                                      << " is not a rank of this job (0.." << size_ - 1 << ")";
  auto r = std::make_shared<Request>();
  r->kind = Kind::kBroadcast;
  r->root = root;
  r->arrays = arrays;
  r->what = what;
  std::vector<engine::VarHandle> vars;
  for (const NDArray& a : arrays) vars.push_back(a.var());
  impl_->Submit(r, vars, vars, priority);
}

int Collectives::PushWindow(const NDArray& value, int owner, const std::string& what) {
  CheckArrays({value}, "window", what);
  TS_CHECK(owner >= 0 && owner < size_) << "kvstore window (" << what << "): owner " << owner
                                        << " is not a rank of this job (0.." << size_ - 1 << ")";
  auto r = std::make_shared<Request>();
  r->kind = Kind::kWindow;
  r->root = owner;
  r->arrays = {value};
  r->what = what;
  r->window = impl_->next_window.fetch_add(1);
  impl_->Submit(r, {value.var()}, {}, 0);
  return r->window;
}

void Collectives::PushAccess(int window, Access how, const NDArray& a, int priority,
                             const std::string& what) {
  CheckArrays({a}, "access", what);
  TS_CHECK(window >= 0 && window < impl_->next_window.load())
      << "kvstore access (" << what << "): no window " << window;
  auto r = std::make_shared<Request>();
  r->kind = Kind::kAccess;
  r->window = window;
  r->access = how;
  r->arrays = {a};
  r->what = what;
  // A read writes `a` whole (a failed value before it is replaced); the
  // others only read it.
  if (how == Access::kRead) {
    impl_->Submit(r, {}, {a.var()}, priority);
  } else {
    impl_->Submit(r, {a.var()}, {}, priority);
  }
}

// ---- the lane ------------------------------------------------------------------

void Collectives::Impl::Loop() {
  char err[kErrLen] = {0};
  {
    std::lock_guard lock(mu);
    try {
      api = LoadMpi();
      if (api.init(&rank, &size, err, sizeof err) != 0) start_error = err;
    } catch (const std::exception& e) {
      start_error = e.what();
    }
    started = true;
  }
  cv.notify_all();
  if (!start_error.empty()) return;
  std::unique_lock lock(mu);
  for (;;) {
    WaitForWork(lock);
    if (abort_code.load() >= 0) api.abort(abort_code.load());
    if (ready.empty() || ready.begin()->first != next_run) break;  // stopping, nothing ready
    std::shared_ptr<Request> r = std::move(ready.begin()->second);
    ready.erase(ready.begin());
    ++next_run;
    lock.unlock();
    std::exception_ptr error = Run(*r);
    if (r->done) {
      if (error)
        (*r->done)(error);
      else
        (*r->done)();
    }
    r.reset();
    lock.lock();
  }
  lock.unlock();
  for (Window& w : windows) api.win_free(w.win);  // collective, in creation order
  api.finalize();
}

// Until the next request is delivered, or Stop/Abort. With windows open,
// the lane wakes every millisecond to let MPI serve the other processes'
// accesses to them.
void Collectives::Impl::WaitForWork(std::unique_lock<std::mutex>& lock) {
  const auto has_work = [&] {
    return stop || abort_code.load() >= 0 || (!ready.empty() && ready.begin()->first == next_run);
  };
  if (windows.empty()) {
    cv.wait(lock, has_work);
    return;
  }
  while (!cv.wait_for(lock, std::chrono::milliseconds(1), has_work)) {
    lock.unlock();
    api.progress();
    lock.lock();
  }
}

void Collectives::Impl::Check(int rc, const char* error_text) {
  if (rc == 0) return;
  broken = error_text;
  TS_THROW << "kvstore: rank " << rank << ": " << error_text;
}

// Polls an MPI request (the arrival barrier) until it completes, Abort is
// called, or the deadline passes. The first moments poll without sleeping
// (the others are usually there already); after that a peer is late, and
// the lane polls every 100 us.
void Collectives::Impl::Await(void* request, const Request& r, const char* call) {
  char err[kErrLen] = {0};
  const Clock::time_point start = Clock::now();
  const auto limit = std::chrono::duration<double>(timeout_s);
  for (;;) {
    int done = 0;
    Check(api.test(request, &done, err, sizeof err), err);
    if (done) return;
    if (abort_code.load(std::memory_order_relaxed) >= 0) api.abort(abort_code.load());
    const Clock::duration waited = Clock::now() - start;
    if (waited > limit) {
      broken = "collective #" + std::to_string(r.seq) + " (" + r.what + ") timed out";
      TS_THROW << "kvstore: rank " << rank << " of " << size << " waited " << timeout_s << " s in "
               << call << " #" << r.seq << " (" << r.what
               << ") for the other processes: one of them stopped early, failed, or runs "
                  "different collectives (TESSERA_KV_TIMEOUT sets the wait)";
    }
    if (waited < std::chrono::milliseconds(50)) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

// One MPI call over `count` elements at `data`, in pieces of at most
// INT_MAX elements (MPI counts are ints); every process cuts the same way.
void Collectives::Impl::RunOne(Request& r, char* data, size_t count, int type) {
  char err[kErrLen] = {0};
  const size_t elem = DTypeSize(r.arrays[0].dtype());
  constexpr size_t kPiece = size_t{1} << 30;
  for (size_t at = 0; at < count; at += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, count - at));
    char* p = data + at * elem;
    const char* call = r.kind == Kind::kAllreduce ? "allreduce" : "broadcast";
    // Every process is here (or the deadline passed): the blocking call
    // that follows cannot wait on one that never comes.
    void* request = nullptr;
    Check(api.ibarrier(&request, err, sizeof err), err);
    Await(request, r, call);
    if (r.kind == Kind::kAllreduce) {
      Check(api.allreduce(p, n, type, static_cast<int>(r.op), err, sizeof err), err);
    } else {
      Check(api.bcast(p, n, type, r.root, err, sizeof err), err);
    }
  }
}

namespace {

void CopyResults(const Request& r) {
  for (size_t i = 0; i < r.copies.size(); ++i)
    std::memcpy(r.copies[i].data().dptr_, r.arrays[i].data().dptr_,
                static_cast<size_t>(r.arrays[i].Size()) * DTypeSize(r.arrays[i].dtype()));
}

// What a skipped collective contributes: NaN (float) or 0, so the result on
// every process shows that one input was missing.
void FillMissing(char* data, size_t count, DType t) {
  if (t == DType::kFloat32) {
    std::fill_n(reinterpret_cast<float*>(data), count, std::numeric_limits<float>::quiet_NaN());
  } else if (t == DType::kFloat64) {
    std::fill_n(reinterpret_cast<double*>(data), count, std::numeric_limits<double>::quiet_NaN());
  } else {
    std::memset(data, 0, count * DTypeSize(t));
  }
}

}  // namespace

std::exception_ptr Collectives::Impl::Run(Request& r) {
  try {
    if (!broken.empty())
      TS_THROW << "kvstore: rank " << rank << ": " << r.what << " was not run: an earlier "
               << "collective failed (" << broken << "), so the processes no longer agree";
    if (r.kind == Kind::kWindow) {
      RunWindow(r);
      return nullptr;
    }
    if (r.kind == Kind::kAccess) {
      if (!r.skipped) RunAccess(r);  // not collective: a failed input sends nothing
      return nullptr;
    }
    const DType t = r.arrays[0].dtype();
    const int type = MpiType(t);
    const size_t elem = DTypeSize(t);
    size_t count = 0;
    for (const NDArray& a : r.arrays) count += static_cast<size_t>(a.Size());
    if (r.arrays.size() == 1 && !r.skipped) {
      RunOne(r, static_cast<char*>(r.arrays[0].data().dptr_), count, type);
      CopyResults(r);
      return nullptr;
    }
    if (fusion.size() < count * elem) fusion.resize(count * elem);
    if (r.skipped) {
      FillMissing(fusion.data(), count, t);
      RunOne(r, fusion.data(), count, type);
      return nullptr;
    }
    size_t at = 0;
    for (const NDArray& a : r.arrays) {
      const size_t bytes = static_cast<size_t>(a.Size()) * elem;
      std::memcpy(fusion.data() + at, a.data().dptr_, bytes);
      at += bytes;
    }
    RunOne(r, fusion.data(), count, type);
    at = 0;
    for (const NDArray& a : r.arrays) {
      const size_t bytes = static_cast<size_t>(a.Size()) * elem;
      std::memcpy(a.data().dptr_, fusion.data() + at, bytes);
      at += bytes;
    }
    CopyResults(r);
    return nullptr;
  } catch (...) {
    return std::current_exception();
  }
}

// Every process allocates the window (collective); the owner fills it with
// its value, or NaN when that value failed.
void Collectives::Impl::RunWindow(Request& r) {
  char err[kErrLen] = {0};
  const NDArray& v = r.arrays[0];
  const size_t elem = DTypeSize(v.dtype()), count = static_cast<size_t>(v.Size());
  const bool mine = r.root == rank;
  Window w;
  w.owner = r.root;
  w.count = count;
  w.dtype = v.dtype();
  // The owner's first values: the array's, or the missing-value fill when
  // its input failed. The shim puts them in before any process may access.
  std::vector<char> missing;
  const void* init = nullptr;
  if (mine && r.skipped) {
    missing.resize(count * elem);
    FillMissing(missing.data(), count, v.dtype());
    init = missing.data();
  } else if (mine) {
    init = v.data().dptr_;
  }
  Check(api.win_allocate(mine ? count * elem : 0, static_cast<int>(elem), init, &w.base, &w.win,
                         err, sizeof err),
        err);
  TS_DCHECK(static_cast<int>(windows.size()) == r.window);  // ids follow push order
  windows.push_back(w);
}

void Collectives::Impl::RunAccess(Request& r) {
  char err[kErrLen] = {0};
  TS_CHECK(r.window >= 0 && r.window < static_cast<int>(windows.size()))
      << "kvstore access (" << r.what << "): window " << r.window << " was never made";
  const Window& w = windows[static_cast<size_t>(r.window)];
  const NDArray& a = r.arrays[0];
  TS_CHECK(static_cast<size_t>(a.Size()) == w.count && a.dtype() == w.dtype)
      << "kvstore access (" << r.what << "): the window holds " << w.count << " "
      << DTypeName(w.dtype) << " values, the array " << a.Size() << " " << DTypeName(a.dtype());
  TS_CHECK(w.count <= static_cast<size_t>(INT_MAX))
      << "kvstore access (" << r.what << "): values of more than 2^31 elements";
  Check(api.rma(w.win, static_cast<int>(r.access), w.owner, a.data().dptr_,
                static_cast<int>(w.count), MpiType(w.dtype), err, sizeof err),
        err);
}

// ---- starting and stopping ---------------------------------------------------

Collectives::Collectives() : impl_(new Impl) {
  impl_->timeout_s = static_cast<double>(EnvInt("TESSERA_KV_TIMEOUT", 120));
  TS_CHECK(impl_->timeout_s > 0) << "TESSERA_KV_TIMEOUT must be a positive number of seconds";
  impl_->thread = std::thread([this] { impl_->Loop(); });
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->started; });
  rank_ = impl_->rank;
  size_ = impl_->size;
  timeout_s_ = impl_->timeout_s;
}

Collectives::~Collectives() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  delete impl_;
}

Collectives& Collectives::Get() {
  if (Collectives* c = g_lane.load(std::memory_order_acquire)) return *c;
  std::lock_guard lock(g_start_mu);
  if (Collectives* c = g_lane.load(std::memory_order_acquire)) return *c;
  auto* c = new Collectives;
  if (!c->impl_->start_error.empty()) {
    const std::string why = c->impl_->start_error;
    delete c;
    TS_THROW << "kvstore: MPI did not start: " << why;
  }
  g_lane.store(c, std::memory_order_release);
  return *c;
}

bool Collectives::Started() {
  return g_lane.load(std::memory_order_acquire) != nullptr;
}

void Collectives::Finalize() {
  std::lock_guard lock(g_start_mu);
  Collectives* c = g_lane.exchange(nullptr);
  delete c;  // the lane runs what was delivered, then ends MPI
}

void Collectives::Abort(int code) {
  Collectives* c = g_lane.load(std::memory_order_acquire);
  if (!c) return;
  c->impl_->abort_code.store(std::max(code, 0));
  c->impl_->cv.notify_all();
  if (c->impl_->thread.joinable()) c->impl_->thread.join();  // MPI_Abort ends the process
}

}  // namespace tessera::kvstore
