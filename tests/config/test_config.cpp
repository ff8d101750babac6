// The YAML config: defaults, a full file, --set overrides, the to_yaml round trip, and one test per kind of
// bad input, each checking that the message names the key path, the YAML line and what would be valid.
#include <catch2/catch.hpp>

#include <clocale>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "tinyformer/config/config.hpp"
#include "tinyformer/tensor/files.hpp"

namespace fs = std::filesystem;
using namespace tf::config;
using Catch::Contains;
using tf::test::TempDir;

namespace {

// Loads `text` written as <tmp>/<name>.
RunConfig load_text(const TempDir& dir, const std::string& text, const std::vector<std::string>& overrides = {},
                    const std::string& name = "run.yaml") {
  return load_config(dir.write(name, text), overrides);
}

}  // namespace

TEST_CASE("config: an empty file gives every documented default", "[config]") {
  TempDir dir;
  const RunConfig c = load_text(dir, "{}", {}, "tiny_reverse.yaml");

  CHECK_FALSE(c.model.vocab_size.has_value());  // auto
  CHECK_FALSE(c.model.context.has_value());     // auto
  CHECK(c.model.d_model == 64);
  CHECK(c.model.n_head == 4);
  CHECK(c.model.n_layer == 2);
  CHECK(c.model.mlp_ratio == 4);
  CHECK(c.model.dropout == 0.0);
  CHECK(c.model.bias);
  CHECK_FALSE(c.model.tie_weights);
  CHECK(c.model.init == InitScheme::xavier_uniform);
  CHECK(c.model.attention == AttentionImpl::fused);

  CHECK(c.data.task == Task::reverse);
  CHECK(c.data.path.empty());
  CHECK(c.data.length == 8);
  CHECK(c.data.digits == 3);
  CHECK(c.data.alphabet == 10);
  CHECK(c.data.eval_size == 512);
  CHECK(c.data.val_fraction == 0.1);
  CHECK(c.data.shuffle);

  CHECK(c.optimizer.name == OptimizerName::adamw);
  CHECK(c.optimizer.lr == 1e-3);
  CHECK(c.optimizer.weight_decay == 0.01);
  CHECK(c.optimizer.betas[0] == 0.9);
  CHECK(c.optimizer.betas[1] == 0.999);
  CHECK(c.optimizer.eps == 1e-8);
  CHECK(c.optimizer.momentum == 0.9);
  CHECK_FALSE(c.optimizer.nesterov);
  CHECK(c.optimizer.decay_rule == DecayRule::matrices_no_embeddings);

  CHECK(c.schedule.name == ScheduleName::cosine);
  CHECK(c.schedule.warmup_steps == 100);
  CHECK(c.schedule.min_lr == 1e-4);
  CHECK_FALSE(c.schedule.decay_steps.has_value());
  CHECK(effective_decay_steps(c) == 2000);

  CHECK(c.training.batch_size == 32);
  CHECK(c.training.steps == 2000);
  CHECK(c.training.grad_clip == 1.0);
  CHECK(c.training.eval_interval == 100);
  CHECK(c.training.eval_batches == 8);
  CHECK_FALSE(c.training.threads.has_value());  // auto: the physical cores
  CHECK(c.training.seed == 1337);
  CHECK(c.training.nonfinite == NonFinitePolicy::stop);

  CHECK(c.logging.out_dir == "runs/tiny_reverse");
  CHECK(c.logging.log_interval == 10);
  CHECK(c.logging.attention_interval == 100);
  CHECK(c.logging.checkpoint_interval == 500);
  CHECK(c.logging.probe.empty());

  // Sections present but empty are all defaults too; the defaults pass validate().
  RunConfig same = load_text(dir, "model:\ndata:\n", {}, "tiny_reverse.yaml");
  CHECK(same == c);
  CHECK_NOTHROW(validate(RunConfig{}));
}

// A config that sets every key (checked one by one below).
constexpr const char* kFullConfig = R"(model:
  vocab_size: 96
  context: 64
  d_model: 48
  n_head: 6
  n_layer: 3
  mlp_ratio: 2
  dropout: 0.1
  bias: false
  tie_weights: true
  init: normal
  attention: composed
data:
  task: text
  path: ../data/shakespeare.txt
  length: 12
  digits: 4
  alphabet: 16
  eval_size: 100
  val_fraction: 0.2
  shuffle: false
optimizer:
  name: sgd
  lr: 0.05
  weight_decay: 0.001
  betas: [0.8, 0.95]
  eps: 1e-6
  momentum: 0.5
  nesterov: true
  decay_rule: all
schedule:
  name: warmup
  warmup_steps: 10
  min_lr: 0.0
  decay_steps: 300
training:
  batch_size: 16
  steps: 400
  grad_clip: 0
  eval_interval: 50
  eval_batches: 2
  threads: 2
  seed: 18446744073709551615
  nonfinite: skip
logging:
  out_dir: /tmp/somewhere/run1
  log_interval: 5
  attention_interval: 0
  checkpoint_interval: 0
  probe: "To be, or not"
)";

