// OpenMPI behind a small C entry table. It is built as a library of its own
// (libtessera_mpi.so) that engine/kvstore/collectives.cc opens when the first
// store across processes is made: libmpi pulls in a dozen libraries and
// starts nothing useful for a single process, so the shell's start-up never
// pays for it.
//
// Every function runs on the one thread that called tessera_mpi_init (the
// collectives' lane), which is what MPI_THREAD_FUNNELED asks. The lane first
// waits for every process to arrive with a non-blocking barrier that it
// polls against a deadline (a worker that never comes is an error, not a
// hang), then moves the data with the blocking call: Open MPI's tuned
// MPI_Allreduce ran about twice as fast as its MPI_Iallreduce (libnbc) on
// 16 and 64 MB here.
#include <mpi.h>
#include <cstring>

#include <cstdint>
#include <cstdio>

namespace {

void Say(char* error, size_t len, const char* what, int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int n = 0;
  MPI_Error_string(code, text, &n);
  std::snprintf(error, len, "%s: %s", what, text);
}

// dtype codes: engine/kvstore/collectives.cc's MpiType.
MPI_Datatype TypeOf(int code) {
  switch (code) {
    case 0:
      return MPI_FLOAT;
    case 1:
      return MPI_DOUBLE;
    case 2:
      return MPI_INT32_T;
    case 3:
      return MPI_INT64_T;
    case 4:
      return MPI_UINT8_T;
    case 5:
      return MPI_INT8_T;
    default:
      return MPI_DATATYPE_NULL;
  }
}

MPI_Op OpOf(int code) {
  switch (code) {
    case 0:
      return MPI_SUM;
    case 1:
      return MPI_MIN;
    default:
      return MPI_MAX;
  }
}

}  // namespace

#define TS_MPI_EXPORT extern "C" __attribute__((visibility("default")))

TS_MPI_EXPORT int tessera_mpi_init(int* rank, int* size, char* error, size_t len) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) {
      Say(error, len, "MPI_Init_thread", rc);
      return 1;
    }
  }
  // Errors come back as codes and become exceptions; the default handler
  // would abort every process without naming the operation.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return 0;
}

// op: 0 sum, 1 min, 2 max. In place on `buf`.
TS_MPI_EXPORT int tessera_mpi_allreduce(void* buf, int count, int dtype, int op, char* error,
                                        size_t len) {
  const int rc = MPI_Allreduce(MPI_IN_PLACE, buf, count, TypeOf(dtype), OpOf(op), MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    Say(error, len, "MPI_Allreduce", rc);
    return 1;
  }
  return 0;
}

TS_MPI_EXPORT int tessera_mpi_bcast(void* buf, int count, int dtype, int root, char* error,
                                    size_t len) {
  const int rc = MPI_Bcast(buf, count, TypeOf(dtype), root, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    Say(error, len, "MPI_Bcast", rc);
    return 1;
  }
  return 0;
}

TS_MPI_EXPORT int tessera_mpi_ibarrier(void** request, char* error, size_t len) {
  auto* r = new MPI_Request;
  const int rc = MPI_Ibarrier(MPI_COMM_WORLD, r);
  if (rc != MPI_SUCCESS) {
    delete r;
    Say(error, len, "MPI_Ibarrier", rc);
    return 1;
  }
  *request = r;
  return 0;
}

// *done = 1 once the request completed (it is freed then).
TS_MPI_EXPORT int tessera_mpi_test(void* request, int* done, char* error, size_t len) {
  auto* r = static_cast<MPI_Request*>(request);
  const int rc = MPI_Test(r, done, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    Say(error, len, "MPI_Test", rc);
    return 1;
  }
  if (*done) delete r;
  return 0;
}

// Takes every process of the job down (mpirun names this rank).
TS_MPI_EXPORT void tessera_mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
}

TS_MPI_EXPORT void tessera_mpi_finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// ---- one-sided: the values of the asynchronous store ------------------------

// Collective: a window of `bytes` on this process (0 where it owns nothing).
TS_MPI_EXPORT int tessera_mpi_win_allocate(size_t bytes, int disp_unit, const void* init,
                                           void** base, void** win, char* error, size_t len) {
  auto* w = new MPI_Win;
  int rc = MPI_Win_allocate(static_cast<MPI_Aint>(bytes), disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD,
                            base, w);
  if (rc != MPI_SUCCESS) {
    delete w;
    Say(error, len, "MPI_Win_allocate", rc);
    return 1;
  }
  // The owner's values go in inside an access epoch of its own, and no
  // process returns before they are there: another process's first access
  // could otherwise read zeros, or add to memory the owner then overwrites.
  if (init && bytes) {
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, *w);
    if (rc == MPI_SUCCESS) {
      std::memcpy(*base, init, bytes);
      rc = MPI_Win_unlock(me, *w);
    }
  }
  if (rc == MPI_SUCCESS) rc = MPI_Barrier(MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    Say(error, len, "the window's first values", rc);
    return 1;
  }
  *win = w;
  return 0;
}

// Collective, in creation order on every process.
TS_MPI_EXPORT void tessera_mpi_win_free(void* win) {
  auto* w = static_cast<MPI_Win*>(win);
  MPI_Win_free(w);
  delete w;
}

// On `target`'s window, element-wise atomic with every other such access:
// kind 0 replaces its values by buf's, 1 adds buf's to them, 2 reads them
// into buf. Blocks until done at the target (a passive-target epoch).
TS_MPI_EXPORT int tessera_mpi_rma(void* win, int kind, int target, void* buf, int count, int dtype,
                                  char* error, size_t len) {
  MPI_Win w = *static_cast<MPI_Win*>(win);
  const MPI_Datatype t = TypeOf(dtype);
  int rc = MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w);  // accumulates are atomic per element
  if (rc == MPI_SUCCESS) {
    if (kind == 2) {
      rc = MPI_Get_accumulate(nullptr, 0, t, buf, count, t, target, 0, count, t, MPI_NO_OP, w);
    } else {
      rc = MPI_Accumulate(buf, count, t, target, 0, count, t, kind == 0 ? MPI_REPLACE : MPI_SUM, w);
    }
    const int unlock = MPI_Win_unlock(target, w);
    if (rc == MPI_SUCCESS) rc = unlock;
  }
  if (rc != MPI_SUCCESS) {
    Say(error, len, kind == 2 ? "MPI_Get_accumulate" : "MPI_Accumulate", rc);
    return 1;
  }
  return 0;
}

// Lets Open MPI serve other processes' one-sided accesses to this one's
// windows while the lane has nothing else to do (transports without
// hardware one-sided support progress only inside MPI calls).
TS_MPI_EXPORT void tessera_mpi_progress() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}
