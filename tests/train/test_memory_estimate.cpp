// The memory check before a run allocates anything (train/memory_estimate.hpp), the data's footprint it starts from,
// the thread bounds, and the warning for attention snapshots that would fill a disk. tests/app/cli_memory.sh
// compares the estimate with the peak memory of real runs.
#include <thread>

#include <catch2/catch.hpp>

#include "tinyformer/config/config.hpp"
#include "tinyformer/data/data.hpp"
#include "tinyformer/tensor/parallel.hpp"
#include "tinyformer/train/memory_estimate.hpp"
#include "tinyformer/train/setup.hpp"

using namespace tf;

namespace {
config::RunConfig task_config(config::Task task) {
  config::RunConfig cfg;
  cfg.data.task = task;
  cfg.data.eval_size = 16;
  return cfg;
}
}  // namespace

TEST_CASE("memory: the data footprint's T and V are the made task sources' own, for every task") {
  for (const auto task :
       {config::Task::copy, config::Task::reverse, config::Task::sort, config::Task::add, config::Task::induction}) {
    for (const std::size_t length : {3, 8}) {
      config::RunConfig cfg = task_config(task);
      cfg.data.length = length;
      cfg.data.digits = length / 2 + 1;
      cfg.data.alphabet = 7;
      const data::DataFootprint fp = data::data_footprint(cfg);
      const auto source = data::make_data_source(cfg);
      INFO(config::to_string(task) << " length " << length);
      CHECK(fp.T == source->seq_len());
      CHECK(fp.V == source->vocab().size());
      CHECK(fp.bytes > 0);
    }
  }
}

TEST_CASE("memory: the estimate grows with each key that drives it") {
  config::RunConfig cfg = task_config(config::Task::reverse);
  const auto base = train::estimate_memory(cfg, 16, 11, 0);
  CHECK(base.weights > 0);
  CHECK(base.optimizer == Approx(2 * base.weights));  // AdamW: two moments per parameter
  config::RunConfig bigger = cfg;
  bigger.training.batch_size *= 2;
  const auto batch2 = train::estimate_memory(bigger, 16, 11, 0);
  CHECK(batch2.activations == Approx(2 * base.activations));
  CHECK(batch2.weights == base.weights);
  bigger = cfg;
  bigger.model.d_model *= 2;
  CHECK(train::estimate_memory(bigger, 16, 11, 0).weights > 3.5 * base.weights);  // ~ C^2 in the blocks
  // the attention's [B,H,T,T]: doubling T more than doubles the activations
  CHECK(train::estimate_memory(cfg, 64, 11, 0).activations > 4 * base.activations);
  // without T and V only the data is counted
  CHECK(train::estimate_memory(cfg, 0, 0, 123).total() == 123);
}

TEST_CASE("memory: grouped-query attention's smaller c_attn shrinks the weights and activations it counts") {
  config::RunConfig cfg = task_config(config::Task::reverse);  // C 64, H 4 (D 16), L 2, biases
  const auto base = train::estimate_memory(cfg, 16, 11, 0);
  cfg.model.n_kv_head = cfg.model.n_head;  // the same model as 0
  CHECK(train::estimate_memory(cfg, 16, 11, 0).total() == base.total());
  cfg.model.n_kv_head = 1;  // k and v: 1 head of 16 rows each instead of 4
  const auto mqa = train::estimate_memory(cfg, 16, 11, 0);
  const double fewer = 2.0 * 2 * (4 - 1) * 16 * (64 + 1);  // L x (k, v) x 3 heads x D rows x (C weights + bias)
  CHECK(base.weights - mqa.weights == Approx(4 * fewer));
  CHECK(mqa.activations < base.activations);
}

TEST_CASE("memory: a model far beyond the machine is refused naming the key, the estimate and the available memory") {
  const config::RunConfig cfg = config::load_config_text("model:\n  d_model: 1000000\n  n_head: 4\n", "big.yaml");
  const auto estimate = train::estimate_memory(cfg, 16, 11, 0);
  REQUIRE(tf::available_memory() > 0);
  REQUIRE(estimate.total() > tf::available_memory());
  try {
    train::check_memory(cfg, estimate, 16, 11);
    FAIL("not refused");
  } catch (const config::ConfigError& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("big.yaml: model.d_model at line 2: model.d_model=1000000"));
    CHECK_THAT(m, Catch::Contains("needs an estimated"));
    CHECK_THAT(m, Catch::Contains("available; lower model.d_model"));
  }
  const config::RunConfig small = config::load_config_text("model:\n  d_model: 32\n", "small.yaml");
  CHECK_NOTHROW(train::check_memory(small, train::estimate_memory(small, 16, 11, 0), 16, 11));
}