TEST_CASE("config: a full file sets every key, data.path resolved against the file's directory", "[config]") {
  TempDir dir;
  const std::string path = dir.write("configs/full.yaml", kFullConfig);
  const RunConfig c = load_config(path, {});
  CHECK(c.model.vocab_size == std::optional<std::size_t>(96));
  CHECK(c.model.context == 64);
  CHECK(c.model.d_model == 48);
  CHECK(c.model.n_head == 6);
  CHECK(c.model.n_layer == 3);
  CHECK(c.model.mlp_ratio == 2);
  CHECK(c.model.dropout == 0.1);
  CHECK_FALSE(c.model.bias);
  CHECK(c.model.tie_weights);
  CHECK(c.model.init == InitScheme::normal);
  CHECK(c.model.attention == AttentionImpl::composed);

  CHECK(c.data.task == Task::text);
  CHECK(fs::path(c.data.path) == (fs::absolute(dir.path()) / "data" / "shakespeare.txt").lexically_normal());
  CHECK(c.data.length == 12);
  CHECK(c.data.digits == 4);
  CHECK(c.data.alphabet == 16);
  CHECK(c.data.eval_size == 100);
  CHECK(c.data.val_fraction == 0.2);
  CHECK_FALSE(c.data.shuffle);

  CHECK(c.optimizer.name == OptimizerName::sgd);
  CHECK(c.optimizer.lr == 0.05);
  CHECK(c.optimizer.weight_decay == 0.001);
  CHECK(c.optimizer.betas[0] == 0.8);
  CHECK(c.optimizer.betas[1] == 0.95);
  CHECK(c.optimizer.eps == 1e-6);
  CHECK(c.optimizer.momentum == 0.5);
  CHECK(c.optimizer.nesterov);
  CHECK(c.optimizer.decay_rule == DecayRule::all);

  CHECK(c.schedule.name == ScheduleName::warmup);
  CHECK(c.schedule.warmup_steps == 10);
  CHECK(c.schedule.min_lr == 0.0);
  CHECK(c.schedule.decay_steps == std::optional<std::size_t>(300));
  CHECK(effective_decay_steps(c) == 300);

  CHECK(c.training.batch_size == 16);
  CHECK(c.training.steps == 400);
  CHECK(c.training.grad_clip == 0.0);
  CHECK(c.training.eval_interval == 50);
  CHECK(c.training.eval_batches == 2);
  CHECK(c.training.threads == 2);
  CHECK(c.training.seed == 18446744073709551615ull);
  CHECK(c.training.nonfinite == NonFinitePolicy::skip);

  CHECK(c.logging.out_dir == "/tmp/somewhere/run1");
  CHECK(c.logging.log_interval == 5);
  CHECK(c.logging.attention_interval == 0);
  CHECK(c.logging.checkpoint_interval == 0);
  CHECK(c.logging.probe == "To be, or not");
}

TEST_CASE("config: weight_decay defaults to 0.01 for adamw and 0 for sgd and adam unless set", "[config]") {
  TempDir dir;
  CHECK(load_text(dir, "optimizer:\n  name: adamw\n").optimizer.weight_decay == 0.01);
  CHECK(load_text(dir, "optimizer:\n  name: adam\n").optimizer.weight_decay == 0.0);
  CHECK(load_text(dir, "optimizer:\n  name: sgd\n").optimizer.weight_decay == 0.0);
  CHECK(load_text(dir, "optimizer:\n  name: adam\n  weight_decay: 0.1\n").optimizer.weight_decay == 0.1);
  CHECK(load_text(dir, "{}", {"optimizer.name=sgd"}).optimizer.weight_decay == 0.0);
}

TEST_CASE("config: --set overrides apply on top of the file, with sequences, whole sections and strings", "[config]") {
  TempDir dir;
  const std::string text = R"(model:
  d_model: 64
  n_head: 4
  vocab_size: 20
optimizer:
  lr: 0.01
)";
  const RunConfig c = load_text(dir, text,
                                {"model.d_model=32", "optimizer.betas=[0.8, 0.95]", "model={n_head: 2, n_layer: 3}",
                                 "optimizer.lr = 3e-4", "model.vocab_size=auto", "logging.probe=", "training.steps=500",
                                 "schedule.decay_steps=400", "data.task=tokens", "data.path=data/tokens.npy"});
  CHECK(c.model.d_model == 32);
  CHECK(c.model.n_head == 2);
  CHECK(c.model.n_layer == 3);
  CHECK_FALSE(c.model.vocab_size.has_value());
  CHECK(c.optimizer.lr == 3e-4);
  CHECK(c.optimizer.betas[0] == 0.8);
  CHECK(c.optimizer.betas[1] == 0.95);
  CHECK(c.logging.probe.empty());
  CHECK(c.training.steps == 500);
  CHECK(c.schedule.decay_steps == std::optional<std::size_t>(400));
  CHECK(c.data.task == Task::tokens);
  // a --set path is relative to the working directory, not to the config file
  CHECK(fs::path(c.data.path) == (fs::current_path() / "data" / "tokens.npy").lexically_normal());

  // The last override of a key wins; a later one can reset decay_steps to null.
  const RunConfig d = load_text(dir, text, {"model.d_model=32", "model.d_model=128", "schedule.decay_steps=null"});
  CHECK(d.model.d_model == 128);
  CHECK_FALSE(d.schedule.decay_steps.has_value());
}

