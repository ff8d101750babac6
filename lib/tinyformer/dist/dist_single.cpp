// dist.hpp for one process: rank 0 of 1; every collective leaves its input as it is. Always in the library, its
// functions weak: a program that also links the MPI part (the target tinyformer::mpi, dist_mpi.cpp) gets that one's
// definitions instead, so the library itself never needs MPI to link.

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/dist/launcher.hpp"

namespace tf::dist {

#define TF_REPLACEABLE __attribute__((weak))

TF_REPLACEABLE void init(int*, char***) {
  const long launched = launched_processes();
  if (launched > 1 || launched < 0)
    throw std::runtime_error(fmt::format(
        "this tinyformer was built without MPI (a program of your own: not linked with tinyformer::mpi), but a "
        "launcher "
        "(mpirun, srun) started it as one of {} processes; install libopenmpi-dev and openmpi-bin, reconfigure and "
        "rebuild (cmake --preset release), or run one process",
        launched > 1 ? std::to_string(launched) : std::string("several")));
}

TF_REPLACEABLE void finalize() {}
TF_REPLACEABLE bool built_with_mpi() { return false; }
TF_REPLACEABLE std::string library_version() { return "none"; }
TF_REPLACEABLE int rank() { return 0; }
TF_REPLACEABLE int size() { return 1; }
TF_REPLACEABLE void allreduce_sum(float*, std::size_t) {}
TF_REPLACEABLE void allreduce_sum(double*, std::size_t) {}
TF_REPLACEABLE void broadcast(float*, std::size_t, int) {}
TF_REPLACEABLE void broadcast(std::string&, int) {}
TF_REPLACEABLE std::vector<std::string> allgather(const std::string& mine) { return {mine}; }
TF_REPLACEABLE void barrier() {}

TF_REPLACEABLE void abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

}  // namespace tf::dist
