// The whole program of the tinyformer executable, subcommands train | sample | attention | gradcheck | bench | config |
// heads | compare | export: main.cpp calls run_program. Every error reaches the user as one line on stderr and a
// non-zero exit. Started by mpirun or srun, the process joins the MPI job first (dist::init); rank 0 alone prints what
// every rank would print. It sits in the subcommands' unity batch, which parses CLI11's header anyway (as a source of
// its own it took 14 CPU s to compile, 15 under the sanitizers, 26 in clang-tidy); it is noexcept, so
// bugprone-exception-escape checks it as it checks main.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinyformer/config/config.hpp"
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/runs/environment.hpp"
#include "tinyformer/runs/errors.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/memory.hpp"

namespace {

// The error boundary is the library's (runs/errors.hpp): the same message Python and the C++ runs API give.
std::string user_message(const std::exception& e) { return tf::runs::user_message(e); }

void print_error(const std::string& message) { fmt::print(stderr, "tinyformer: error: {}\n", message); }

// As coreutils' close_stdout: output that could not be written (`> /dev/full`, a closed pipe) is an error.
int finish(int code) {
  const bool flushed = std::fflush(stdout) == 0 && !std::ferror(stdout);
  const int err = errno;
  tf::dist::finalize();
  if (!flushed && code == 0) {  // a command that failed has said so already, in one line
    print_error(fmt::format("cannot write to stdout: {}", std::strerror(err)));
    return 1;
  }
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
    if (command.empty() && argc > 1 && argv[1][0] != '-' && argv[1][0] != '\0') {  // `tinyformer trian cfg.yaml`
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
      const std::string guess = tf::config::closest_name(argv[1], names);
      usage_error = fmt::format("unknown command '{}'; valid: {}{}", argv[1], fmt::join(names, ", "),
                                guess.empty() ? "" : fmt::format(" (did you mean {}?)", guess));
    }
  }
  // Under a launcher the ranks may have different command lines (MPMD): all learn of any rank's mistake together.
  try {
    tf::dist::check_no_errors(usage_error);
  } catch (const tf::dist::CollectiveError& e) {
    if (tf::dist::is_root()) print_error(user_message(e));
    return 2;
  }
  try {
    // TINYFORMER_GEMM, TINYFORMER_GEMM_PLAN and TINYFORMER_KERNEL_ISA, before any work; under a launcher every rank
    // learns of any rank's bad value together, and rank 0 tells (each rank told it, as "rank N: ...", before)
    std::string environment_error;
    try {
      tf::runs::check_environment();
    } catch (const std::exception& e) {
      environment_error = user_message(e);
    }
    tf::dist::check_no_errors(environment_error);
    return tf::app::run_selected(app);
  } catch (const tf::dist::CollectiveError& e) {  // every rank has it: rank 0 tells, all finish MPI normally
    std::fflush(stdout);
    if (tf::dist::is_root()) print_error(user_message(e));
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    if (tf::dist::size() == 1) {
      print_error(user_message(e));
      return 1;
    }
    // One rank failed while the others wait in a collective: this rank tells, and the job ends.
    print_error(
        fmt::format("rank {}: {}; ending all {} processes", tf::dist::rank(), user_message(e), tf::dist::size()));
    tf::dist::abort(1);
  }
}

}  // namespace

int tf::app::run_program(int argc, char** argv) noexcept {
  tf::reopen_closed_standard_streams();
  tf::keep_freed_memory_in_process();
  tf::app::stop_on_interrupt();
  try {
    tf::dist::init(&argc, &argv);
  } catch (const std::exception& e) {
    print_error(user_message(e));
    return 1;
  }
  return finish(run(argc, argv));
}
