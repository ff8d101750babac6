#include "tinyformer/train/bench.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/optim/optimizer.hpp"
#include "tinyformer/tensor/gemm.hpp"

namespace tf::train {

namespace {
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}
}  // namespace

const std::vector<BenchShape>& bench_shapes() {
  static const std::vector<BenchShape> shapes{{"tiny", 64, 32, 64, 4, 2, 32},
                                              {"small", 96, 128, 128, 4, 4, 16},
                                              {"medium", 256, 256, 256, 8, 6, 8}};
  return shapes;
}

const BenchShape& bench_shape(const std::string& name) {
  for (const auto& s : bench_shapes())
    if (s.name == name) return s;
  throw std::invalid_argument(fmt::format("unknown bench shape '{}': expected tiny, small, medium or all", name));
}

BenchResult bench_training(const BenchShape& shape, int threads, std::size_t steps, std::size_t warmup) {
  set_blas_threads(threads);
  nn::GPTConfig cfg;
  cfg.vocab_size = shape.vocab;
  cfg.block_size = shape.context;
  cfg.n_embd = shape.d_model;
  cfg.n_head = shape.heads;
  cfg.n_layer = shape.layers;
  cfg.seed = 1;
  nn::GPT<float> model(cfg);
  optim::AdamW<float> opt(optim::make_param_groups(model.named_parameters(), 0.01), 3e-4);
  Rng rng(2);
  IndexArray x = IndexArray::from_shape({shape.batch, shape.context}), y = x;
  BenchResult r;
  r.shape = shape.name;
  r.threads = threads;
  r.params = model.num_parameters();
  std::vector<double> ms;
  for (std::size_t i = 0; i < warmup + steps; ++i) {
    for (auto& v : x) v = static_cast<Index>(rng.below(shape.vocab));
    for (auto& v : y) v = static_cast<Index>(rng.below(shape.vocab));
    const auto t0 = Clock::now();
    opt.zero_grad();
    const Var<float> loss = model.loss(x, y);
    loss.backward();
    opt.step();
    const auto t1 = Clock::now();
    r.losses.push_back(loss.item());
    if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  const double tokens = static_cast<double>(shape.batch * shape.context);
  r.ms_per_step = median(ms);
  r.tokens_per_s = tokens / (r.ms_per_step / 1e3);
  const double flops = 6.0 * static_cast<double>(r.params) * tokens +
                       12.0 * static_cast<double>(shape.layers * shape.context * shape.d_model) * tokens;
  r.gflops = flops / (r.ms_per_step / 1e3) / 1e9;
  r.peak_rss_mb = peak_rss_mb();
  return r;
}

std::string to_json_line(const BenchResult& r) {
  nlohmann::json j = {{"shape", r.shape},
                      {"threads", r.threads},
                      {"params", r.params},
                      {"ms_per_step", std::round(r.ms_per_step * 1000) / 1000},
                      {"tokens_per_s", std::round(r.tokens_per_s)},
                      {"gflops", std::round(r.gflops * 100) / 100},
                      {"peak_rss_mb", std::round(r.peak_rss_mb * 10) / 10}};
  return j.dump();
}

double measure_sgemm_gflops(int threads) {
  set_blas_threads(threads);
  struct P {
    std::size_t m, k, n;
  };
  std::vector<double> rates;
  for (P p : {P{4096, 256, 768}, P{1024, 1024, 1024}}) {
    std::vector<float> a(p.m * p.k, 0.5f), b(p.k * p.n, 0.25f), c(p.m * p.n);
    std::vector<double> secs;
    for (int rep = 0; rep < 9; ++rep) {
      const auto t0 = Clock::now();
      gemm<float>(false, false, {p.m, p.n, p.k}, 1.f, a.data(), b.data(), 0.f, c.data());
      secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    rates.push_back(2.0 * p.m * p.n * p.k / median(secs) / 1e9);
  }
  return median(rates);
}

}  // namespace tf::train
