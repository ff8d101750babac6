#include "tinyformer/tensor/gemm_plan.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "tinyformer/tensor/blas_core.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/gemm_xsmm.hpp"

namespace tf::gemm_plan {

bool Shape::operator<(const Shape& o) const {
  return std::tie(trans_a, trans_b, m, n, k) < std::tie(o.trans_a, o.trans_b, o.m, o.n, o.k);
}

const char* name(Backend b) { return b == Backend::libxsmm ? "libxsmm" : "openblas"; }

const char* name(Policy p) {
  switch (p) {
    case Policy::measure:
      return "measure";
    case Policy::openblas:
      return "openblas";
    case Policy::libxsmm:
      return "libxsmm";
    default:
      return "auto";
  }
}

Policy parse_policy(const std::string& text, const std::string& where) {
  if (text == "auto") return Policy::automatic;
  if (text == "measure") return Policy::measure;
  if (text == "openblas") return Policy::openblas;
  if (text == "libxsmm") {
    if (!xsmm::built_in())
      throw std::invalid_argument(fmt::format("{}=libxsmm: this build has no libxsmm (configured with "
                                              "-DTINYFORMER_LIBXSMM=OFF); use openblas, auto or measure",
                                              where));
    return Policy::libxsmm;
  }
  throw std::invalid_argument(fmt::format("{}='{}': expected auto, measure, openblas or libxsmm", where, text));
}

Backend rule(const Shape& s, int xsmm_bits, int openblas_bits, bool amd) {
  if (xsmm_bits < 256) return Backend::openblas;
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n), k = static_cast<double>(s.k);
  constexpr double k2p21 = 2097152.0, k2p22 = 4194304.0, k2p26 = 67108864.0, k2p27 = 134217728.0;
  constexpr double op_b_most = 393216.0;  // 1.5 MiB
  // where the widths differ, the wider kernels win every product but those that read a large op(B) from memory
  if (openblas_bits > 0 && openblas_bits != xsmm_bits) {
    const bool op_b_from_memory = !s.trans_a && (amd ? !s.trans_b && n * k > k2p22 : n * k > k2p21);
    if (xsmm_bits == 2 * openblas_bits && op_b_from_memory) return Backend::openblas;
    return xsmm_bits > openblas_bits ? Backend::libxsmm : Backend::openblas;
  }
  const int vector_bits = xsmm_bits;
  if (s.trans_a) return m * n * k <= (vector_bits >= 512 ? k2p27 : k2p26) ? Backend::libxsmm : Backend::openblas;
  if (n > 512 || n * k > op_b_most) return Backend::openblas;  // each block of C's rows reads all of op(B) again
  if (vector_bits >= 512) return Backend::libxsmm;
  return m * n * k <= (s.trans_b ? k2p26 : k2p27) ? Backend::libxsmm : Backend::openblas;
}

Backend rule(const Shape& s) {
  static const int openblas_bits = blas::vector_bits(blas::core_choice().running);
  static const bool amd = blas::cpu_features().amd;
  return rule(s, xsmm::vector_bits(), openblas_bits, amd);
}

namespace {

Backend parse_backend(const std::string& text, const std::string& where) {
  if (text == "openblas") return Backend::openblas;
  if (text == "libxsmm") return Backend::libxsmm;
  throw std::invalid_argument(fmt::format("{}: '{}' is not a library: expected openblas or libxsmm", where, text));
}

// The plan, shared by every thread. Lookups go through a per-thread copy that is dropped when the plan's generation
// changes (set_policy, replay), so that the common case takes no lock.
struct State {
  std::mutex mutex;
  std::map<Shape, Choice> choices;
  std::atomic<unsigned> generation{1};
  Policy policy = Policy::automatic;
  bool policy_read = false;
};

State& state() {
  static State s;
  return s;
}

struct ThreadCache {
  unsigned generation = 0;
  std::map<Shape, Backend> choices;
};

ThreadCache& thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

}  // namespace

