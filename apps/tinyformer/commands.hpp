#pragma once
// Subcommand registration: each add_*_command adds its options to the CLI and, when chosen, sets the
// action that run_selected() executes after parsing.
#include <functional>

namespace CLI {
class App;
}

namespace tf::app {

void add_train_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_attention_command(CLI::App& app);
void add_gradcheck_command(CLI::App& app);
void add_bench_command(CLI::App& app);

// Called by a subcommand's callback with what it should do; run_selected() runs it and returns its exit code.
void select_action(std::function<int()> action);
int run_selected(CLI::App& app);

}  // namespace tf::app
