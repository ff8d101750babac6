// End-to-end training: the shipped configs learn their task and the attention pattern the task implies,
// and a run interrupted and resumed equals an uninterrupted one, loss for loss, bit for bit.
#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/sources.hpp"
#include "support/temp_dir.hpp"
#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/config/config.hpp"
#include "tinyformer/infer/head_scores.hpp"
#include "tinyformer/io/safetensors.hpp"
#include "tinyformer/tensor/parallel.hpp"
#include "tinyformer/train/run_log.hpp"
#include "tinyformer/train/setup.hpp"
#include "tinyformer/train/trainer.hpp"

namespace fs = std::filesystem;
using namespace tf;

namespace {

std::string fresh_dir(const std::string& name) {
  const fs::path dir = test::process_path(name);
  fs::remove_all(dir);
  return dir.string();
}

// Trains the config, then measures on the held-out set: exact-match accuracy, and for every head the mean
// attention weight that answer queries put on the key the task says they should attend to. Returns the best head.
struct Learned {
  double accuracy = 0;
  double best_mass = 0;
  std::string best_head;
};

Learned train_and_measure(const std::string& config, const std::vector<std::string>& overrides = {},
                          const std::string& run_name = "") {
  train::TrainOptions opts;
  opts.config_path = test::config_file(config);
  opts.overrides = overrides;
  opts.out_dir = fresh_dir(run_name.empty() ? config : run_name);
  opts.progress = false;
  const train::TrainResult r = train::train(opts);
  REQUIRE(r.last_accuracy.has_value());

  // Reload the trained weights and score the heads on the held-out set (the expected pattern's table).
  const config::RunConfig cfg = config::load_config(opts.config_path, opts.overrides);
  train::RunSetup run = train::make_run(cfg);
  checkpoint::load_model_weights(
      io::SafetensorsFile::load((fs::path(*opts.out_dir) / "checkpoint.safetensors").string()), *run.model);
  const auto scores = infer::score_heads_on_data(*run.model, *run.data, cfg.training.batch_size, 1000);
  REQUIRE(scores.has_value());
  const analysis::BestHead best = analysis::best_head(scores->table(analysis::Pattern::expected));
  return {*r.last_accuracy, best.score, "layer " + std::to_string(best.layer) + " head " + std::to_string(best.head)};
}

}  // namespace

TEST_CASE("train: configs/reverse.yaml learns reversal and a head attends to the mirrored source token",
          "[train][slow]") {
  const Learned r = train_and_measure("reverse");
  INFO("accuracy " << r.accuracy << ", best head " << r.best_head << " mass " << r.best_mass);
  CHECK(r.accuracy >= 0.99);
  CHECK(r.best_mass >= 0.8);
}

// The same task shortened for the ARM64 suite, where qemu-aarch64 emulates every float lane through a call into its
// software floating point (docs/platforms.md): reverse.yaml's 400 steps take over an hour of CPU there. Kept: the task
// (8 symbols reversed, alphabet 10), the heads, the optimizer and the seed; shortened: one layer (reversal attends by
// position alone) of width 32, 32 sequences a step and 100 steps, about 1/60 of the products' arithmetic of
// reverse.yaml's run. Natively it reached held-out accuracy 1.000 at 60 steps (0.80 at 40), and at 100 steps with
// seeds 1 to 6 too, so the float differences of another architecture have room. The evaluation covers all 512
// held-out sequences (16 batches of 32). About 0.3 CPU s natively, 53 under qemu-aarch64.
TEST_CASE("train: configs/reverse.yaml shortened to one layer of width 32 and 100 steps still learns reversal",
          "[train]") {
  const Learned r =
      train_and_measure("reverse",
                        {"model.n_layer=1", "model.d_model=32", "training.batch_size=32", "training.steps=100",
                         "schedule.warmup_steps=10", "training.eval_interval=100", "training.eval_batches=16",
                         "logging.attention_interval=0", "logging.checkpoint_interval=0"},
                        "reverse_short");
  INFO("accuracy " << r.accuracy << ", best head " << r.best_head << " mass " << r.best_mass);
  CHECK(r.accuracy >= 0.99);
  CHECK(r.best_mass >= 0.8);
}