TEST_CASE("config: to_yaml writes a config that load_config reads back equal", "[config]") {
  TempDir dir;
  SECTION("defaults") {
    const RunConfig a = load_text(dir, "{}", {}, "defaults.yaml");
    const RunConfig b = load_text(dir, to_yaml(a), {}, "written/config.yaml");
    CHECK(a == b);
    CHECK(b.logging.out_dir == "runs/defaults");  // written explicitly, so the new file name does not matter
  }
  SECTION("a loaded file with overrides, a relative data path and a quoted probe") {
    dir.write("configs/data/input.txt", "hello");
    const RunConfig a =
        load_text(dir, "data:\n  task: text\n  path: data/input.txt\nmodel:\n  vocab_size: 7\n  context: 4\n",
                  {"optimizer.lr=0.0007", "optimizer.betas=[0, 0.123456789012345]", "schedule.decay_steps=1500",
                   "logging.probe='say \"hi\": #1'"},
                  "configs/text.yaml");
    CHECK(a.logging.probe == "say \"hi\": #1");
    const RunConfig b = load_text(dir, to_yaml(a), {}, "runs/text/config.yaml");
    CHECK(a == b);
    CHECK(fs::exists(b.data.path));  // still the file next to the original config
  }
  SECTION("every key changed") {
    RunConfig a;
    a.model.vocab_size = 7;
    a.model.context = 5;
    a.model.d_model = 30;
    a.model.n_head = 3;
    a.model.n_layer = 1;
    a.model.mlp_ratio = 3;
    a.model.dropout = 0.30000000000000004;
    a.model.bias = false;
    a.model.tie_weights = true;
    a.model.init = InitScheme::xavier_normal;
    a.model.attention = AttentionImpl::composed;
    a.data.task = Task::text;
    a.data.path = "/data/dir with space/in:put #1 \"quoted\".txt";
    a.data.length = 3;
    a.data.digits = 9;
    a.data.alphabet = 2;
    a.data.eval_size = 1;
    a.data.val_fraction = 1.0 / 3.0;
    a.data.shuffle = false;
    a.optimizer.name = OptimizerName::adam;
    a.optimizer.lr = 7e-4;
    a.optimizer.weight_decay = 0.0;
    a.optimizer.betas = {0.0, 0.123456789012345};
    a.optimizer.eps = 1.5e-10;
    a.optimizer.momentum = 0.0;
    a.optimizer.decay_rule = DecayRule::none;
    a.schedule.name = ScheduleName::constant;
    a.schedule.warmup_steps = 3000;  // allowed: constant has no warmup
    a.schedule.min_lr = 1e-5;
    a.schedule.decay_steps = 12;
    a.training.batch_size = 1;
    a.training.steps = 0;
    a.training.grad_clip = 0.25;
    a.training.eval_interval = 1;
    a.training.eval_batches = 1;
    a.training.threads = 2;
    a.training.seed = 42;
    a.training.nonfinite = NonFinitePolicy::skip;
    a.logging.out_dir = "runs/x: y";
    a.logging.log_interval = 1;
    a.logging.attention_interval = 0;
    a.logging.checkpoint_interval = 7;
    a.logging.probe = "say \"hi\": #not a comment\ttrue\nline two \\ end";
    REQUIRE_NOTHROW(validate(a));
    const std::string yaml = to_yaml(a);
    INFO(yaml);
    const RunConfig b = load_text(dir, yaml, {}, "elsewhere/config.yaml");
    CHECK(a == b);
    CHECK(b.logging.probe == a.logging.probe);
    CHECK(b.data.path == a.data.path);
    // and a second trip gives the same text
    CHECK(to_yaml(b) == yaml);
  }
}

TEST_CASE("config: did-you-mean finds names within edit distance 2 and by prefix", "[config]") {
  const std::vector<std::string> sections{"model", "data", "optimizer", "schedule", "training", "logging"};
  CHECK(closest_name("trainig", sections) == "training");
  CHECK(closest_name("optimiser", sections) == "optimizer");
  CHECK(closest_name("sched", sections) == "schedule");
  CHECK(closest_name("Model", sections) == "model");
  CHECK(closest_name("banana", sections).empty());
  CHECK(closest_name("d_modle", {"context", "d_model", "n_head"}) == "d_model");
}

// ---- bad input: every message names the file, the key path, the line and what would be valid ----

TEST_CASE("config: a missing or unreadable file names the path, as a file error; one too large is not read",
          "[config]") {
  TempDir dir;
  const std::string missing = (dir.path() / "nope.yaml").string();
  CHECK_THROWS_AS(load_config(missing, {}), tf::FileError);  // Python: FileNotFoundError
  CHECK_THROWS_WITH(load_config(missing, {}), Contains(missing) && Contains("no such file"));
  CHECK_THROWS_WITH(load_config(dir.path().string(), {}), Contains("is a directory"));
  const std::string huge = dir.write("huge.yaml", "");
  std::filesystem::resize_file(huge, std::uintmax_t{16} << 30);  // sparse: refused by its size before it is read
  CHECK_THROWS_WITH(load_config(huge, {}), Contains("is 17179869184 bytes; a config is at most 1048576 bytes (1 MiB)"));
}