Policy policy() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.policy_read) {
    const char* value = std::getenv("TINYFORMER_GEMM");
    const Policy p = value && *value ? parse_policy(value, "TINYFORMER_GEMM") : Policy::automatic;
    const char* plan_file = std::getenv("TINYFORMER_GEMM_PLAN");
    std::map<Shape, Choice> replayed;
    if (plan_file && *plan_file) {
      const std::string where = fmt::format("TINYFORMER_GEMM_PLAN={}", plan_file);
      for (const Choice& c :
           from_text(read_regular_file(plan_file, 1 << 20, "a plan of products (TINYFORMER_GEMM_PLAN)"), where)) {
        if (c.backend == Backend::libxsmm && !xsmm::built_in())
          throw std::invalid_argument(
              fmt::format("{}: the plan chooses libxsmm, and this build has no libxsmm", where));
        replayed[c.shape] = c;
      }
    }
    s.policy = p;
    s.choices = std::move(replayed);
    s.policy_read = true;
    ++s.generation;
  }
  return s.policy;
}

void set_policy(Policy p) {
  if (p == Policy::libxsmm && !xsmm::built_in())
    throw std::invalid_argument("gemm policy libxsmm: this build has no libxsmm");
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.policy = p;
  s.policy_read = true;
  s.choices.clear();
  ++s.generation;
}

std::vector<Choice> plan() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<Choice> out;
  for (const auto& kv : s.choices) out.push_back(kv.second);
  return out;
}

void replay(const std::vector<Choice>& choices) {
  policy();  // the environment is read first, so that it does not later replace this plan
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.choices.clear();
  for (const Choice& c : choices) s.choices[c.shape] = c;
  ++s.generation;
}

bool find(const Shape& shape, Backend& backend) {
  State& s = state();
  ThreadCache& cache = thread_cache();
  const unsigned generation = s.generation.load(std::memory_order_acquire);
  if (cache.generation != generation) {
    cache.choices.clear();
    cache.generation = generation;
  }
  if (auto it = cache.choices.find(shape); it != cache.choices.end()) {
    backend = it->second;
    return true;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.choices.find(shape);
  if (it == s.choices.end()) return false;
  backend = it->second.backend;
  cache.choices[shape] = backend;
  return true;
}

Backend record(const Choice& c) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.choices.emplace(c.shape, c).first->second.backend;  // a shape recorded meanwhile keeps its choice
}

std::string shape_text(const Shape& s) {
  return fmt::format("{}{} {} {} {}", s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k);
}

std::string to_text(const std::vector<Choice>& choices) {
  std::string out;
  for (const Choice& c : choices) out += fmt::format("{} {}\n", shape_text(c.shape), name(c.backend));
  return out;
}

std::vector<Choice> from_text(const std::string& text, const std::string& where) {
  std::vector<Choice> out;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string at = fmt::format("{}, line {}", where, number);
    std::istringstream fields(line);
    std::string ops, library, extra;
    long long m = 0, n = 0, k = 0;
    if (!(fields >> ops >> m >> n >> k >> library) || (fields >> extra) || ops.size() != 2 ||
        (ops[0] != 'N' && ops[0] != 'T') || (ops[1] != 'N' && ops[1] != 'T') || m < 1 || n < 1 || k < 1)
      throw std::invalid_argument(fmt::format(
          "{}: '{}' is not a plan line: expected NN, NT, TN or TT, then m n k (positive integers) and openblas or "
          "libxsmm, e.g. 'TN 64 192 1024 libxsmm'",
          at, line));
    Choice c;
    c.shape = {ops[0] == 'T', ops[1] == 'T', static_cast<std::size_t>(m), static_cast<std::size_t>(n),
               static_cast<std::size_t>(k)};
    c.backend = parse_backend(library, at);
    out.push_back(c);
  }
  return out;
}

std::string summary(const std::vector<Choice>& choices) {
  const auto xsmm =
      std::count_if(choices.begin(), choices.end(), [](const Choice& c) { return c.backend == Backend::libxsmm; });
  return fmt::format("libxsmm {}, openblas {}", xsmm, static_cast<long>(choices.size()) - xsmm);
}

}  // namespace tf::gemm_plan