TEST_CASE("train: configs/induction.yaml learns recall and a head attends to the token after the earlier occurrence",
          "[train][slow]") {
  const Learned r = train_and_measure("induction");
  INFO("accuracy " << r.accuracy << ", best head " << r.best_head << " mass " << r.best_mass);
  CHECK(r.accuracy >= 0.99);
  CHECK(r.best_mass >= 0.8);
}

TEST_CASE("train: 2N steps equal N steps plus a resume for N more, bit for bit (dropout on)", "[train]") {
  const std::vector<std::string> common{"training.steps=24",
                                        "schedule.decay_steps=24",
                                        "schedule.warmup_steps=4",
                                        "model.dropout=0.1",
                                        "model.d_model=32",
                                        "training.batch_size=8",
                                        "logging.log_interval=4",
                                        "training.eval_interval=8",
                                        "logging.attention_interval=12",
                                        "logging.checkpoint_interval=0"};
  train::TrainOptions full;
  full.config_path = test::config_file("reverse");
  full.overrides = common;
  full.out_dir = fresh_dir("resume_full");
  full.progress = false;
  const auto a = train::train(full);
  REQUIRE(a.train_losses.size() == 24);

  train::TrainOptions first = full;
  first.out_dir = fresh_dir("resume_parts");
  first.overrides.push_back("training.steps=12");
  const auto b1 = train::train(first);
  REQUIRE(b1.train_losses.size() == 12);
  train::TrainOptions second = full;
  second.out_dir = first.out_dir;
  second.resume = true;
  const auto b2 = train::train(second);
  REQUIRE(b2.train_losses.size() == 12);
  for (std::size_t i = 0; i < 12; ++i) {
    INFO("step " << i + 1);
    CHECK(b1.train_losses[i] == a.train_losses[i]);
  }
  for (std::size_t i = 0; i < 12; ++i) {
    INFO("step " << i + 13);
    CHECK(b2.train_losses[i] == a.train_losses[i + 12]);  // exact float equality
  }
}

TEST_CASE("train: resume refuses a checkpoint whose model differs from the config", "[train]") {
  train::TrainOptions opts;
  opts.config_path = test::config_file("reverse");
  opts.overrides = {"training.steps=2", "schedule.warmup_steps=1", "model.d_model=32", "logging.attention_interval=0"};
  opts.out_dir = fresh_dir("resume_mismatch");
  opts.progress = false;
  train::train(opts);
  opts.overrides = {"training.steps=4", "schedule.warmup_steps=1", "model.d_model=48", "logging.attention_interval=0"};
  opts.resume = true;
  CHECK_THROWS_WITH(train::train(opts), Catch::Contains("model.d_model 32 -> 48 differs from the checkpoint's config"));
}

TEST_CASE("train: a run writes config, metrics, attention snapshots, checkpoint and report", "[train]") {
  train::TrainOptions opts;
  opts.config_path = test::config_file("reverse");
  opts.overrides = {"training.steps=10",      "schedule.warmup_steps=2",  "logging.attention_interval=5",
                    "logging.log_interval=5", "training.eval_interval=5", "model.d_model=32"};
  opts.out_dir = fresh_dir("artifacts");
  opts.progress = false;
  train::train(opts);
  const fs::path out = *opts.out_dir;
  for (const char* f :
       {"config.yaml", "metrics.jsonl", "checkpoint.safetensors", "report.html", "attention/step_000005.npy",
        "attention/step_000005.json", "attention/step_000005.png", "attention/step_000010.npy"})
    CHECK(fs::exists(out / f));
  std::ifstream metrics(out / "metrics.jsonl");
  std::string line;
  int rows = 0;
  while (std::getline(metrics, line)) {
    ++rows;
    CHECK(line.find("\"train_loss\"") != std::string::npos);
    CHECK(line.find("\"attention_entropy\"") != std::string::npos);
  }
  CHECK(rows == 2);
  const auto ckpt = io::SafetensorsFile::load((out / "checkpoint.safetensors").string());
  CHECK(ckpt.has("transformer.wte.weight"));
  CHECK(ckpt.has("optimizer.exp_avg.transformer.wte.weight"));
  CHECK(ckpt.metadata().at("tinyformer.step") == "10");
}

