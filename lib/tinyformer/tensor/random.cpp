#include "tinyformer/tensor/random.hpp"

#include <cmath>
#include <locale>
#include <sstream>
#include <stdexcept>

namespace tf {

double Rng::normal() {
  // u1 in (0, 1] so that log(u1) is finite
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::uint64_t Rng::below(std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("Rng::below: n must be positive");
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // largest multiple of n
  std::uint64_t x;
  do x = engine_();
  while (x >= limit);
  return x % n;
}

std::size_t Rng::pick(const double* weights, std::size_t n, double total) {
  const double u = uniform() * total;
  double acc = 0;
  std::size_t chosen = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (weights[i] <= 0) continue;
    chosen = i;
    acc += weights[i];
    if (u < acc) break;
  }
  return chosen;
}

// The state's text in the classic locale, whatever the global one: a C++ program's std::locale::global(de_DE) wrote
// it with thousands separators ("13.373.937.045..."), which the CLI could not read back.
std::string Rng::state() const {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out << engine_;
  return out.str();
}

void Rng::set_state(const std::string& text) {
  std::istringstream in(text);
  in.imbue(std::locale::classic());
  std::mt19937_64 engine;
  in >> engine;
  if (in.fail()) throw std::invalid_argument("Rng::set_state: not a valid generator state");
  engine_ = engine;
}

}  // namespace tf
