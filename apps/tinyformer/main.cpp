// tinyformer: one executable, subcommands train | sample | attention | gradcheck | bench | config | heads | compare.
// Every error reaches the user as one line on stderr and a non-zero exit.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "tinyformer/tensor/memory.hpp"

int main(int argc, char** argv) {
  tf::keep_freed_memory_in_process();
  CLI::App app{"tinyformer: train tiny transformers with reverse-mode autodiff, and look at their attention"};
  tf::app::add_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A usage mistake: one line that says what is wrong and where to look, exit code 2 (as getopt tools do).
    std::string command;
    for (const CLI::App* sub : app.get_subcommands()) command = " " + sub->get_name();
    fmt::print(stderr, "tinyformer: error: {} (see tinyformer{} --help)\n", e.what(), command);
    return 2;
  }
  try {
    return tf::app::run_selected(app);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "tinyformer: error: {}\n", e.what());
    return 1;
  }
}
