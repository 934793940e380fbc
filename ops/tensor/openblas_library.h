// The OpenBLAS shared library, opened on the first call that needs it (GEMM,
// LAPACK), never at start-up: loading it binds about 12,000 symbols, which
// was a third of the start-up of `tessera -e ''`.
//
// On load its own pthread pool is set to one thread: products and batches
// are split over OpenMP threads by the callers instead (gemm_openblas.cc
// says why).
#pragma once

namespace tessera::op::openblas {

// The address of `name` in OpenBLAS (TESSERA_OPENBLAS_LIBRARY, or else the
// system's libopenblas.so.0). Throws tessera::Error naming `who` when the
// library cannot be loaded or lacks the symbol; a failed load is tried again
// by the next call.
void* Symbol(const char* name, const char* who);

}  // namespace tessera::op::openblas
