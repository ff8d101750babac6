// The same seed gives the same losses and weights, bit for bit, at 1 and 2 threads: every parallel split
// (gemm blocks, attention heads, elementwise ranges, column sums) leaves each value's arithmetic unchanged.
#include <catch2/catch.hpp>

#include "support/configs.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/optim/adam.hpp"
#include "tinyformer/optim/clip.hpp"
#include "tinyformer/optim/param_groups.hpp"
#include "tinyformer/optim/sgd.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"
#include "tinyformer/tensor/gemm_xsmm.hpp"
#include "tinyformer/tensor/parallel.hpp"

using namespace tf;

namespace {
struct Trace {
  std::vector<float> losses;
  std::vector<Array<float>> weights;
};

// Five AdamW steps of a GPT with dropout on random tokens; big enough that every kernel splits.
Trace train_steps(int threads) {
  set_num_threads(threads);
  config::ModelConfig cfg = test::model(17, 16, 64, 4, 2);
  cfg.dropout = 0.1;
  nn::GPT<float> model(cfg, 5);
  optim::AdamW<float> opt(optim::make_param_groups(model.named_parameters(), 0.01), 1e-3);
  Rng data(9);
  IndexArray x = IndexArray::from_shape({8, 16}), y = x;
  Trace t;
  for (int step = 0; step < 5; ++step) {
    for (auto& v : x) v = static_cast<Index>(data.below(*cfg.vocab_size));
    for (auto& v : y) v = static_cast<Index>(data.below(*cfg.vocab_size));
    opt.zero_grad();
    const Var<float> loss = model.loss(x, y);
    loss.backward();
    opt.step();
    t.losses.push_back(loss.item());
  }
  for (const auto& [name, p] : model.named_parameters()) t.weights.push_back(p.value());
  return t;
}
}  // namespace

TEST_CASE("threads: GPT training losses and weights are bit-identical at 1 and 2 threads under each gemm library",
          "[nn][threads]") {
  const int saved = num_threads();
  const gemm_plan::Policy saved_policy = gemm_plan::policy();
  std::vector<gemm_plan::Policy> policies{gemm_plan::Policy::openblas, gemm_plan::Policy::automatic};
  if (xsmm::built_in()) policies.insert(policies.end(), {gemm_plan::Policy::libxsmm, gemm_plan::Policy::measure});
  for (gemm_plan::Policy policy : policies) {
    INFO("TINYFORMER_GEMM=" << gemm_plan::name(policy));
    gemm_plan::set_policy(policy);  // under measure, the plan measured at 1 thread is kept for 2
    const Trace one = train_steps(1), two = train_steps(2);
    REQUIRE(one.losses.size() == two.losses.size());
    for (std::size_t i = 0; i < one.losses.size(); ++i) {
      INFO("step " << i);
      CHECK(one.losses[i] == two.losses[i]);  // exact
    }
    for (std::size_t i = 0; i < one.weights.size(); ++i) {
      INFO("parameter " << i);
      CHECK(one.weights[i] == two.weights[i]);
    }
    if (policy == gemm_plan::Policy::libxsmm) {  // the products it can take did run on it
      const auto plan = gemm_plan::plan();
      CHECK(!plan.empty());
      for (const auto& c : plan) CHECK(c.backend == gemm_plan::Backend::libxsmm);
    }
  }
  set_num_threads(saved);
  gemm_plan::set_policy(saved_policy);
}
