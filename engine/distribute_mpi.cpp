// The MPI calls of the work distribution (engine/distribute.cpp), built into the module libanasim_mpi.so
// (engine/module.hpp), which distribute.cpp loads only when the process was started by an MPI launcher. MPI is used
// here and nowhere else. Every function acts on MPI_COMM_WORLD.
#include <cstdint>
#include <mpi.h>
#include "engine/module.hpp"

ANASIM_MODULE_EXPORT int anasim_module_abi() { return anasim::module::kModuleAbi; }

// MPI_Init_thread (funneled: OpenMP threads never call MPI), then this process's rank and the number of ranks.
ANASIM_MODULE_EXPORT void anasim_mpi_init(int* argc, char*** argv, int* rank, int* size) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

ANASIM_MODULE_EXPORT void anasim_mpi_finalize() { MPI_Finalize(); }

ANASIM_MODULE_EXPORT void anasim_mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

// counts[r] = rank r's n (counts: one per rank).
ANASIM_MODULE_EXPORT void anasim_mpi_allgather_int(int n, int* counts) {
  MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
}

// Every rank's n bytes `mine` into `all` at displs[r] (counts from anasim_mpi_allgather_int).
ANASIM_MODULE_EXPORT void anasim_mpi_allgatherv_bytes(const char* mine, int n, char* all, const int* counts,
                                                      const int* displs) {
  MPI_Allgatherv(mine, n, MPI_BYTE, all, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
}

// Rank 0's n bytes at buf on every rank.
ANASIM_MODULE_EXPORT void anasim_mpi_bcast_bytes(void* buf, std::int64_t n) {
  MPI_Bcast(buf, static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD);
}