TEST_CASE("config: text that is not YAML reports line and column", "[config]") {
  TempDir dir;
  const std::string path = dir.write("broken.yaml", "model:\n  d_model: 64\n  betas: [0.9, 0.99\n");
  CHECK_THROWS_WITH(load_config(path, {}),
                    Contains(path) && Contains("not valid YAML at line") && Contains(", column"));
  const std::string tabs = dir.write("tabs.yaml", "model:\n  d_model: 64\n n_head: 4\n");
  CHECK_THROWS_WITH(load_config(tabs, {}), Contains("not valid YAML at line 3"));
  // a second document, after --- or after the end marker ..., would be ignored: refused; a leading --- is one document
  for (const char* end : {"---", "..."})
    CHECK_THROWS_WITH(load_text(dir, fmt::format("model:\n  d_model: 64\n{}\ntraining:\n  steps: 5\n", end)),
                      Contains("run.yaml: holds more than one YAML document (a line --- or ... ended the first"));
  CHECK(load_text(dir, "---\nmodel:\n  d_model: 64\n...\n").model.d_model == 64);
}

TEST_CASE("config: a quote that never closes, or closes lines later over keys, is refused at its key", "[config]") {
  // yaml-cpp reads such a value to the end of the text: every key written after it would be lost without a word
  // (`probe: '12|` took `training: steps: 5` as the probe's text). Every key, both quotes, the value first or last.
  const RunConfig defaults;
  std::size_t cases = 0;
  for_each_field_of(defaults, [&](const FieldInfo& f, const auto&) {
    for (const char* quote : {"'", "\""}) {
      for (const std::string& value : {std::string(quote) + "12|", std::string(quote) + "it" + quote + quote + "s"}) {
        if (quote[0] == '"' && value.find("\"\"") != std::string::npos) continue;  // "it""s" closes at the second "
        const std::string text = fmt::format("{}:\n  {}: {}\n{}:\n  steps: 5\n", f.section, f.key, value,
                                             f.section == std::string("training") ? "logging" : "training");
        INFO(text);
        CHECK_THROWS_WITH(load_config_text(text, "q.yaml"),
                          Contains(fmt::format("q.yaml: {} at line 2: a quote ({}) at column {} opens a value that "
                                               "never closes (YAML reads all that follows into it)",
                                               f.path(), quote, std::strlen(f.key) + 5)));
        CHECK_THROWS_WITH(load_config_text("{}", "q.yaml", {fmt::format("{}={}\nx\n", f.path(), value)}),
                          Contains(fmt::format("a quote ({}) at column 1 opens a value that never closes", quote)));
        ++cases;
      }
    }
  });
  CHECK(cases > 100);
  // Quotes that close, with a quote inside them, are read as YAML reads them.
  const RunConfig closed = load_config_text(
      "logging:\n  probe: 'it''s 12|'\noptimizer:\n  name: \"adamw\"\n  betas: ['0.9', \"0.95\"]\n", "q.yaml");
  CHECK(closed.logging.probe == "it's 12|");
  CHECK(closed.optimizer.betas[1] == 0.95);
  CHECK(load_config_text("{}", "q.yaml", {"logging.probe=\"a\\\"b\""}).logging.probe == "a\"b");
  // A quote closed only lines later, over lines that look like keys: the same key opened twice (`name: '` in two
  // sections) made optimizer.name of everything between, and the error then named a key of the next section.
  CHECK_THROWS_WITH(
      load_config_text("optimizer:\n  name: '\n  lr: 0.01\nschedule:\n  name: '\n  warmup_steps: 5\n", "q.yaml"),
      Contains("q.yaml: optimizer.name at line 2: a quote (') at column 9 is closed only on line 5, and "
               "YAML reads the lines between into the value, line 3 ('lr: 0.01') too"));
  // A list that holds itself through an alias, and aliases of aliases (10^8 scalars in 600 bytes), are looked at
  // once a node: the check ended in a stack overflow on the first before it kept the nodes it had seen.
  CHECK_THROWS_WITH(load_config_text("optimizer:\n  betas: &a [*a]\n", "q.yaml"), Contains("got a list of 1 values"));
  std::string laughs = "optimizer:\n  betas: [&l0 ['x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x']";
  for (int level = 1; level < 9; ++level)
    laughs += fmt::format(", &l{} [{}]", level,
                          fmt::join(std::vector<std::string>(10, fmt::format("*l{}", level - 1)), ", "));
  CHECK_THROWS_WITH(load_config_text(laughs + "]\n", "q.yaml"), Contains("got a list of 9 values"));
  // A value folded over lines that are not keys is YAML's, and kept.
  CHECK(load_config_text("logging:\n  probe: \"12|\n    34|\"\n", "q.yaml").logging.probe == "12| 34|");
}

TEST_CASE("config: real values read the same in a process whose locale writes a decimal comma", "[config]") {
  // A Python user's locale.setlocale(locale.LC_ALL, "de_DE.UTF-8") (or a C++ program's setlocale) made strtod stop
  // at the "." of 0.003: every real value was refused, and a checkpoint's own config did not load. The locale is
  // made here with localedef (Debian's locales package) into a directory of the test's.
  TempDir dir;
  const std::string made = (dir.path() / "de_DE.UTF-8").string();
  REQUIRE(std::system(fmt::format("localedef -i de_DE -f UTF-8 '{}' > /dev/null 2>&1", made).c_str()) == 0);
  REQUIRE(setenv("LOCPATH", dir.path().c_str(), 1) == 0);
  REQUIRE(std::setlocale(LC_ALL, "de_DE.UTF-8") != nullptr);
  const double plain = std::strtod("0.5", nullptr);  // the locale is in effect: 0.5 reads as 0
  RunConfig cfg;
  std::string error;
  try {
    cfg = load_config_text("optimizer:\n  lr: 0.003\n  betas: [0.8, 0.95]\ndata:\n  train_fraction: 0.3\n", "de.yaml");
  } catch (const ConfigError& e) {
    error = e.what();
  }
  std::setlocale(LC_ALL, "C");
  unsetenv("LOCPATH");
  CHECK(plain == 0.0);
  CHECK(error.empty());
  CHECK(cfg.optimizer.lr == 0.003);
  CHECK(cfg.optimizer.betas[0] == 0.8);
  CHECK(cfg.data.train_fraction == 0.3);
}

