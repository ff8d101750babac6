// config/fields.hpp is the only source of key paths: the generated constants (config::keys, config::field) are
// the fields' paths, and no source of lib/ or apps/ writes a key path as a string literal.
//
// What tests/ keeps: the tests write key paths as text on purpose. YAML configs, --set arguments and the messages a
// user reads are checked against text written independently of the constants, so that renaming a key or changing a
// message is seen by a test instead of following the constant silently. The same holds for docs/ and the
// introduction of docs/config.md (config/config_intro.md), whose key paths are checked here to be real keys.
#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/sources.hpp"
#include "tinyformer/config/config.hpp"

using namespace tf::config;
using tf::test::contains_word;
using tf::test::string_literals;

namespace {

// Every key path, from the field list as the config code walks it.
std::vector<std::string> field_paths() {
  std::vector<std::string> paths;
  const RunConfig defaults;
  for_each_field_of(defaults, [&](const FieldInfo& f, const auto&) { paths.push_back(f.path()); });
  return paths;
}

// "file:line: "literal"" for each string literal of `src` that holds a key path.
std::vector<std::string> key_literals(const std::string& file, const std::string& src,
                                      const std::vector<std::string>& paths) {
  std::vector<std::string> found;
  for (const auto& literal : string_literals(src))
    for (const auto& path : paths)
      if (contains_word(literal.text, path))
        found.push_back(fmt::format("{}:{}: {} in \"{}\"", file, literal.line, path, literal.text.substr(0, 80)));
  return found;
}

}  // namespace

TEST_CASE("config: keys:: and field:: constants are the paths and members of the field list, in its order",
          "[config]") {
  std::vector<std::string> constants;
  RunConfig cfg;
  std::vector<const void*> members;
#define TF_TEST_KEY(key, ...)         \
  constants.push_back(k::key);        \
  members.push_back(&f::key.of(cfg)); \
  CHECK(f::key.path == k::key);
#define TF_TEST_SECTION(section, Struct, FIELDS) \
  {                                              \
    namespace k = keys::section;                 \
    namespace f = field::section;                \
    FIELDS(TF_TEST_KEY)                          \
  }
  TF_CONFIG_SECTIONS(TF_TEST_SECTION)
#undef TF_TEST_SECTION
#undef TF_TEST_KEY
  CHECK(constants == field_paths());
  std::vector<const void*> visited;
  for_each_field_of(cfg, [&](const FieldInfo&, const auto& value) { visited.push_back(&value); });
  CHECK(members == visited);
  CHECK(std::string(keys::model::n_head) == "model.n_head");
  CHECK(std::string(keys::training::grad_accum) == "training.grad_accum");
  CHECK(field::model::n_head.default_value() == ModelConfig{}.n_head);
}

TEST_CASE("config: a Derived default is the plain value in code, and a rule of other keys in a loaded config",
          "[config]") {
  const RunConfig in_code;
  CHECK(in_code.optimizer.weight_decay == 0.01);
  CHECK(in_code.logging.out_dir == "runs/default");
  const RunConfig adamw = load_config_text("", "configs/mine.yaml");
  CHECK(adamw.optimizer.weight_decay == 0.01);
  CHECK(adamw.logging.out_dir == "runs/mine");
  const RunConfig sgd = load_config_text("optimizer:\n  name: sgd\n", "x/other.yaml");
  CHECK(sgd.optimizer.weight_decay == 0.0);
  CHECK(sgd.logging.out_dir == "runs/other");
  const RunConfig given = load_config_text("optimizer:\n  name: adam\n  weight_decay: 0.5\n", "a.yaml",
                                           {"logging.out_dir=elsewhere", "optimizer.name=sgd"});
  CHECK(given.optimizer.weight_decay == 0.5);
  CHECK(given.logging.out_dir == "elsewhere");
  // docs/config.md's default column takes the rule's words, with the plain value in place of {}.
  CHECK_THAT(reference_markdown(),
             Catch::Contains("| `weight_decay` | real >= 0 | `0.01` for `adamw`, `0` for `sgd` and `adam` |") &&
                 Catch::Contains("| `out_dir` | string | `runs/<config file stem>` |"));
}

