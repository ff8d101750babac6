#pragma once
// Subcommand registration: each add_*_command adds its options to the CLI and, when chosen, sets the
// action that run_selected() executes after parsing.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace tf::app {

// The tinyformer executable's program (program.cpp): parses the command line, runs the chosen subcommand and turns
// every error into one line on stderr; returns the exit code. main.cpp calls it.
int run_program(int argc, char** argv) noexcept;

// Every subcommand below, and the app's own options (--version, one subcommand required).
void add_commands(CLI::App& app);

// Parses the arguments (argv[0] is the program) as run_program does, every option check included, and runs nothing:
// false when the parser refuses them. Anything it throws is a bug. The command line's fuzz target calls it, so that
// it does not compile CLI11's headers a second time.
bool parses(const std::vector<std::string>& args);

void add_train_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_attention_command(CLI::App& app);
void add_gradcheck_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_config_command(CLI::App& app);
void add_heads_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_lens_command(CLI::App& app);

// Option checks with one-line messages: "--tokens: must be a whole number >= 0, got '-3'" (CLI11's own number
// validators would otherwise let "-3" wrap around in an unsigned option, or print the range's limits in full).
// --tokens of sample and --new-tokens of bench: a million tokens take minutes on a small model.
constexpr std::size_t kMaxSampledTokens = 1'000'000;
// At most `max` when the count drives time or memory; `bound` says why, in the message.
CLI::Validator whole_number(std::size_t min, std::size_t max = 9'999'999'999'999'999'999ULL, const char* bound = "");
// A path that is given must not be empty: "--out: must not be empty (give a path)".
CLI::Validator non_empty_path();
// A file to read: a regular file, else "<path>: no such file" / "is a directory" / "is a FIFO ..." / "a loop of
// symbolic links" (tensor/files.hpp).
CLI::Validator readable_file();
// A finite real number >= 0: "--temperature: must be a number >= 0, got '-1'".
CLI::Validator non_negative_number();

// "tinyformer: warning: <text>" and "tinyformer: note: <text>" on stderr, in one line (control bytes escaped).
void warn(const std::string& text);
void note(const std::string& text);

// Installs handler for signal without SA_RESTART (std::signal sets it): a write to stdout that blocks when the
// signal comes fails with EINTR, so that the command gets to its stop. Under mpirun, Ctrl-C stops mpirun reading the
// ranks' output, and train's rank 0, printing a progress line a few hundredths of a second apart at tiny shapes,
// blocked on the full pipe and never reached the step's end: no checkpoint (seen on an AMD Zen 5 host). sample, its
// stdout a pipe nobody read, went on waiting after Ctrl-C. Each command drops its output after a failed write.
void on_signal(int signal, void (*handler)(int));
// on_signal for SIGHUP, unless the process started with it ignored (nohup): then it stays ignored.
void on_hangup(void (*handler)(int));
// The handlers every command starts with (run_program; train and sample then install their own for the signals they
// finish work on): SIGINT, SIGTERM and SIGHUP remove the temporary files of the writes in progress (their targets keep
// what they held), say so in one line on stderr, and exit 130. Without them a Ctrl-C in the middle of `export` left
// its 100 MB "model.bin.tmp.<pid>" behind. SIGHUP through on_hangup.
void stop_on_interrupt();

// Called by a subcommand's callback with what it should do; run_selected() runs it and returns its exit code.
void select_action(std::function<int()> action);  // an empty function clears the choice
int run_selected(CLI::App& app);

}  // namespace tf::app
