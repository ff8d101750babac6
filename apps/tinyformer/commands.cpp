#include "commands.hpp"

#include <CLI/CLI.hpp>

namespace tf::app {

namespace {
std::function<int()>& selected() {
  static std::function<int()> action;
  return action;
}
}  // namespace

void select_action(std::function<int()> action) { selected() = std::move(action); }

int run_selected(CLI::App& app) {
  if (!selected()) {
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  return selected()();
}

}  // namespace tf::app
