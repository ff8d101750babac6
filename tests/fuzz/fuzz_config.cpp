// libFuzzer target: the YAML config loader. Input: YAML text, optionally followed by a NUL byte and
// `--set` overrides, one per line. Every input must either load or be refused with a ConfigError;
// anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_target.hpp"
#include "tinyformer/config/config.hpp"

TINYFORMER_FUZZ_TARGET(config) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string yaml = input.substr(0, nul);
  std::vector<std::string> overrides;
  if (nul != std::string::npos) {
    std::string rest = input.substr(nul + 1);
    for (std::size_t begin = 0; begin <= rest.size();) {
      const std::size_t end = std::min(rest.find('\n', begin), rest.size());
      overrides.push_back(rest.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  try {
    const tf::config::RunConfig cfg = tf::config::load_config_text(yaml, "fuzz.yaml", overrides);
    // What load_config accepts, to_yaml must write so that it reads back equal.
    const tf::config::RunConfig again = tf::config::load_config_text(tf::config::to_yaml(cfg), "fuzz.yaml");
    if (!(cfg == again)) __builtin_trap();
  } catch (const tf::config::ConfigError&) {
  }
  return 0;
}