TEST_CASE("config: a top level that is not a mapping lists the sections", "[config]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_text(dir, "- model\n- data\n"), Contains("top level must be a mapping of sections") &&
                                                             Contains("model, data, optimizer") &&
                                                             Contains("got a list"));
  CHECK_THROWS_WITH(load_text(dir, "just words\n"), Contains("got 'just words'"));
  CHECK_THROWS_WITH(load_text(dir, "model: 5\n"),
                    Contains("model at line 1: expected a mapping of model's keys, got '5'"));
}

TEST_CASE("config: an unknown section suggests the closest one", "[config]") {
  TempDir dir;
  const std::string path = dir.write("run.yaml", "model:\n  d_model: 32\ntrainig:\n  steps: 10\n");
  CHECK_THROWS_WITH(load_config(path, {}), Contains(path) && Contains("trainig at line 3") &&
                                               Contains("did you mean training?") &&
                                               Contains("valid sections: model, data, optimizer, schedule"));
  // a key written at the top level points to its section
  CHECK_THROWS_WITH(load_text(dir, "model:\n  d_model: 32\nlr: 0.1\n"),
                    Contains("lr at line 3") && Contains("did you mean optimizer.lr"));
}

TEST_CASE("config: an unknown key suggests the closest key or the section it belongs to", "[config]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_text(dir, "model:\n  context: 16\n  d_modle: 32\n"),
                    Contains("model.d_modle at line 3") && Contains("did you mean model.d_model?") &&
                        Contains("valid keys of model: vocab_size, context, d_model"));
  CHECK_THROWS_WITH(load_text(dir, "data:\n  task: copy\nmodel:\n  lr: 0.1\n"),
                    Contains("model.lr at line 4") && Contains("did you mean optimizer.lr?"));
  CHECK_THROWS_WITH(load_text(dir, "model:\n  context: 16\n  context: 8\n"),
                    Contains("model.context at line 3") && Contains("appears twice (first at line 2)"));
}

TEST_CASE("config: bad --set overrides name the override and suggest the key", "[config]") {
  TempDir dir;
  const std::string path = dir.write("run.yaml", "model:\n  d_model: 32\n");
  CHECK_THROWS_WITH(load_config(path, {"model.n_heads=4"}),
                    Contains(path) && Contains("--set model.n_heads=4: unknown key 'n_heads' in section model") &&
                        Contains("did you mean model.n_head?"));
  CHECK_THROWS_WITH(load_config(path, {"trainng.steps=4"}),
                    Contains("--set trainng.steps=4: unknown section 'trainng'") && Contains("did you mean training?"));
  CHECK_THROWS_WITH(load_config(path, {"model.d_model"}), Contains("--set model.d_model: expected key.path=value"));
  CHECK_THROWS_WITH(load_config(path, {"model.attn.heads=2"}),
                    Contains("--set model.attn.heads=2: a key path has two parts, section.key"));
  CHECK_THROWS_WITH(load_config(path, {"model=4"}), Contains("--set model=4: a whole section needs a mapping"));
  CHECK_THROWS_WITH(load_config(path, {"model={n_heads: 2}"}), Contains("did you mean model.n_head?"));
  CHECK_THROWS_WITH(load_config(path, {"optimizer.betas=[0.9, 0.99"}),
                    Contains("--set optimizer.betas=[0.9, 0.99: the value is not valid YAML"));
  // Text that YAML reads as no value is refused rather than leaving the key at its default; none said as YAML says it
  // (null, ~, '') is taken.
  for (const std::string value : {"#x", "# 12|", "%x", "&a", "!", "|", ">"})
    for (const std::string key : {"logging.probe", "model.d_model", "optimizer.lr"}) {
      INFO(key << "=" << value);
      CHECK_THROWS_WITH(load_config_text("{}", "s.yaml", {fmt::format("{}={}", key, value)}),
                        Contains(fmt::format("s.yaml: --set {}={}: '{}' is no value in YAML", key, value, value)));
    }
  for (const char* none : {"null", "~", "''", "\"\""})
    CHECK(load_config_text("{}", "s.yaml", {std::string("logging.probe=") + none}).logging.probe.empty());
  CHECK(load_config_text("{}", "s.yaml", {"logging.probe='#x'"}).logging.probe == "#x");
}

