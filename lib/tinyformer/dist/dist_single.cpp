// dist.hpp for a build without MPI: one process, rank 0 of 1; every collective leaves its input as it is.
#ifndef TINYFORMER_WITH_MPI

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/dist/launcher.hpp"

namespace tf::dist {

void init(int*, char***) {
  const long launched = launched_processes();
  if (launched > 1 || launched < 0)
    throw std::runtime_error(fmt::format(
        "this tinyformer was built without MPI, but a launcher (mpirun, srun) started it as one of {} processes; "
        "install libopenmpi-dev and openmpi-bin, reconfigure and rebuild (cmake --preset release), or run one process",
        launched > 1 ? std::to_string(launched) : std::string("several")));
}

void finalize() {}
bool built_with_mpi() { return false; }
std::string library_version() { return "none"; }
int rank() { return 0; }
int size() { return 1; }
void allreduce_sum(float*, std::size_t) {}
void allreduce_sum(double*, std::size_t) {}
void broadcast(float*, std::size_t, int) {}
void broadcast(std::string&, int) {}
std::vector<std::string> allgather(const std::string& mine) { return {mine}; }
void barrier() {}

void abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

}  // namespace tf::dist

#endif  // !TINYFORMER_WITH_MPI