namespace {

// reverse at d_model 16 with `overrides` and more threads than cores (a warning on any machine): what on_warning was
// given, and the result
struct WarnedRun {
  std::vector<std::string> said;
  train::TrainResult result;
};
WarnedRun train_with_warnings(std::vector<std::string> overrides, const std::string& name) {
  train::TrainOptions opts;
  opts.config_path = test::config_file("reverse");
  opts.overrides = {"schedule.warmup_steps=0", "model.d_model=16", "logging.attention_interval=0",
                    "training.threads=" + std::to_string(physical_cores() + 1)};
  opts.overrides.insert(opts.overrides.end(), overrides.begin(), overrides.end());
  opts.out_dir = fresh_dir(name);
  opts.progress = false;
  WarnedRun run;
  opts.on_warning = [&](const std::string& w) { run.said.push_back(w); };
  run.result = train::train(opts);
  return run;
}

}  // namespace

TEST_CASE("train: the run's warnings go to on_warning in order, and into the result", "[train]") {
  const WarnedRun run = train_with_warnings(
      {"training.steps=1", "logging.probe=01234567890123456789012345678901234567890123456789"}, "warnings");
  REQUIRE(run.said.size() == 2);
  CHECK_THAT(run.said[0], Catch::StartsWith("training.threads " + std::to_string(physical_cores() + 1) +
                                            " is more than this machine's"));
  CHECK(run.said[1] == "logging.probe has 50 tokens, the context is 16: keeping the last 16");
  CHECK(run.result.warnings == run.said);
}

TEST_CASE("train: a step skipped for a non-finite loss is a warning of the run after those of its setup", "[train]") {
  const WarnedRun run =
      train_with_warnings({"training.steps=4", "optimizer.lr=1e30", "training.nonfinite=skip"}, "skipped");
  const auto& said = run.said;
  REQUIRE(run.result.steps_skipped >= 1);
  REQUIRE(said.size() == static_cast<std::size_t>(1 + run.result.steps_skipped));
  CHECK_THAT(said[0], Catch::StartsWith("training.threads "));
  for (std::size_t i = 1; i < said.size(); ++i) {
    CHECK_THAT(said[i], Catch::StartsWith("step ") && Catch::EndsWith("; step skipped (training.nonfinite: skip)"));
    CHECK_THAT(said[i], Catch::Contains("is nan") || Catch::Contains("is inf") || Catch::Contains("not finite"));
  }
  CHECK(run.result.warnings == said);
}

TEST_CASE("train: training.max_seconds stops after the step that passes it, evaluates, saves and says so", "[train]") {
  // Budgets below the time of one step (any positive value that small) stop after step 1, whatever the machine.
  for (const char* budget : {"1e-9", "1e-6", "0.0001"}) {
    INFO("training.max_seconds " << budget);
    train::TrainOptions opts;
    opts.config_path = test::config_file("reverse");
    opts.overrides = {"training.steps=50", "schedule.warmup_steps=2", "logging.attention_interval=0",
                      "model.d_model=32", std::string("training.max_seconds=") + budget};
    opts.out_dir = fresh_dir("budget");
    opts.progress = false;
    const train::TrainResult r = train::train(opts);
    CHECK(r.out_of_time);
    CHECK(r.steps_done == 1);
    CHECK(r.last_val_loss.has_value());  // the stopping step is evaluated like a last step
    CHECK_THAT(train::summary_line(r), Catch::Contains("step 1 of 50") && Catch::Contains("time budget"));
    const auto ckpt = io::SafetensorsFile::load((fs::path(*opts.out_dir) / "checkpoint.safetensors").string());
    CHECK(ckpt.metadata().at("tinyformer.step") == "1");
  }
}

TEST_CASE("train: a time budget the run does not reach changes no loss, and no budget is the default", "[train]") {
  CHECK(config::RunConfig{}.training.max_seconds == 0.0);
  std::vector<std::vector<double>> losses;
  for (const char* budget : {"0", "1e6"}) {
    train::TrainOptions opts;
    opts.config_path = test::config_file("reverse");
    opts.overrides = {"training.steps=12", "schedule.warmup_steps=2", "logging.attention_interval=0",
                      "model.d_model=32",  "model.dropout=0.1",       std::string("training.max_seconds=") + budget};
    opts.out_dir = fresh_dir("no_budget");
    opts.progress = false;
    const train::TrainResult r = train::train(opts);
    CHECK_FALSE(r.out_of_time);
    CHECK(r.steps_done == 12);
    CHECK_THAT(train::summary_line(r), !Catch::Contains("time budget"));
    losses.push_back(r.train_losses);
  }
  CHECK(losses[0] == losses[1]);
}

