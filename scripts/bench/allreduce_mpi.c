/* The peer of allreduce_kv.lua: MPI_Allreduce called directly, in place, on
 * float32 buffers of the same sizes, in the same loop (warm-up, barrier,
 * `iters` sums, the time of the slowest rank). Prints rank 0's figures.
 *   mpicc -O2 allreduce_mpi.c -o allreduce_mpi && mpirun -np 2 ./allreduce_mpi 1 16 64 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int iters_for(double mb) { return mb <= 1 ? 200 : mb <= 16 ? 20 : 6; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int a = 1; a < argc; ++a) {
    const double mb = atof(argv[a]);
    const long n = (long)(mb * 1024 * 1024 / 4);
    float* buf = malloc(n * sizeof(float));
    for (long i = 0; i < n; ++i) buf[i] = 1.0f / (float)(i % 97 + 1);
    const int iters = iters_for(mb);
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);  /* warm-up */
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i)
      MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double dt = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
      printf("mpi_allreduce_%gMB_np%d: %.3f GB/s\n", mb, size,
             mb * iters / 1024.0 / slowest);
    free(buf);
  }
  MPI_Finalize();
  return 0;
}
