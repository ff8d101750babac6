#include "commands.hpp"

#include <cmath>
#include <csignal>
#include <cstdlib>

#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/tensor/files.hpp"

namespace tf::app {

namespace {
std::function<int()>& selected() {
  static std::function<int()> action;
  return action;
}
}  // namespace

void add_commands(CLI::App& app) {
  app.require_subcommand(1);
  app.set_version_flag("--version", "tinyformer 0.1.0");
  add_train_command(app);
  add_sample_command(app);
  add_attention_command(app);
  add_gradcheck_command(app);
  add_bench_command(app);
  add_config_command(app);
  add_heads_command(app);
  add_compare_command(app);
  add_export_command(app);
  add_lens_command(app);
}

CLI::Validator whole_number(std::size_t min, std::size_t max, const char* bound) {
  return CLI::Validator(
      [min, max, bound](std::string& text) -> std::string {
        const bool digits =
            !text.empty() && text.size() <= 19 && text.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || std::stoull(text) < min)
          return "must be a whole number >= " + std::to_string(min) + ", got '" + text + "'";
        if (std::stoull(text) > max)
          return "must be at most " + std::to_string(max) + " (" + bound + "), got '" + text + "'";
        return {};
      },
      "INT>=" + std::to_string(min));
}

CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& text) -> std::string { return text.empty() ? "must not be empty (give a path)" : ""; }, "PATH");
}

CLI::Validator readable_file() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          ::close(open_regular_file(text));
        } catch (const std::runtime_error& e) {
          return e.what();
        }
        return {};
      },
      "FILE");
}

CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0)
          return "must be a number >= 0, got '" + text + "'";
        return {};
      },
      "REAL>=0");
}

void warn(const std::string& text) { fmt::print(stderr, "tinyformer: warning: {}\n", printable_message(text, 990)); }
void note(const std::string& text) { fmt::print(stderr, "tinyformer: note: {}\n", printable_message(text, 990)); }

void on_signal(int signal, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(signal, &action, nullptr);
}

void on_hangup(void (*handler)(int)) {
  static const bool ignored_at_start = [] {
    struct sigaction at_start {};
    sigaction(SIGHUP, nullptr, &at_start);
    return at_start.sa_handler == SIG_IGN;
  }();
  if (!ignored_at_start) on_signal(SIGHUP, handler);
}

namespace {
extern "C" void stop_now(int) {  // async-signal-safe calls only
  io::remove_temporaries_in_progress();
  static const char msg[] = "\ntinyformer: interrupted: stopped now (no file is left half-written)\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  ::_exit(130);
}
}  // namespace

void stop_on_interrupt() {
  on_signal(SIGINT, stop_now);
  on_signal(SIGTERM, stop_now);
  on_hangup(stop_now);
}

void select_action(std::function<int()> action) { selected() = std::move(action); }

bool parses(const std::vector<std::string>& args) {
  std::vector<std::string> copies = args;
  std::vector<char*> argv;
  argv.reserve(copies.size());
  for (auto& a : copies) argv.push_back(a.data());
  CLI::App app{"tinyformer"};
  add_commands(app);
  bool parsed = true;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    parsed = false;
  }
  select_action({});
  return parsed;
}

int run_selected(CLI::App& app) {
  if (!selected()) {
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  return selected()();
}

}  // namespace tf::app