TEST_CASE("config: a value of the wrong type names key, line and the expected type", "[config]") {
  TempDir dir;
  // optimizer.lr on line 12
  const std::string path = dir.write("run.yaml", R"(model:
  context: 16
  d_model: 32
  n_head: 4
data:
  task: reverse
  length: 6
training:
  steps: 100
optimizer:
  name: adamw
  lr: fast
)");
  CHECK_THROWS_WITH(load_config(path, {}),
                    Contains(path) && Contains("optimizer.lr at line 12: expected a number, got 'fast'"));
  CHECK_THROWS_WITH(load_text(dir, "model:\n  n_layer: 2.5\n"),
                    Contains("model.n_layer at line 2: expected an integer, got '2.5'"));
  CHECK_THROWS_WITH(load_text(dir, "model:\n  bias: yes\n"),
                    Contains("model.bias at line 2: expected true or false, got 'yes'"));
  CHECK_THROWS_WITH(load_text(dir, "model:\n  context: [1, 2]\n"),
                    Contains("model.context at line 2: expected an integer or 'auto', got a list"));
  CHECK_THROWS_WITH(load_text(dir, "model:\n  vocab_size: lots\n"),
                    Contains("model.vocab_size at line 2: expected an integer or 'auto', got 'lots'"));
  CHECK_THROWS_WITH(load_text(dir, "optimizer:\n  betas: [0.9]\n"),
                    Contains("optimizer.betas at line 2: expected a list of two numbers like [0.9, 0.999], got a "
                             "list of 1 values"));
  CHECK_THROWS_WITH(load_text(dir, "optimizer:\n  betas: [0.9, high]\n"),
                    Contains("optimizer.betas at line 2: value 2: expected a number, got 'high'"));
  CHECK_THROWS_WITH(load_text(dir, "optimizer:\n  eps: .inf\n"),
                    Contains("optimizer.eps at line 2: expected a number, got '.inf'"));
  CHECK_THROWS_WITH(load_text(dir, "logging:\n  probe: [a, b]\n"),
                    Contains("logging.probe at line 2: expected a string, got a list"));
  CHECK_THROWS_WITH(load_text(dir, "{}", {"optimizer.lr=fast"}),
                    Contains("optimizer.lr (--set optimizer.lr=fast): expected a number, got 'fast'"));
}

TEST_CASE("config: d_model not divisible by n_head suggests valid d_model values", "[config]") {
  TempDir dir;
  const std::string path = dir.write("run.yaml", "model:\n  n_head: 4\n  d_model: 50\n");
  CHECK_THROWS_WITH(load_config(path, {}),
                    Contains(path) && Contains("model.d_model at line 3: 50 is not divisible by model.n_head = 4") &&
                        Contains("valid d_model near it: 48 or 52"));
  // default d_model (64) with n_head 5: points at the n_head line
  CHECK_THROWS_WITH(load_text(dir, "model:\n  n_head: 5\n"),
                    Contains("model.d_model (default): 64 is not divisible by model.n_head = 5") &&
                        Contains("60 or 65") && Contains("(model.n_head at line 2)"));
}

TEST_CASE("config: an n_kv_head that does not divide n_head names both keys and what would be valid", "[config]") {
  TempDir dir;
  for (std::size_t kv : {3, 5, 8}) {
    INFO("n_kv_head " << kv);
    CHECK_THROWS_WITH(load_text(dir, fmt::format("model:\n  n_head: 4\n  n_kv_head: {}\n", kv)),
                      Contains(fmt::format("model.n_kv_head at line 3: {} does not divide model.n_head = 4", kv)) &&
                          Contains("a divisor of n_head"));
  }
  for (std::size_t kv : {0, 1, 2, 4}) {
    INFO("n_kv_head " << kv);
    CHECK(load_text(dir, fmt::format("model:\n  n_head: 4\n  n_kv_head: {}\n", kv)).model.n_kv_head == kv);
  }
}

TEST_CASE("config: sizes below their minimum name the key, line and minimum", "[config]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_text(dir, "model:\n  context: 0\n"),
                    Contains("model.context at line 2: must be at least 1, got 0"));
  CHECK_THROWS_WITH(load_text(dir, "data:\n  task: sort\ntraining:\n  batch_size: 0\n"),
                    Contains("training.batch_size at line 4: must be at least 1, got 0"));
  CHECK_THROWS_WITH(load_text(dir, "training:\n  steps: -5\n"),
                    Contains("training.steps at line 2: must be >= 0, got -5"));
  CHECK_THROWS_WITH(load_text(dir, "data:\n  alphabet: 1\n"),
                    Contains("data.alphabet at line 2: must be in [2, 62], got 1"));
}

TEST_CASE("config: lr, dropout and other reals outside their range name the valid range", "[config]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_text(dir, "optimizer:\n  lr: 0\n"), Contains("optimizer.lr at line 2: must be > 0, got 0"));
  CHECK_THROWS_WITH(load_text(dir, "optimizer:\n  name: sgd\n  lr: -0.1\n"),
                    Contains("optimizer.lr at line 3: must be > 0, got -0.1"));
  CHECK_THROWS_WITH(load_text(dir, "model:\n  dropout: 1.0\n"),
                    Contains("model.dropout at line 2: must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(load_text(dir, "model:\n  dropout: -0.5\n"),
                    Contains("model.dropout at line 2: must be in [0, 1), got -0.5"));
  CHECK_THROWS_WITH(load_text(dir, "optimizer:\n  betas: [0.9, 1.0]\n"),
                    Contains("optimizer.betas at line 2: each value must be in [0, 1), got [0.9, 1]"));
  CHECK_THROWS_WITH(load_text(dir, "data:\n  val_fraction: 1\n"),
                    Contains("data.val_fraction at line 2: must be in (0, 1), got 1"));
}

TEST_CASE("config: warmup_steps larger than steps names both keys and the valid range", "[config]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_text(dir, "training:\n  steps: 200\nschedule:\n  warmup_steps: 500\n"),
                    Contains("schedule.warmup_steps at line 4: 500 is more than training.steps = 200") &&
                        Contains("valid: 0 to 200"));
  // default warmup (100) against a short run set with --set: the override is named
  CHECK_THROWS_WITH(load_text(dir, "{}", {"training.steps=50"}),
                    Contains("schedule.warmup_steps (default): 100 is more than training.steps = 50") &&
                        Contains("(training.steps (--set training.steps=50))"));
  // a constant schedule has no warmup, so no conflict
  CHECK_NOTHROW(load_text(dir, "schedule:\n  name: constant\ntraining:\n  steps: 50\n"));
}