TEST_CASE("config: the literal scan finds key paths in plain, message and raw strings, not in comments or other names",
          "[config]") {
  const std::vector<std::string> paths = field_paths();
  const std::string src = R"src(// model.n_head in a comment
/* data.path in a
   block comment */
const char* a = "model.n_head";
auto b = fmt::format("set model.context to {} or auto", 3);
char q = '"'; const char* c = "not a key: model.n_heads, xmodel.d_model";
const char* d = R"x(a raw "string" naming
training.grad_accum)x";
const char* e = "escaped \"optimizer.lr\"";
)src";
  const std::vector<std::string> found = key_literals("f.cpp", src, paths);
  REQUIRE(found.size() == 4);
  CHECK_THAT(found[0], Catch::StartsWith("f.cpp:4: model.n_head in"));
  CHECK_THAT(found[1], Catch::StartsWith("f.cpp:5: model.context in"));
  CHECK_THAT(found[2], Catch::StartsWith("f.cpp:7: training.grad_accum in"));
  CHECK_THAT(found[3], Catch::StartsWith("f.cpp:9: optimizer.lr in"));
}

TEST_CASE("config: no source of lib/ or apps/ writes a key path as a string literal outside config/fields.hpp",
          "[config]") {
  const std::vector<std::string> paths = field_paths();
  std::vector<std::string> found;
  std::size_t scanned = 0;
  for (const std::string folder : {"lib", "apps"})
    for (const auto& file : tf::test::source_files(folder)) {
      if (file == "lib/tinyformer/config/fields.hpp") continue;
      ++scanned;
      for (auto& hit : key_literals(file, tf::test::read_source(file), paths)) found.push_back(std::move(hit));
    }
  INFO("write config::keys::<section>::<key> instead of the literal:\n" << fmt::format("{}", fmt::join(found, "\n")));
  CHECK(scanned > 100);
  CHECK(found.empty());
}

TEST_CASE("config: every key path in docs/config.md's introduction (config/config_intro.md) is a key", "[config]") {
  const std::vector<std::string> paths = field_paths();
  const std::set<std::string> keys(paths.begin(), paths.end());
  // The introduction's example of a refused --set names a key that does not exist, on purpose.
  const std::set<std::string> examples_of_unknown_keys{"model.n_heads"};
  const std::string intro = tf::test::read_source("lib/tinyformer/config/config_intro.md");
  std::vector<std::string> sections;
  const RunConfig defaults;
  for_each_section(defaults, [&](const char* name, const auto&) { sections.push_back(name); });
  const std::regex path_pattern(fmt::format(R"(\b({})\.[a-z_0-9]+\b)", fmt::join(sections, "|")));
  std::size_t named = 0;
  for (auto it = std::sregex_iterator(intro.begin(), intro.end(), path_pattern); it != std::sregex_iterator(); ++it) {
    const std::string path = it->str();
    if (examples_of_unknown_keys.count(path)) continue;
    INFO(path);
    CHECK(keys.count(path) == 1);
    ++named;
  }
  CHECK(named > 10);
}

TEST_CASE("config: docs/robustness.md holds docs/robustness_rules.md as scripts/error_table.sh last wrote it",
          "[config]") {
  // The rules are kept in robustness_rules.md and copied into robustness.md with the table of refusals: a rule
  // written into robustness.md alone is lost on the next run of the script (two were, 30 Nov), and one written into
  // the rules alone never reaches the page until the script runs again.
  const std::string rules = tf::test::read_source("docs/robustness_rules.md");
  const std::string page = tf::test::read_source("docs/robustness.md");
  REQUIRE(rules.size() > 1000);
  INFO("run bash scripts/error_table.sh after changing docs/robustness_rules.md");
  CHECK(page.find(rules) != std::string::npos);
}