TEST_CASE("memory: a step's batches of grad_accum micro-batches are counted, and a huge grad_accum is named") {
  // Every process draws the step's whole batch of K x B sequences before cutting it into micro-batches: with
  // grad_accum 99999999999 that allocation failed at step 1 as an "out of memory" naming batch_size and context.
  config::RunConfig cfg = task_config(config::Task::reverse);
  const auto one = train::estimate_memory(cfg, 16, 11, 0);
  CHECK(one.batches == Approx(2.0 * sizeof(Index) * static_cast<double>(cfg.training.batch_size) * 16));
  cfg.training.grad_accum = 4;  // the global batch and its four micro-batches
  CHECK(train::estimate_memory(cfg, 16, 11, 0).batches == Approx(8 * one.batches));
  CHECK(train::estimate_memory(cfg, 16, 11, 0).activations == one.activations);  // one micro-batch at a time
  for (const char* value : {"99999999999", "1000000000000"}) {
    const config::RunConfig big =
        config::load_config_text("data:\n  task: reverse\n", "k.yaml", {std::string("training.grad_accum=") + value});
    const auto estimate = train::estimate_memory(big, 16, 11, 0);
    REQUIRE(estimate.total() > tf::available_memory());
    CHECK_THROWS_WITH(train::check_memory(big, estimate, 16, 11),
                      Catch::Contains(std::string("training.grad_accum=") + value) && Catch::Contains("batches ") &&
                          Catch::Contains("lower training.grad_accum"));
  }
}

TEST_CASE("memory: a SentencePiece vocabulary too large is named by data.vocab_size, the key the user sets") {
  // model.vocab_size is auto and follows data.vocab_size: the refusal named "model.vocab_size (default)" and asked to
  // lower it (generative tester, seed 20261303, case 45)
  const config::RunConfig cfg =
      config::load_config_text("data:\n  task: text\n  path: t.txt\n  tokenizer: bpe\nmodel:\n  context: 64\n",
                               "b.yaml", {"data.vocab_size=99999999999"});
  const auto estimate = train::estimate_memory(cfg, 64, 99999999999, 0);
  CHECK_THROWS_WITH(train::check_memory(cfg, estimate, 64, 99999999999),
                    Catch::Contains("b.yaml: data.vocab_size (--set data.vocab_size=99999999999): "
                                    "data.vocab_size=99999999999 needs an estimated") &&
                        Catch::Contains("lower data.vocab_size"));
}

TEST_CASE("memory: sizes are written in binary units") {
  CHECK(tf::format_bytes(512) == "512 B");
  CHECK(tf::format_bytes(1536) == "1.5 KiB");
  CHECK(tf::format_bytes(45.0 * 1024 * 1024) == "45 MiB");
  CHECK(tf::format_bytes(812.0 * 1024 * 1024 * 1024) == "812 GiB");
}

TEST_CASE("threads: auto is the physical cores, and the bound of 4 x the hardware threads is checked") {
  const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  CHECK(physical_cores() >= 1);
  CHECK(physical_cores() <= hw);
  CHECK(max_threads() == 4 * hw);
  config::RunConfig cfg;
  cfg.training.threads = static_cast<std::size_t>(max_threads());
  CHECK_NOTHROW(config::validate(cfg));
  cfg.training.threads = static_cast<std::size_t>(max_threads()) + 1;
  CHECK_THROWS_WITH(config::validate(cfg), Catch::Contains("training.threads: " + std::to_string(max_threads() + 1) +
                                                           " is more than " + std::to_string(max_threads())));
}

TEST_CASE("setup: attention snapshots that add up to more than 1 GiB on disk are warned about, naming the keys") {
  config::RunConfig cfg;
  cfg.training.steps = 2;
  cfg.logging.attention_interval = 1;
  // 8 layers x 8 heads x 2000^2 floats: 1 GiB a snapshot, 3 of them
  const std::string w = train::snapshot_bytes_warning(cfg, 8, 8, 2000);
  CHECK_THAT(w, Catch::Matchers::Contains("[8, 8, 2000, 2000] float32") &&
                    Catch::Matchers::Contains("logging.attention_interval 1 over training.steps 2 writes about 3") &&
                    Catch::Matchers::Contains("a shorter logging.probe"));
  CHECK(train::snapshot_bytes_warning(cfg, 2, 4, 32).empty());  // a task's probe: 32 KB a snapshot
  cfg.training.steps = 40000;
  cfg.logging.attention_interval = 100;
  CHECK(train::snapshot_bytes_warning(cfg, 8, 8, 51).empty());         // text's default probe: 401 snapshots of 666 KB
  CHECK_FALSE(train::snapshot_bytes_warning(cfg, 8, 8, 512).empty());  // 401 of 64 MiB
  cfg.logging.attention_interval = 0;                                  // no snapshots
  CHECK(train::snapshot_bytes_warning(cfg, 8, 8, 2000).empty());
}
