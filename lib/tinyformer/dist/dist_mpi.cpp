// dist.hpp on the MPI C API (built when CMake finds MPI). MPI's default error handler stays: an MPI error ends the
// job with MPI's message, which is what a failed collective should do.
#ifdef TINYFORMER_WITH_MPI

#define OMPI_SKIP_MPICXX 1  // the plain C API: mpi.h included from C++ would declare the C++ bindings too
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/dist/launcher.hpp"

namespace tf::dist {

namespace {

bool g_joined = false;  // this process called MPI_Init_thread
bool g_finalized = false;
int g_rank = 0, g_size = 1;

int checked_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::length_error(
        fmt::format("dist::{}: {} elements is more than one MPI call takes ({})", what, n, INT_MAX));
  return static_cast<int>(n);
}

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}

// Reduce-scatter by all-to-all (rank r receives slice r from every rank and adds the copies in rank order), then
// all-gather of the summed slices. `scratch` holds the N received copies of this rank's slice between steps.
template <class T>
void allreduce_in_rank_order(T* data, std::size_t n) {
  if (g_size == 1 || n == 0) return;
  checked_count(n, "allreduce_sum");
  static std::vector<T> scratch;
  const auto N = static_cast<std::size_t>(g_size), me = static_cast<std::size_t>(g_rank);
  std::vector<int> counts(N), displs(N);
  for (std::size_t r = 0; r < N; ++r) {
    displs[r] = static_cast<int>(n * r / N);
    counts[r] = static_cast<int>(n * (r + 1) / N) - displs[r];
  }
  const int mine = counts[me];
  std::vector<int> recv_counts(N, mine), recv_displs(N);
  for (std::size_t r = 0; r < N; ++r) recv_displs[r] = static_cast<int>(r) * mine;
  scratch.resize(N * static_cast<std::size_t>(mine));
  MPI_Alltoallv(data, counts.data(), displs.data(), mpi_type<T>(), scratch.data(), recv_counts.data(),
                recv_displs.data(), mpi_type<T>(), MPI_COMM_WORLD);
  T* out = data + displs[me];
  std::copy(scratch.begin(), scratch.begin() + mine, out);  // rank 0's copy, then + rank 1's, + rank 2's, ...
  for (std::size_t r = 1; r < N; ++r) {
    const T* part = scratch.data() + r * static_cast<std::size_t>(mine);
    for (int k = 0; k < mine; ++k) out[k] += part[k];
  }
  MPI_Allgatherv(MPI_IN_PLACE, 0, mpi_type<T>(), data, counts.data(), displs.data(), mpi_type<T>(), MPI_COMM_WORLD);
}

}  // namespace

void init(int* argc, char*** argv) {
  if (g_joined || launched_processes() == 0) return;
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  g_joined = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
}

void finalize() {
  if (!g_joined || g_finalized) return;
  g_finalized = true;
  MPI_Finalize();
}

bool built_with_mpi() { return true; }

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len));
  const std::size_t cut = s.find_first_of(",\n");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

int rank() { return g_rank; }
int size() { return g_size; }

void allreduce_sum(float* data, std::size_t n) { allreduce_in_rank_order(data, n); }
void allreduce_sum(double* data, std::size_t n) { allreduce_in_rank_order(data, n); }

void broadcast(float* data, std::size_t n, int root) {
  if (g_size == 1) return;
  MPI_Bcast(data, checked_count(n, "broadcast"), MPI_FLOAT, root, MPI_COMM_WORLD);
}

void broadcast(std::string& bytes, int root) {
  if (g_size == 1) return;
  unsigned long long n = bytes.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, root, MPI_COMM_WORLD);
  bytes.resize(static_cast<std::size_t>(n));
  MPI_Bcast(bytes.data(), checked_count(bytes.size(), "broadcast"), MPI_CHAR, root, MPI_COMM_WORLD);
}

std::vector<std::string> allgather(const std::string& mine) {
  if (g_size == 1) return {mine};
  const auto N = static_cast<std::size_t>(g_size);
  int len = checked_count(mine.size(), "allgather");
  std::vector<int> lens(N), displs(N);
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::size_t total = 0;
  for (std::size_t r = 0; r < N; ++r) {
    displs[r] = checked_count(total, "allgather");
    total += static_cast<std::size_t>(lens[r]);
  }
  std::string all(total, '\0');
  MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < N; ++r) out.push_back(all.substr(static_cast<std::size_t>(displs[r]), lens[r]));
  return out;
}

void barrier() {
  if (g_size > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (g_joined && !g_finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace tf::dist

#endif  // TINYFORMER_WITH_MPI
