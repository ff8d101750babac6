// Xavier/Glorot initialisation: the empirical bounds and variance against the formulas
//   uniform limit a = sqrt(6/(fan_in+fan_out)), variance a^2/3 = 2/(fan_in+fan_out);  normal std
//   sqrt(2/(fan_in+fan_out))
#include <cmath>
#include <numeric>

#include <catch2/catch.hpp>

#include <xtensor/xreducer.hpp>
#include <xtensor/xsort.hpp>
#include "support/configs.hpp"

#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/nn/init.hpp"

using namespace tf;
using namespace tf::nn;

namespace {
// The mean of every element. (Not xt::mean: it calls sum<T>(e) unqualified, and with tf's ops in scope argument-
// dependent lookup tries tf::sum<void>, which names Var<void>.)
double mean(const Array<double>& w) { return std::accumulate(w.begin(), w.end(), 0.0) / static_cast<double>(w.size()); }

double variance(const Array<double>& w) {
  const double m = mean(w);
  double s = 0;
  for (double v : w) s += (v - m) * (v - m);
  return s / static_cast<double>(w.size());
}
}  // namespace

TEST_CASE("init: Xavier uniform stays within +-sqrt(6/(fan_in+fan_out)) with variance 2/(fan_in+fan_out)", "[init]") {
  Rng rng(1);
  const std::size_t fan_in = 256, fan_out = 512;  // 131072 samples
  const Array<double> w = xavier_uniform<double>({fan_out, fan_in}, fan_in, fan_out, rng);
  const double limit = std::sqrt(6.0 / (fan_in + fan_out));
  CHECK(xt::amax(w)() <= limit);
  CHECK(xt::amin(w)() >= -limit);
  CHECK(xt::amax(w)() > 0.999 * limit);  // the bounds are reached, not a narrower range
  CHECK(xt::amin(w)() < -0.999 * limit);
  CHECK(std::abs(mean(w)) < 0.01 * limit);
  // standard error of the variance estimate is ~0.25% here; 2% is far outside it
  CHECK(variance(w) == Approx(2.0 / (fan_in + fan_out)).epsilon(0.02));
}

TEST_CASE("init: Xavier normal has standard deviation sqrt(2/(fan_in+fan_out))", "[init]") {
  Rng rng(2);
  const std::size_t fan_in = 300, fan_out = 200;
  const Array<double> w = xavier_normal<double>({fan_out, fan_in}, fan_in, fan_out, rng);
  CHECK(std::sqrt(variance(w)) == Approx(std::sqrt(2.0 / (fan_in + fan_out))).epsilon(0.02));
  CHECK(std::abs(mean(w)) < 0.002);
  // Normal, not uniform: about 4.6% of draws lie beyond 2 standard deviations.
  const double sd = std::sqrt(2.0 / (fan_in + fan_out));
  std::size_t beyond = 0;
  for (double v : w) beyond += std::abs(v) > 2 * sd;
  CHECK(static_cast<double>(beyond) / w.size() == Approx(0.0455).margin(0.005));
}

TEST_CASE("init: seed notebook 003's Xavier limit for a (4, 2) weight is 1", "[init]") {
  // xavier_uniform_init(4, 2): limit = sqrt(6 / (4 + 2)) = 1; the printed W_Q entries lie inside it
  Rng rng(3);
  const Array<double> w = xavier_uniform<double>({4, 2}, 4, 2, rng);
  CHECK(xt::amax(xt::abs(w))() <= 1.0);
}

TEST_CASE("init: GPT defaults are Xavier-uniform Linear weights, zero biases, unit LayerNorm, N(0,0.02) embeddings",
          "[init]") {
  GPT<double> model(test::model(64, 64, 64, 4, 1), 1337);
  for (auto& [name, p] : model.named_parameters()) {
    INFO(name);
    const Array<double>& v = p.value();
    if (name.find(".bias") != std::string::npos) {
      CHECK(xt::amax(xt::abs(v))() == 0.0);
    } else if (name.find("ln_") != std::string::npos) {
      CHECK(xt::amin(v)() == 1.0);
      CHECK(xt::amax(v)() == 1.0);
    } else if (name.find("wte") != std::string::npos || name.find("wpe") != std::string::npos) {
      CHECK(std::sqrt(variance(v)) == Approx(0.02).epsilon(0.05));
    } else {  // Linear weight [out, in]
      const double limit = std::sqrt(6.0 / (v.shape()[0] + v.shape()[1]));
      CHECK(xt::amax(xt::abs(v))() <= limit);
      CHECK(xt::amax(xt::abs(v))() > 0.95 * limit);
    }
  }
}
