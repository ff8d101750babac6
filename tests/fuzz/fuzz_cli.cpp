// libFuzzer target: the command line. Input: arguments separated by NUL bytes (argv[1..]). Every input must parse or
// be refused with a CLI11 ParseError (the app prints it in one line and exits 2); the chosen command is not run, so
// only the parsing and the option checks (whole numbers, numbers >= 0, paths, readable files) are exercised, through
// tf::app::parses (apps/tinyformer/commands.hpp). Anything else (a crash, a sanitizer report, another exception) is a
// bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "commands.hpp"
#include "fuzz_target.hpp"

TINYFORMER_FUZZ_TARGET(cli) {
  std::vector<std::string> args{"tinyformer"};
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  if (!current.empty() || size == 0) args.push_back(current);
  if (args.size() > 64) return 0;
  tf::app::parses(args);
  return 0;
}
