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
