#pragma once
// Internal to dist/: what the environment says about the launcher that started this process.
#include <cstdlib>
#include <string>

namespace tf::dist {

// The number of processes a launcher says it started: OMPI_COMM_WORLD_SIZE (OpenMPI's mpirun), PMI_SIZE (MPICH's
// mpiexec, srun --mpi=pmi2), SLURM_STEP_NUM_TASKS next to PMIX_RANK (srun --mpi=pmix); -1 when PMIX_RANK alone says
// there is a job of unknown size; 0 when no launcher started this process.
inline long launched_processes() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name)) return std::strtol(v, nullptr, 10);
  if (std::getenv("PMIX_RANK")) {
    const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
    return tasks ? std::strtol(tasks, nullptr, 10) : -1;
  }
  return 0;
}

}  // namespace tf::dist
