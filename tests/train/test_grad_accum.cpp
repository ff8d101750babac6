// Gradient accumulation: K micro-batches of B are one optimizer step on the K x B sequences of one batch, so the
// losses follow those of batch_size K x B step for step (reverse and tokens), the micro-batches are the rows of that
// batch, and a run resumed halfway continues bit for bit.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <catch2/catch.hpp>

#include "support/sources.hpp"
#include "support/temp_dir.hpp"
#include "tinyformer/io/npy.hpp"
#include "tinyformer/train/run.hpp"
#include "tinyformer/train/step.hpp"
#include "tinyformer/train/trainer.hpp"

namespace fs = std::filesystem;
using namespace tf;

namespace {

// Rows [N, 17] of token ids from a small deterministic "language": each row a walk with a fixed stride pattern.
std::string write_tokens(const test::TempDir& dir) {
  IndexArray rows = IndexArray::from_shape({400, 17});
  for (std::size_t r = 0; r < 400; ++r)
    for (std::size_t c = 0; c < 17; ++c) rows(r, c) = static_cast<Index>((r * 7 + c * (1 + r % 3)) % 23);
  std::string path = dir.file("tokens.npy");
  io::write_npy(path, rows);
  return path;
}

// 50 steps of a small model; every step's loss.
std::vector<double> losses(const std::vector<std::string>& data, std::size_t batch, std::size_t accum,
                           const std::string& out) {
  train::TrainOptions opts;
  opts.config_path = test::config_file("reverse");
  opts.overrides = {"training.steps=50",
                    "schedule.warmup_steps=5",
                    "model.d_model=32",
                    "training.eval_interval=50",
                    "logging.attention_interval=0",
                    "logging.checkpoint_interval=0",
                    "training.grad_clip=1",
                    "training.batch_size=" + std::to_string(batch),
                    "training.grad_accum=" + std::to_string(accum)};
  opts.overrides.insert(opts.overrides.end(), data.begin(), data.end());
  opts.out_dir = out;
  opts.overwrite = true;
  opts.progress = false;
  return train::train(opts).train_losses;
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  return worst;
}

}  // namespace

TEST_CASE("train: grad_accum 4 x batch_size 8 gives the losses of batch_size 32 within 1e-5, step for step (reverse, "
          "tokens, and tokens with SGD without clipping)",
          "[train]") {
  test::TempDir dir;
  const std::string tokens = write_tokens(dir);
  // AdamW with clipping hardly sees the scale of the gradient; SGD without clipping does.
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"reverse", {}},
      {"tokens", {"data.task=tokens", "data.path=" + tokens, "data.shuffle=false"}},
      {"tokens, SGD",
       {"data.task=tokens", "data.path=" + tokens, "data.shuffle=false", "optimizer.name=sgd", "optimizer.lr=0.3",
        "training.grad_clip=0"}}};
  for (const auto& [name, data] : cases) {
    INFO(name);
    const std::vector<double> whole = losses(data, 32, 1, dir.file("whole"));
    const std::vector<double> accumulated = losses(data, 8, 4, dir.file("accumulated"));
    REQUIRE(whole.size() == 50);
    const double worst = max_relative_difference(accumulated, whole);
    INFO("largest relative difference " << worst << "; first loss " << whole.front() << ", last " << whole.back());
    CHECK(worst <= 1e-5);
    CHECK(whole.back() < 0.8 * whole.front());  // it learns: the comparison is not between two flat lines
    // and a different batch is not within the bound: the check can see a wrong accumulation
    CHECK(max_relative_difference(losses(data, 8, 1, dir.file("small")), whole) > 1e-3);
  }
}

TEST_CASE("train: the K micro-batches of a step are the rows of one batch of K x B, in order", "[train]") {
  test::TempDir dir;
  train::TrainOptions opts;
  opts.config_path = test::config_file("reverse");
  opts.overrides = {"training.batch_size=3", "training.grad_accum=4", "logging.attention_interval=0"};
  opts.out_dir = dir.file("run");
  opts.progress = false;
  std::vector<std::string> notes;
  train::Run run = train::open_run(opts, notes);
  Rng before = run.parts.data_rng;
  const std::vector<data::Batch> micro = train::draw_micro_batches(run);
  const data::Batch whole = run.parts.data->train_batch(12, before);
  REQUIRE(micro.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) {
    REQUIRE(micro[k].x.shape(0) == 3);
    for (std::size_t b = 0; b < 3; ++b)
      for (std::size_t t = 0; t < whole.x.shape(1); ++t) {
        CHECK(micro[k].x(b, t) == whole.x(k * 3 + b, t));
        CHECK(micro[k].y(b, t) == whole.y(k * 3 + b, t));
      }
  }
  CHECK(run.parts.data_rng.state() == before.state());  // the generator moved by exactly one batch of 12
}

TEST_CASE("train: grad_accum 2 stopped after N steps and resumed equals the uninterrupted run, bit for bit (dropout "
          "on, tokens in file order)",
          "[train]") {
  test::TempDir dir;
  const std::string tokens = write_tokens(dir);
  for (const auto& data : {std::vector<std::string>{"model.dropout=0.1"},
                           std::vector<std::string>{"data.task=tokens", "data.path=" + tokens, "data.shuffle=false"}}) {
    train::TrainOptions full;
    full.config_path = test::config_file("reverse");
    full.overrides = {"training.steps=16",
                      "schedule.decay_steps=16",
                      "schedule.warmup_steps=4",
                      "model.d_model=32",
                      "training.batch_size=4",
                      "training.grad_accum=2",
                      "logging.attention_interval=0",
                      "logging.checkpoint_interval=0",
                      "training.eval_interval=8"};
    full.overrides.insert(full.overrides.end(), data.begin(), data.end());
    full.out_dir = dir.file("full");
    full.progress = false;
    full.overwrite = true;
    const auto a = train::train(full);
    train::TrainOptions first = full;
    first.out_dir = dir.file("parts");
    first.overrides.push_back("training.steps=8");
    train::train(first);
    train::TrainOptions second = full;
    second.out_dir = first.out_dir;
    second.overwrite = false;
    second.resume = true;
    const auto b = train::train(second);
    REQUIRE(b.train_losses.size() == 8);
    for (std::size_t i = 0; i < 8; ++i) {
      INFO("step " << i + 9);
      CHECK(b.train_losses[i] == a.train_losses[i + 8]);  // exact
    }
  }
}
