// The config keys of the circuit experiments: training.batch_size `all` (the whole fixed training set of `modular`),
// data.modulus, data.operation, data.train_fraction, the `repeats` task's sequence length, model.mlp none and relu,
// model.norm none; each refusal names the key, its line and what is valid.
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"
#include "tinyformer/config/config.hpp"

using namespace tf::config;
using Catch::Contains;
using tf::test::TempDir;

namespace {

RunConfig load_circuit_config(const TempDir& dir, const std::string& text,
                              const std::vector<std::string>& overrides = {}) {
  return load_config(dir.write("run.yaml", text), overrides);
}

const char* const kModularConfig =
    "data:\n  task: modular\n  modulus: 113\n  train_fraction: 0.3\ntraining:\n  batch_size: all\n";

}  // namespace

TEST_CASE("config: batch_size all is the size of modular's training set, written back as that number", "[config]") {
  TempDir dir;
  const RunConfig cfg = load_circuit_config(dir, kModularConfig);
  CHECK(cfg.training.batch_size == 3831);  // round(0.3 x 113^2 = 3830.7)
  CHECK(fixed_train_set_size(cfg.data) == std::optional<std::size_t>(3831));
  CHECK(to_yaml(cfg).find("  batch_size: 3831\n") != std::string::npos);
  CHECK(load_config_text(to_yaml(cfg), "resolved.yaml") == cfg);
  // the fraction is read before the batch, wherever --set puts it
  CHECK(load_circuit_config(dir, kModularConfig, {"data.train_fraction=0.5"}).training.batch_size ==
        6385);  // 6384.5, rounded half away from 0
  CHECK(load_circuit_config(dir, kModularConfig, {"data.modulus=59", "data.train_fraction=0.4"}).training.batch_size ==
        1392);
  // at least one pair on each side of the split
  CHECK(load_circuit_config(dir, kModularConfig, {"data.modulus=2", "data.train_fraction=0.01"}).training.batch_size ==
        1);
  CHECK(load_circuit_config(dir, kModularConfig, {"data.modulus=2", "data.train_fraction=0.99"}).training.batch_size ==
        3);
  CHECK_FALSE(fixed_train_set_size(RunConfig{}.data).has_value());
}

TEST_CASE("config: batch_size all without a fixed training set, and batches larger than it, are refused", "[config]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_circuit_config(dir, "training:\n  batch_size: all\n"),
                    Contains("training.batch_size at line 2") && Contains("'all' takes the whole training set") &&
                        Contains("task 'reverse'") && Contains("give a number"));
  CHECK_THROWS_WITH(load_circuit_config(dir, kModularConfig, {"training.batch_size=4000"}),
                    Contains("training.batch_size (--set training.batch_size=4000)") && Contains("3831 training") &&
                        Contains("valid: 1 to 3831"));
  CHECK_THROWS_WITH(load_circuit_config(dir, kModularConfig, {"training.grad_accum=2"}),
                    Contains("training.batch_size at line 6") && Contains("grad_accum 2") && Contains("3831"));
  CHECK_THROWS_WITH(load_circuit_config(dir, kModularConfig, {"training.batch_size=al"}),
                    Contains("training.batch_size") && Contains("expected an integer, got 'al'"));
  CHECK_THROWS_WITH(load_circuit_config(dir, kModularConfig, {"data.train_fraction=1"}),
                    Contains("data.train_fraction") && Contains("(0, 1)"));
  CHECK_THROWS_WITH(load_circuit_config(dir, kModularConfig, {"data.modulus=1"}),
                    Contains("data.modulus") && Contains("[2, 1000]"));
  CHECK_THROWS_WITH(load_circuit_config(dir, kModularConfig, {"data.operation=divide"}),
                    Contains("data.operation") && Contains("valid: add, subtract, multiply"));
}

TEST_CASE("config: task repeats needs model.context as a number of at least two copies", "[config]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_circuit_config(dir, "data:\n  task: repeats\n  length: 8\n"),
                    Contains("model.context (default)") && Contains("data.task at line 2") &&
                        Contains("at least 2 x data.length = 16"));
  CHECK_THROWS_WITH(load_circuit_config(dir, "data:\n  task: repeats\n  length: 8\nmodel:\n  context: 12\n"),
                    Contains("model.context at line 5") && Contains("valid: at least 16"));
  CHECK(*load_circuit_config(dir, "data:\n  task: repeats\n  length: 8\nmodel:\n  context: 16\n").model.context == 16);
}

TEST_CASE("config: model.mlp takes relu and none, model.norm none, and they round-trip through the checkpoint JSON",
          "[config]") {
  TempDir dir;
  const RunConfig cfg = load_circuit_config(dir, "model:\n  mlp: none\n  norm: none\n");
  CHECK(cfg.model.mlp == Mlp::none);
  CHECK(cfg.model.norm == Norm::none);
  CHECK(model_from_json(model_json(cfg.model)).mlp == Mlp::none);
  CHECK(load_circuit_config(dir, "model:\n  mlp: relu\n").model.mlp == Mlp::relu);
  CHECK_THROWS_WITH(
      load_circuit_config(dir, "model:\n  mlp: rleu\n"),
      Contains("model.mlp at line 2") && Contains("valid: gelu, swiglu, relu, none") && Contains("did you mean relu?"));
  CHECK_THROWS_WITH(load_circuit_config(dir, "model:\n  norm: nothing\n"),
                    Contains("model.norm at line 2") && Contains("valid: layernorm, rmsnorm, none"));
}