TEST_CASE("train: grouped-query (n_kv_head 2) and multi-query (1) attention learn reverse to accuracy 0.99",
          "[train][slow]") {
  for (const char* kv : {"2", "1"}) {
    INFO("n_kv_head " << kv);
    train::TrainOptions opts;
    opts.config_path = test::config_file("reverse");  // n_head 4
    opts.overrides = {std::string("model.n_kv_head=") + kv, "logging.attention_interval=0"};
    opts.out_dir = fresh_dir("gqa");
    opts.progress = false;
    const train::TrainResult r = train::train(opts);
    REQUIRE(r.last_accuracy.has_value());
    CHECK(*r.last_accuracy >= 0.99);
    const auto file = io::SafetensorsFile::load((fs::path(*opts.out_dir) / "checkpoint.safetensors").string());
    const config::ModelConfig saved = checkpoint::read_model_config(file);
    CHECK(std::to_string(saved.n_kv_head) == kv);
    CHECK(file.shape("transformer.h.0.attn.c_attn.weight") == Shape{64 + 2 * saved.n_kv_head * 16, 64});
    nn::GPT<float> reloaded(saved, 0);
    CHECK_NOTHROW(checkpoint::load_model_weights(file, reloaded));
  }
}

// Every pair of option values learns, in 4 runs instead of the 8 of every combination: a covering array of strength 2
// (each value of one option meets each value of another in some run), one run with all three non-default values
// (Llama's rmsnorm, swiglu and rope), and the all-default model is configs/reverse.yaml's own test above. The table is
// checked to cover every pair, so a new option value must add runs that keep it so.
TEST_CASE("train: every pair of values of model.norm, model.mlp and model.position learns reverse to accuracy 0.99, "
          "and so do relu, norm none and an attention-only model",
          "[train][slow]") {
  const std::vector<std::string> norms = {"layernorm", "rmsnorm"}, mlps = {"gelu", "swiglu"},
                                 positions = {"learned", "rope"};
  // the pairs of the GPT-2 and LLaMA values, then the grokking model's blocks (relu, no norm) and an attention-only
  // model (two more runs rather than every pair of the new values: the suite's time is tight)
  const std::vector<std::array<std::string, 3>> runs = {
      {"rmsnorm", "swiglu", "rope"}, {"rmsnorm", "gelu", "learned"}, {"layernorm", "swiglu", "learned"},
      {"layernorm", "gelu", "rope"}, {"none", "relu", "learned"},    {"layernorm", "none", "rope"}};
  const std::array<const std::vector<std::string>*, 3> values = {&norms, &mlps, &positions};
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t b = a + 1; b < 3; ++b)
      for (const std::string& va : *values[a])
        for (const std::string& vb : *values[b]) {
          INFO("no run has " << va << " with " << vb);
          CHECK(std::any_of(runs.begin(), runs.end(), [&](const auto& run) { return run[a] == va && run[b] == vb; }));
        }
  for (const auto& [norm, mlp, position] : runs) {
    INFO(norm << " " << mlp << " " << position);
    train::TrainOptions opts;
    opts.config_path = test::config_file("reverse");
    opts.overrides = {"model.norm=" + norm, "model.mlp=" + mlp, "model.position=" + position,
                      "logging.attention_interval=0"};
    opts.out_dir = fresh_dir("options");
    opts.progress = false;
    const train::TrainResult r = train::train(opts);
    REQUIRE(r.last_accuracy.has_value());
    CHECK(*r.last_accuracy >= 0.99);
    // The checkpoint says which model it holds, and a model built from that takes its weights.
    const auto file = io::SafetensorsFile::load((fs::path(*opts.out_dir) / "checkpoint.safetensors").string());
    const config::ModelConfig saved = checkpoint::read_model_config(file);
    CHECK(config::to_string(saved.norm) == norm);
    CHECK(config::to_string(saved.mlp) == mlp);
    CHECK(config::to_string(saved.position) == position);
    CHECK(file.has("transformer.wpe.weight") == (saved.position == config::Position::learned));
    CHECK(file.has("transformer.ln_f.weight") == (saved.norm != config::Norm::none));
    CHECK(file.has("transformer.h.0.mlp.c_fc.weight") == (saved.mlp != config::Mlp::none));
    nn::GPT<float> reloaded(saved, 0);
    CHECK_NOTHROW(checkpoint::load_model_weights(file, reloaded));
  }
}