TEST_CASE("config: min_lr above lr names both and the valid range", "[config]") {
  TempDir dir;
  CHECK_THROWS_WITH(
      load_text(dir, "optimizer:\n  lr: 0.001\nschedule:\n  min_lr: 0.01\n"),
      Contains("schedule.min_lr at line 4: 0.01 is larger than optimizer.lr = 0.001") && Contains("valid: 0 to 0.001"));
}

TEST_CASE("config: an unknown enum name lists the valid names", "[config]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_text(dir, "model:\n  d_model: 32\n  init: kaiming\n"),
                    Contains("model.init at line 3: unknown value 'kaiming'; valid: xavier_uniform, xavier_normal, "
                             "normal"));
  CHECK_THROWS_WITH(load_text(dir, "optimizer:\n  name: AdamW\n"),
                    Contains("optimizer.name at line 2: unknown value 'AdamW'; valid: sgd, adam, adamw") &&
                        Contains("did you mean adamw?"));
  CHECK_THROWS_WITH(load_text(dir, "data:\n  task: reversed\n"),
                    Contains("data.task at line 2") &&
                        Contains("valid: copy, reverse, sort, add, induction, repeats, modular, text, tokens"));
  CHECK_THROWS_WITH(load_text(dir, "{}", {"schedule.name=linear"}),
                    Contains("schedule.name (--set schedule.name=linear): unknown value 'linear'; valid: constant, "
                             "warmup, cosine"));
  CHECK_THROWS_WITH(load_text(dir, "training:\n  nonfinite: ignore\n"),
                    Contains("training.nonfinite at line 2") && Contains("valid: stop, skip"));
  CHECK_THROWS_WITH(
      load_text(dir, "optimizer:\n  decay_rule: matrix\n"),
      Contains("optimizer.decay_rule at line 2") && Contains("valid: matrices_no_embeddings, matrices, all, none"));
  CHECK_THROWS_WITH(load_text(dir, "model:\n  attention: flash\n"),
                    Contains("model.attention at line 2") && Contains("valid: fused, composed"));
}

TEST_CASE("config: a text or tokens task without a path asks for data.path", "[config]") {
  TempDir dir;
  CHECK_THROWS_WITH(
      load_text(dir, "data:\n  task: text\n"),
      Contains("data.path (default): task 'text' reads a file: set data.path") && Contains("(data.task at line 2)"));
  CHECK_THROWS_WITH(load_text(dir, "data:\n  task: tokens\n  path: \"\"\n"),
                    Contains("data.path at line 3: task 'tokens' reads a file"));
}

TEST_CASE("config: validate checks a config built in code and names the key", "[config]") {
  RunConfig c;
  c.model.n_head = 3;
  try {
    validate(c);
    FAIL("validate accepted d_model 64 with n_head 3");
  } catch (const ConfigError& e) {
    CHECK(e.keys().front() == "model.d_model");
    CHECK_THAT(std::string(e.what()),
               Contains("model.d_model: 64 is not divisible by model.n_head = 3") && Contains("63 or 66"));
  }
  RunConfig n;
  n.optimizer.name = OptimizerName::sgd;
  n.optimizer.nesterov = true;
  n.optimizer.momentum = 0.0;
  CHECK_THROWS_WITH(validate(n), Contains("optimizer.nesterov: true needs optimizer.momentum > 0"));
}

TEST_CASE("config: model.context is a number or auto, and task text needs a number", "[config]") {
  TempDir dir;
  CHECK(load_text(dir, "model:\n  context: 24\n").model.context == std::optional<std::size_t>(24));
  CHECK_FALSE(load_text(dir, "model:\n  context: auto\n").model.context.has_value());
  CHECK_THROWS_WITH(load_text(dir, "model:\n  context: long\n"),
                    Contains("model.context at line 2: expected an integer or 'auto', got 'long'"));
  dir.write("input.txt", "hello");
  CHECK_THROWS_WITH(load_text(dir, "data:\n  task: text\n  path: input.txt\n"),
                    Contains("model.context (default)") && Contains("data.task at line 2") &&
                        Contains("set model.context to the window length"));
  CHECK_THROWS_WITH(load_text(dir, "data:\n  task: text\n  path: input.txt\nmodel:\n  context: auto\n"),
                    Contains("model.context at line 5") && Contains("task 'text' cuts the file into windows"));
  CHECK(load_text(dir, "data:\n  task: text\n  path: input.txt\nmodel:\n  context: 8\n").model.context == 8u);
}

