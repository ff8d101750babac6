#pragma once
// The processes of one data-parallel run (a layer below train/): who this process is, and the few collectives
// the training loop needs, over float/double buffers and strings. Two implementations, chosen at build time:
//   dist_mpi.cpp     the MPI C API (OpenMPI), when CMake finds MPI (TINYFORMER_WITH_MPI);
//   dist_single.cpp  one process: rank 0 of 1, every collective returns its input.
// <mpi.h> stays out of this header. Every collective must be called by every rank, in the same order.
//
// MPI is initialised only when a launcher started this process (mpirun/mpiexec: OMPI_COMM_WORLD_SIZE or
// PMI_SIZE in the environment; srun --mpi=pmix: PMIX_RANK); otherwise a run is one process, exactly as without
// MPI. A build without MPI started as several processes refuses to run (init throws), instead of N
// independent runs writing to the same out dir.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tinyformer/tensor/hash.hpp"

namespace tf::dist {

// An error that every rank raises together at the same point (a failed start-up agreement, a stop that all
// ranks decided on the same step): the ranks can finish MPI normally. Any other exception on a rank of a
// multi-process run ends the whole job (abort).
class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Joins the job when a launcher started this process (MPI_Init_thread, FUNNELED: only the thread that called
// init calls MPI). Idempotent. Throws std::runtime_error when several processes were launched and the build has
// no MPI.
void init(int* argc, char*** argv);
// MPI_Finalize when init joined a job; a no-op otherwise. Idempotent.
void finalize();
// true when this build has MPI (the launcher decides whether it is used).
bool built_with_mpi();
// "OpenMPI 4.1.4" (the library's version string, first line) or "none".
std::string library_version();

int rank();  // 0-based; 0 without a job
int size();  // processes in the job; 1 without a job
inline bool is_root() { return rank() == 0; }

// data[i] = the sum over ranks of data[i], the same bits on every rank. The sum is taken in rank order
// (((r0 + r1) + r2) + ...) whatever the size of the buffer and the algorithm below it: rank r owns the slice
// [r*n/N, (r+1)*n/N), receives that slice from every rank (all-to-all), adds it up in rank order and sends the
// result to every rank (all-gather). Each rank sends and receives 2 (N-1)/N of the buffer, like a ring all-reduce.
void allreduce_sum(float* data, std::size_t n);
void allreduce_sum(double* data, std::size_t n);
// data = root's data on every rank (sizes must match).
void broadcast(float* data, std::size_t n, int root = 0);
void broadcast(std::string& bytes, int root = 0);
// Every rank's string, in rank order.
std::vector<std::string> allgather(const std::string& mine);
void barrier();
// Ends every process of the job with `code` (MPI_Abort) after printing nothing more; exits this process when
// there is no job.
[[noreturn]] void abort(int code);

// --- agreement, built on the collectives above (agree.cpp) ---

// Collective. Throws CollectiveError on every rank unless every rank passed the same `value`: the message names
// `what` and each rank that differs from rank 0 ("ranks disagree on the initial parameters (hash): rank 0 has
// 5c1f..., rank 1 has 09aa..."). `value` may be long (a config); the message quotes its first differing line.
void check_same(const std::string& what, const std::string& value);
// Collective: the start-up of every rank either succeeded (error empty) or failed with a message. When any failed,
// throws CollectiveError on every rank with the first failing rank's message ("rank 2: ..." unless that is rank 0,
// whose message is the single-process one).
void check_no_errors(const std::string& error);
// Collective: true on every rank when any rank passed true.
bool any(bool flag);

// The hash that compares large buffers between ranks cheaply: tensor/hash.hpp's, also under these names.
using tf::fnv1a;
using tf::hex64;

}  // namespace tf::dist
