// tinyformer: one executable, subcommands train | sample | attention | gradcheck | bench | config | heads | compare.
// Every error reaches the user as one line on stderr and a non-zero exit. Started by mpirun or srun, the process
// joins the MPI job first (dist::init); rank 0 alone prints what every rank would print.
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"
#include "tinyformer/tensor/memory.hpp"

namespace {

int finish(int code) {
  std::fflush(stdout);
  tf::dist::finalize();
  return code;
}

int run(int argc, char** argv) {
  CLI::App app{"tinyformer: train tiny transformers with reverse-mode autodiff, and look at their attention"};
  tf::app::add_commands(app);
  std::string usage_error;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return tf::dist::is_root() ? app.exit(e) : 0;  // --help, --version
    // A usage mistake: one line that says what is wrong and where to look, exit code 2 (as getopt tools do).
    std::string command;
    for (const CLI::App* sub : app.get_subcommands()) command = " " + sub->get_name();
    usage_error = fmt::format("{} (see tinyformer{} --help)", e.what(), command);
  }
  // Under a launcher the ranks may have different command lines (MPMD): all learn of any rank's mistake together.
  try {
    tf::dist::check_no_errors(usage_error);
  } catch (const tf::dist::CollectiveError& e) {
    if (tf::dist::is_root()) fmt::print(stderr, "tinyformer: error: {}\n", e.what());
    return 2;
  }
  try {
    tf::gemm_plan::policy();  // TINYFORMER_GEMM and TINYFORMER_GEMM_PLAN checked before any work
    return tf::app::run_selected(app);
  } catch (const tf::dist::CollectiveError& e) {  // every rank has it: rank 0 tells, all finish MPI normally
    std::fflush(stdout);
    if (tf::dist::is_root()) fmt::print(stderr, "tinyformer: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    if (tf::dist::size() == 1) {
      fmt::print(stderr, "tinyformer: error: {}\n", e.what());
      return 1;
    }
    // One rank failed while the others wait in a collective: this rank tells, and the job ends.
    fmt::print(stderr, "tinyformer: error: rank {}: {}; ending all {} processes\n", tf::dist::rank(), e.what(),
               tf::dist::size());
    tf::dist::abort(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  tf::keep_freed_memory_in_process();
  try {
    tf::dist::init(&argc, &argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tinyformer: error: {}\n", e.what());
    return 1;
  }
  return finish(run(argc, argv));
}