TEST_CASE("config: a file that is not UTF-8 is refused with the line and column of the bad byte", "[config]") {
  TempDir dir;
  const std::string latin1 = dir.write("latin1.yaml", "model:\n  d_model: 64\n# caf\xE9\n");
  CHECK_THROWS_AS(load_config(latin1, {}), ConfigError);
  CHECK_THROWS_WITH(load_config(latin1, {}),
                    Contains(latin1) && Contains("not UTF-8") && Contains("line 3, column 6") && Contains("byte 0xe9"));
  const std::string utf16 = dir.write("utf16.yaml", std::string("\xFF\xFEm\0o\0", 6));  // a UTF-16 byte-order mark
  CHECK_THROWS_WITH(load_config(utf16, {}), Contains("not UTF-8") && Contains("line 1, column 1"));
}

TEST_CASE("config: a check made after loading points at the key's line, its --set, or its default", "[config]") {
  TempDir dir;
  const std::string path = dir.write("run.yaml", "data:\n  task: reverse\nmodel:\n  d_model: 32\n  context: 40\n");
  const RunConfig c = load_config(path, {"training.steps=700"});
  CHECK(std::string(error_at(c, "model.context", "too long").what()) == path + ": model.context at line 5: too long");
  CHECK(std::string(error_at(c, "training.steps", "x").what()) ==
        path + ": training.steps (--set training.steps=700): x");
  CHECK(std::string(error_at(c, "model.n_layer", "x").what()) == path + ": model.n_layer (default): x");
  CHECK(error_at(c, "model.context", "x").keys() == std::vector<std::string>{"model.context"});
  const RunConfig text = load_config_text("model:\n  n_head: 2\n", "inline.yaml");
  CHECK(text.model.n_head == 2);
  CHECK(text.source.locate("model.n_head") == "inline.yaml: model.n_head at line 2");
}

TEST_CASE("config: docs/config.md is the reference generated from the field list", "[config]") {
  std::ifstream in(std::string(TINYFORMER_SOURCE_DIR) + "/docs/config.md");
  REQUIRE(in);
  std::stringstream file;
  file << in.rdbuf();
  INFO("regenerate it with: ./build/bin/tinyformer config --docs > docs/config.md");
  CHECK(file.str() == reference_markdown());
  // every key of every section has a row
  const RunConfig defaults;
  for_each_field_of(defaults, [&](const FieldInfo& f, const auto&) {
    INFO(f.path());
    CHECK(file.str().find(fmt::format("| `{}` |", f.key)) != std::string::npos);
  });
}

TEST_CASE("config: diff lists each changed field with both values and what resume may do with it", "[config]") {
  RunConfig a, b;
  CHECK(diff(a, b).empty());
  b.training.batch_size = 8;
  b.training.steps = 10;
  b.model.d_model = 32;
  const auto changes = diff(a, b);
  REQUIRE(changes.size() == 3);
  CHECK(changes[0].path == "model.d_model");  // declaration order: model first
  CHECK(changes[0].before == "64");
  CHECK(changes[0].after == "32");
  CHECK(changes[0].on_resume == OnResume::fixed);
  CHECK(changes[1].path == "training.batch_size");
  CHECK(changes[1].on_resume == OnResume::exact);
  CHECK(changes[2].path == "training.steps");
  CHECK(changes[2].on_resume == OnResume::free);
  CHECK_FALSE(a == b);
}

TEST_CASE("config: the model section round-trips through its checkpoint JSON, and bad JSON names the key", "[config]") {
  ModelConfig m;
  m.vocab_size = 11;
  m.d_model = 32;
  m.dropout = 0.25;
  m.tie_weights = true;
  m.init = InitScheme::normal;
  const std::string json = model_json(m);
  CHECK(json.find("\"d_model\":32") != std::string::npos);
  CHECK(json.find("\"context\":null") != std::string::npos);  // auto
  CHECK(json.find("\"init\":\"normal\"") != std::string::npos);
  RunConfig a, b;
  a.model = m;
  b.model = model_from_json(json);
  CHECK(diff(a, b).empty());
  CHECK(model_from_json("{\"n_layer\": 3}").n_layer == 3);  // keys not given keep their defaults
  CHECK_THROWS_WITH(model_from_json("{\"n_layer\": \"three\"}"), Contains("model.n_layer"));
  CHECK_THROWS_WITH(model_from_json("{\"init\": \"xavier\"}"), Contains("model.init"));
  CHECK_THROWS_WITH(model_from_json("{\"n_embd\": 3}"), Contains("unknown model key 'n_embd'"));
  CHECK_THROWS_WITH(model_from_json("[1]"), Contains("not a JSON object"));
}

TEST_CASE("config: every enum's names are its enumerators, and parse_enum suggests the closest", "[config]") {
  CHECK(enum_names(Task{}) == std::vector<std::string>{"copy", "reverse", "sort", "add", "induction", "repeats",
                                                       "modular", "text", "tokens"});
  CHECK(parse_enum<DecayRule>("matrices") == DecayRule::matrices);
  CHECK(to_string(DecayRule::none) == "none");
  CHECK_THROWS_WITH(parse_enum<DecayRule>("matrics"), Contains("valid: matrices_no_embeddings, matrices, all, none") &&
                                                          Contains("did you mean matrices?"));
}
