// gemm_choice: for each product shape, the library that TINYFORMER_GEMM=auto's rule takes (tensor/gemm_plan.hpp) and
// both libraries timed again, one thread, in alternating pairs (tensor/gemm.hpp, check_gemm_choice): one JSON line per
// shape with the fields of `tinyformer bench --check-gemm`. For product shapes that no bench shape has, such as GPT-2
// 124M's, given as OPS M N K (OPS: NN, TN or NT, as a plan line writes them). `--config FILE --threads N [--set
// key=value ...]` instead prints the product shapes of one training step of the config's model, one OPS M N K a line,
// and times nothing: a GPT of its model.*, a batch of training.batch_size x model.context random tokens, forward and
// backward at N threads, each product cut into pieces as tensor/gemm.cpp cuts it at N threads.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/config/config.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/tensor/gemm.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"
#include "tinyformer/tensor/parallel.hpp"
#include "tinyformer/tensor/random.hpp"
#include "tools/test_tools.hpp"

namespace tf::test_tools {

namespace {

// The product shapes of one training step of `path`'s model at `threads` threads, one "OPS M N K" a line.
std::string step_products(const std::string& path, int threads, const std::vector<std::string>& overrides) {
  const config::RunConfig cfg = config::load_config(path, overrides);
  const std::size_t B = cfg.training.batch_size, T = *cfg.model.context, V = *cfg.model.vocab_size;
  set_num_threads(threads);
  gemm_plan::set_policy(gemm_plan::Policy::automatic);  // a fresh plan
  nn::GPT<float> model(cfg.model, 1);
  Rng rng(2);
  IndexArray x = IndexArray::from_shape({B, T}), y = x;
  for (auto& v : x) v = static_cast<Index>(rng.below(V));
  for (auto& v : y) v = static_cast<Index>(rng.below(V));
  model.loss(x, y).backward();
  std::string lines;
  for (const gemm_plan::Choice& c : gemm_plan::plan()) lines += gemm_plan::shape_text(c.shape) + "\n";
  return lines;
}

}  // namespace

int gemm_choice(int argc, char** argv) {
  const bool from_config = argc >= 5 && std::strcmp(argv[1], "--config") == 0 && std::strcmp(argv[3], "--threads") == 0;
  if (from_config ? argc % 2 != 1 : argc < 5 || (argc - 1) % 4 != 0) {
    std::fprintf(stderr,
                 "usage: %s OPS M N K [OPS M N K ...]   (OPS: NN, TN or NT)\n"
                 "       %s --config FILE --threads N [--set key=value ...]\n",
                 argv[0], argv[0]);
    return 2;
  }
  try {
    if (from_config) {
      std::vector<std::string> overrides;
      for (int i = 5; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--set") != 0) throw std::invalid_argument(fmt::format("unknown option {}", argv[i]));
        overrides.emplace_back(argv[i + 1]);
      }
      std::printf("%s", step_products(argv[2], std::stoi(argv[4]), overrides).c_str());
      return 0;
    }
    std::string lines;
    for (int i = 1; i < argc; i += 4)
      lines += fmt::format("{} {} {} {} openblas\n", argv[i], argv[i + 1], argv[i + 2], argv[i + 3]);
    set_num_threads(1);
    for (const gemm_plan::Choice& c : gemm_plan::from_text(lines, "gemm_choice's product shapes")) {
      const gemm_plan::Backend chosen = gemm_plan::rule(c.shape);
      const GemmCheck check = check_gemm_choice(c.shape, chosen);
      const nlohmann::json j = {{"product", gemm_plan::shape_text(c.shape)},
                                {"chosen", gemm_plan::name(chosen)},
                                {"openblas_us", std::round(check.times.openblas_us * 10) / 10},
                                {"libxsmm_us", std::round(check.times.libxsmm_us * 10) / 10},
                                {"pairs", check.times.pairs},
                                {"choice_speed", std::round(check.choice_speed * 1000) / 1000}};
      std::printf("%s\n", j.dump().c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_choice: %s\n", e.what());
    return 1;
  }
}

}  // namespace tf::test_tools
