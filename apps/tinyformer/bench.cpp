#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xsimd/xsimd.hpp>
#include <xtensor/xview.hpp>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/dist/gradients.hpp"
#include "tinyformer/infer/sample.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/ops/kernels/dispatch.hpp"
#include "tinyformer/optim/adam.hpp"
#include "tinyformer/optim/param_groups.hpp"
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/gemm.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"
#include "tinyformer/tensor/gemm_xsmm.hpp"
#include "tinyformer/tensor/huge_pages.hpp"
#include "tinyformer/tensor/median.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf::bench {

namespace {
using Clock = std::chrono::steady_clock;

// CPU time of this process (all its threads) so far, in ms: on a shared machine it leaves out the time other
// processes held the cores, which wall-clock time per step includes.
double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// VmHWM of /proc/self/status, in MiB. (getrusage's ru_maxrss would carry over the peak of a parent
// process across exec, e.g. a Python benchmark driver's.)
double peak_rss_mb() {
  std::istringstream status(tf::read_system_file("/proc/self/status"));
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // "VmHWM:   12345 kB"
  return 0.0;
}
}  // namespace

const std::vector<BenchShape>& bench_shapes() {
  static const std::vector<BenchShape> shapes{{"tiny", 64, 32, 64, 4, 2, 32},
                                              {"small", 96, 128, 128, 4, 4, 16},
                                              {"medium", 256, 256, 256, 8, 6, 8},
                                              {"large", 512, 1024, 256, 8, 4, 2}};
  return shapes;
}

const std::vector<BenchShape>& scaling_shapes() {
  static const std::vector<BenchShape> shapes = [] {
    std::vector<BenchShape> v;
    for (std::size_t T : {64, 128, 256, 512, 1024}) v.push_back({fmt::format("T{}", T), 512, T, 256, 8, 4, 2048 / T});
    return v;
  }();
  return shapes;
}

const BenchShape& floor_shape() {
  static const BenchShape shape{"floor", 4, 2, 8, 4, 2, 1};
  return shape;
}

const BenchShape& bench_shape(const std::string& name) {
  if (name == floor_shape().name) return floor_shape();
  for (const auto* list : {&bench_shapes(), &scaling_shapes()})
    for (const auto& s : *list)
      if (s.name == name) return s;
  throw std::invalid_argument(
      fmt::format("unknown bench shape '{}': expected tiny, small, medium, large, all, T64, T128, T256, T512, T1024 "
                  "(the shapes of --scaling) or floor",
                  name));
}

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

config::ModelConfig model_config(const BenchShape& shape) {
  config::ModelConfig cfg;
  cfg.vocab_size = shape.vocab;
  cfg.context = shape.context;
  cfg.d_model = shape.d_model;
  cfg.n_head = shape.heads;
  cfg.n_layer = shape.layers;
  return cfg;
}

BenchResult bench_training(const BenchShape& shape, int threads, std::size_t steps, std::size_t warmup,
                           bool with_profile) {
  const auto N = static_cast<std::size_t>(dist::size());
  if (shape.batch % N != 0)  // the same on every process: they stop together
    throw dist::CollectiveError(fmt::format("bench --shape {}: its batch of {} sequences is split between the {} "
                                            "processes; use a number of processes that divides {}",
                                            shape.name, shape.batch, N, shape.batch));
  const std::size_t B = shape.batch / N, first = B * static_cast<std::size_t>(dist::rank());
  set_num_threads(threads);
  nn::GPT<float> model(model_config(shape), 1);
  optim::AdamW<float> opt(optim::make_param_groups(model.named_parameters(), 0.01), 3e-4);
  dist::GradientAllReduce allreduce;
  Rng rng(2);
  IndexArray x = IndexArray::from_shape({shape.batch, shape.context}), y = x;
  BenchResult r;
  r.shape = shape.name;
  r.context = shape.context;
  r.batch = shape.batch;
  r.threads = threads;
  r.processes = static_cast<int>(N);
  r.params = model.num_parameters();
  std::vector<double> ms, cpu_ms, allreduce_ms;
  profile::Profiler profiler;
  for (std::size_t i = 0; i < warmup + steps; ++i) {
    for (auto& v : x) v = static_cast<Index>(rng.below(shape.vocab));  // the same global batch on every process
    for (auto& v : y) v = static_cast<Index>(rng.below(shape.vocab));
    const IndexArray xs = xt::view(x, xt::range(first, first + B), xt::all());  // this process's rows
    const IndexArray ys = xt::view(y, xt::range(first, first + B), xt::all());
    std::optional<profile::Recording> recording;  // the timed steps, with --profile
    if (with_profile && i >= warmup) recording.emplace(profiler);
    auto add_phase = [&](const char* what, double phase_ms) {
      if (recording) profiler.add_phase(what, phase_ms);
    };
    const auto t0 = Clock::now();
    const double cpu0 = process_cpu_ms();
    opt.zero_grad();
    profiler.begin_forward();
    const Var<float> loss = model.loss(xs, ys);
    loss.backward();
    if (N > 1) {  // the all-reduce starts when the slowest process arrives: that wait is timed apart
      const auto t_wait = Clock::now();
      dist::barrier();
      add_phase("waiting for the other processes", ms_since(t_wait));
    }
    const double reduce_ms = allreduce(model.parameters(), 1.0f / static_cast<float>(N));
    if (N > 1) add_phase("gradient all-reduce", reduce_ms);
    const auto t_step = Clock::now();
    opt.step();
    add_phase("optimizer step (AdamW)", ms_since(t_step));
    if (i >= warmup) ms.push_back(ms_since(t0));
    if (i >= warmup) cpu_ms.push_back(process_cpu_ms() - cpu0);
    if (i >= warmup) allreduce_ms.push_back(reduce_ms);
    double l = loss.item();
    dist::allreduce_sum(&l, 1);  // the global batch's loss (the mean of the processes' means)
    r.losses.push_back(l / static_cast<double>(N));
  }
  if (with_profile) r.profile = profiler.report();
  const double tokens = static_cast<double>(shape.batch * shape.context);
  r.ms_per_step = median(ms);
  r.cpu_ms_per_step = median(cpu_ms);
  r.tokens_per_s = tokens / (r.ms_per_step / 1e3);
  r.allreduce_ms = median(allreduce_ms);
  r.allreduce_bytes = N > 1 ? allreduce.bytes() : 0;
  const double flops = 6.0 * static_cast<double>(r.params) * tokens +
                       12.0 * static_cast<double>(shape.layers * shape.context * shape.d_model) * tokens;
  r.gflops = flops / (r.ms_per_step / 1e3) / 1e9;
  r.peak_rss_mb = peak_rss_mb();
  r.gemm_policy = gemm_plan::name(gemm_plan::policy());
  for (const gemm_plan::Choice& c : gemm_plan::plan()) {
    r.gemm_plan.push_back(gemm_plan::shape_text(c.shape) + " " + gemm_plan::name(c.backend));
    r.gemm_measured_us.emplace_back(c.openblas_us, c.libxsmm_us);
  }
  return r;
}

std::string to_json_line(const BenchResult& r) {
  nlohmann::json j = {{"shape", r.shape},
                      {"context", r.context},
                      {"batch", r.batch},
                      {"threads", r.threads},
                      {"processes", r.processes},
                      {"params", r.params},
                      {"ms_per_step", std::round(r.ms_per_step * 1000) / 1000},
                      {"cpu_ms_per_step", std::round(r.cpu_ms_per_step * 1000) / 1000},
                      {"tokens_per_s", std::round(r.tokens_per_s)},
                      {"gflops", std::round(r.gflops * 100) / 100},
                      {"peak_rss_mb", std::round(r.peak_rss_mb * 10) / 10},
                      {"gemm", r.gemm_policy},
                      {"gemm_plan", r.gemm_plan},
                      {"kernels", kernels::kernel_isa()},  // native, or the x86-64 level of a portable build
                      // the last step's loss, exactly (hex float), to compare runs bit for bit
                      {"final_loss", r.losses.empty() ? std::string() : fmt::format("{:a}", r.losses.back())}};
  if (r.gemm_policy == "measure") {  // per line of gemm_plan, what the choice measured (0: replayed, not measured)
    nlohmann::json measured = nlohmann::json::array();
    for (const auto& [openblas_us, libxsmm_us] : r.gemm_measured_us)
      measured.push_back(
          {{"openblas", std::round(openblas_us * 10) / 10}, {"libxsmm", std::round(libxsmm_us * 10) / 10}});
    j["gemm_measured_us"] = measured;
  }
  if (r.processes > 1) {
    j["allreduce_ms"] = std::round(r.allreduce_ms * 1000) / 1000;
    j["allreduce_bytes"] = r.allreduce_bytes;
  }
  return j.dump();
}

std::string profile_table(const BenchResult& r, std::size_t steps) {
  const double n = static_cast<double>(steps);
  double total = 0;
  for (const auto& t : r.profile) total += t.forward_ms + t.backward_ms;
  std::string out = fmt::format(
      "profile of {} ({} threads{}), per step: {:.3f} ms timed by the hooks, {:.3f} ms median "
      "step\n",
      r.shape, r.threads, r.processes > 1 ? fmt::format(" x {} processes, rank 0's times", r.processes) : "", total / n,
      r.ms_per_step);
  out += fmt::format("{:<26} {:>7} {:>11} {:>11} {:>7}\n", "op", "calls", "forward ms", "backward ms", "share");
  for (const auto& t : r.profile)
    out += fmt::format("{:<26} {:>7.0f} {:>11.3f} {:>11.3f} {:>6.1f}%\n", t.name, static_cast<double>(t.calls) / n,
                       t.forward_ms / n, t.backward_ms / n, 100.0 * (t.forward_ms + t.backward_ms) / total);
  return out;
}

SampleBenchResult bench_sampling(const BenchShape& shape, int threads, std::size_t new_tokens) {
  set_num_threads(threads);
  nn::GPT<float> model(model_config(shape), 1);
  SampleBenchResult r{shape.name, threads, new_tokens};
  std::vector<Index> tokens[2];
  // Untimed: the first products allocate BLAS's buffers and fault in fresh pages. The second round, 8 tokens with
  // and without the cache, also gives a time estimate (a lower bound: without the cache a token costs more as the
  // sequence grows to the context) that refuses a --new-tokens this shape would take more than an hour to sample.
  double seconds_per_token = 0;
  for (int round = 0; round < 2; ++round) {
    seconds_per_token = 0;
    for (const bool cached : {true, false}) {
      infer::SampleOptions warmup;
      warmup.new_tokens = 8;
      warmup.use_cache = cached;
      Rng rng(3);
      const auto t0 = Clock::now();
      infer::generate(model, {0}, warmup, rng);
      seconds_per_token += std::chrono::duration<double>(Clock::now() - t0).count() / 8;
    }
  }
  constexpr double kMaxSeconds = 3600;
  if (seconds_per_token * static_cast<double>(new_tokens) > kMaxSeconds)
    throw std::runtime_error(fmt::format(
        "--new-tokens {}: shape {} would take at least {:.0f} s to sample with and without the cache ({:.2f} ms a "
        "token on this machine); at most {} tokens fit in an hour",
        new_tokens, shape.name, seconds_per_token * static_cast<double>(new_tokens), 1e3 * seconds_per_token,
        static_cast<std::size_t>(kMaxSeconds / seconds_per_token)));
  for (int cached = 1; cached >= 0; --cached) {
    infer::SampleOptions options;
    options.new_tokens = new_tokens;
    options.use_cache = cached == 1;
    Rng rng(3);
    const auto t0 = Clock::now();
    tokens[cached] = infer::generate(model, {0}, options, rng);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    (cached ? r.cached_tokens_per_s : r.uncached_tokens_per_s) = static_cast<double>(new_tokens) / secs;
  }
  r.identical = tokens[0] == tokens[1];
  return r;
}

std::string to_json_line(const SampleBenchResult& r) {
  nlohmann::json j = {{"shape", r.shape},
                      {"threads", r.threads},
                      {"new_tokens", r.new_tokens},
                      {"cached_tokens_per_s", std::round(r.cached_tokens_per_s * 10) / 10},
                      {"uncached_tokens_per_s", std::round(r.uncached_tokens_per_s * 10) / 10},
                      {"speedup", std::round(r.cached_tokens_per_s / r.uncached_tokens_per_s * 100) / 100},
                      {"identical_tokens", r.identical}};
  return j.dump();
}

namespace {

// A buffer for the bandwidth kernels: huge pages (as the decoder's weights), every page written.
class BandwidthBuffer {
 public:
  explicit BandwidthBuffer(std::size_t bytes) : buffer_(bytes), n_(std::max<std::size_t>(bytes / sizeof(double), 1)) {
    for (std::size_t i = 0; i < n_; ++i) data()[i] = static_cast<double>(i % 1024) * 0.5;
  }
  double* data() { return reinterpret_cast<double*>(buffer_.data()); }
  std::size_t size() const { return n_; }

 private:
  HugePageBuffer buffer_;
  std::size_t n_;
};

// Each thread its contiguous part of [0, n): as many pieces as threads.
template <class Body>
void split_over_threads(std::size_t n, const Body& body) {
  const auto pieces = static_cast<std::size_t>(num_threads());
  parallel_for(pieces, 1, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p) body(n * p / pieces, n * (p + 1) / pieces);
  });
}

// The median GB/s of `repeats` passes of kernel(), each moving `bytes`.
template <class Kernel>
double median_gbps(std::size_t bytes, int repeats, const Kernel& kernel) {
  kernel();  // untimed: the pages and the caches as the timed passes find them
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    kernel();
    rates.push_back(static_cast<double>(bytes) / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9);
  }
  return median(rates);
}

// sum of a[begin, end) in four SIMD chains, so that the adds keep up with any memory (the result is kept so that the
// loads are not optimised away)
double read_sum(const double* a, std::size_t begin, std::size_t end) {
  using B = xsimd::batch<double>;
  constexpr std::size_t W = B::size;
  B s0(0.0), s1(0.0), s2(0.0), s3(0.0);
  std::size_t i = begin;
  for (; i + 4 * W <= end; i += 4 * W) {
    s0 += B::load_unaligned(a + i);
    s1 += B::load_unaligned(a + i + W);
    s2 += B::load_unaligned(a + i + 2 * W);
    s3 += B::load_unaligned(a + i + 3 * W);
  }
  double total = xsimd::hadd(s0 + s1 + s2 + s3);
  for (; i < end; ++i) total += a[i];
  return total;
}

volatile double g_bandwidth_sink = 0;

}  // namespace

double read_bandwidth_gbps(std::size_t bytes, int threads, int repeats) {
  set_num_threads(threads);
  BandwidthBuffer a(bytes);
  return median_gbps(a.size() * sizeof(double), repeats, [&] {
    split_over_threads(a.size(), [&](std::size_t b, std::size_t e) { g_bandwidth_sink = read_sum(a.data(), b, e); });
  });
}

std::vector<BandwidthResult> measure_bandwidth(int threads, std::size_t array_bytes, int repeats) {
  set_num_threads(threads);
  BandwidthBuffer a(array_bytes), b(array_bytes), c(array_bytes);
  const std::size_t n = a.size(), bytes = n * sizeof(double);
  std::vector<BandwidthResult> out;
  auto add = [&](const char* kernel, double gbps) { out.push_back({kernel, threads, bytes, gbps}); };
  add("read", median_gbps(bytes, repeats, [&] {
        split_over_threads(n, [&](std::size_t i0, std::size_t i1) { g_bandwidth_sink = read_sum(a.data(), i0, i1); });
      }));
  add("copy", median_gbps(2 * bytes, repeats, [&] {
        split_over_threads(n, [&](std::size_t i0, std::size_t i1) {
          double* cc = c.data();
          const double* aa = a.data();
          for (std::size_t i = i0; i < i1; ++i) cc[i] = aa[i];
        });
      }));
  add("triad", median_gbps(3 * bytes, repeats, [&] {
        split_over_threads(n, [&](std::size_t i0, std::size_t i1) {
          double* aa = a.data();
          const double *bb = b.data(), *cc = c.data();
          for (std::size_t i = i0; i < i1; ++i) aa[i] = bb[i] + 3.0 * cc[i];
        });
      }));
  return out;
}

std::string to_json_line(const BandwidthResult& r) {
  const nlohmann::json j = {{"bandwidth", r.kernel},
                            {"threads", r.threads},
                            {"array_mb", std::round(static_cast<double>(r.array_bytes) / 1e5) / 10},
                            {"gb_per_s", std::round(r.gb_per_s * 10) / 10}};
  return j.dump();
}

CheckpointSampleResult bench_checkpoint_sampling(const std::string& checkpoint, const std::string& prompt,
                                                 std::size_t new_tokens, int threads, infer::DecoderWeights weights) {
  set_num_threads(threads);
  LoadedGPT loaded = runs::open_checkpoint(checkpoint);
  const std::vector<Index> ids = runs::encode_prompt(loaded, prompt, "--prompt").ids;
  infer::DecoderOptions decoder_options;
  decoder_options.weights = weights;
  infer::Decoder decoder(*loaded.model, decoder_options);
  infer::SampleOptions options;
  options.temperature = 0;
  Rng rng(1);
  {  // untimed: the first products fault in the buffers' pages
    infer::SampleOptions warmup = options;
    warmup.new_tokens = 8;
    infer::generate(decoder, {ids.front()}, warmup, rng);
  }
  options.new_tokens = new_tokens;
  CheckpointSampleResult r;
  r.checkpoint = checkpoint;
  r.weights = infer::name(weights);
  r.threads = threads;
  r.prompt_tokens = ids.size();
  r.weight_bytes_per_token = decoder.weight_bytes_per_token();
  // the read bandwidth of as many bytes right before and right after: the larger median (the load of a shared machine
  // comes and goes)
  r.read_gb_per_s = read_bandwidth_gbps(r.weight_bytes_per_token, threads, 9);
  const auto t0 = Clock::now();
  const double cpu0 = process_cpu_ms();
  r.tokens = infer::generate(decoder, ids, options, rng);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.cpu_seconds = (process_cpu_ms() - cpu0) / 1e3;
  r.read_gb_per_s = std::max(r.read_gb_per_s, read_bandwidth_gbps(r.weight_bytes_per_token, threads, 9));
  r.new_tokens = r.tokens.size() - ids.size();
  r.tokens_per_s = static_cast<double>(r.new_tokens) / r.seconds;
  r.weight_gb_per_s = static_cast<double>(r.weight_bytes_per_token) * r.tokens_per_s / 1e9;
  return r;
}

std::string to_json_line(const CheckpointSampleResult& r) {
  const nlohmann::json j = {
      {"sample", r.checkpoint},
      {"weights", r.weights},
      {"threads", r.threads},
      {"prompt_tokens", r.prompt_tokens},
      {"new_tokens", r.new_tokens},
      {"tokens_per_s", std::round(r.tokens_per_s * 10) / 10},
      {"cpu_ms_per_token", std::round(r.cpu_seconds * 1e6 / static_cast<double>(r.new_tokens)) / 1e3},
      {"weight_mb_per_token", std::round(static_cast<double>(r.weight_bytes_per_token) / 1e4) / 100},
      {"weight_gb_per_s", std::round(r.weight_gb_per_s * 10) / 10},
      {"read_gb_per_s", std::round(r.read_gb_per_s * 10) / 10},
      {"bandwidth_fraction", std::round(r.weight_gb_per_s / r.read_gb_per_s * 1000) / 1000},
      {"kernels", kernels::kernel_isa()}};
  return j.dump();
}

double measure_sgemm_gflops(int threads, gemm_plan::Policy policy) {
  set_num_threads(threads);
  gemm_plan::set_policy(policy);  // a fresh plan: under measure, these shapes are measured again
  struct P {
    bool trans_a;
    std::size_t m, n, k;
  };
  const auto n_threads = static_cast<std::size_t>(threads);
  double best = 0;
  // x [4096,256] W [256,768] (A B), dW [768,256] = dY^T [768,4096] X [4096,256] (A^T B), and 1024^3 (A B)
  for (P p : {P{false, 4096, 768, 256}, P{true, 768, 256, 4096}, P{false, 1024, 1024, 1024}}) {
    std::vector<std::vector<float>> a(n_threads, std::vector<float>(p.m * p.k, 0.5f)),
        b(n_threads, std::vector<float>(p.k * p.n, 0.25f)), c(n_threads, std::vector<float>(p.m * p.n));
    // every thread one whole product (one library call) on its own arrays, all at once
    const auto products = [&] {
      parallel_for(n_threads, 1, [&](std::size_t t0, std::size_t t1) {
        for (std::size_t t = t0; t < t1; ++t)
          gemm_whole<float>(p.trans_a, false, {p.m, p.n, p.k}, 1.f, a[t].data(), b[t].data(), 0.f, c[t].data());
      });
    };
    products();  // untimed: the choice of library
    std::vector<double> secs;
    for (int rep = 0; rep < 9; ++rep) {
      const auto t0 = Clock::now();
      products();
      secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    best = std::max(best, 2.0 * static_cast<double>(p.m * p.n * p.k * n_threads) / median(secs) / 1e9);
  }
  return best;
}

std::vector<std::string> check_gemm_plan(const std::string& shape) {
  std::vector<std::string> lines;
  for (const gemm_plan::Choice& c : gemm_plan::plan()) {
    const GemmCheck check = check_gemm_choice(c.shape, c.backend);
    nlohmann::json j = {{"gemm_check", shape},
                        {"product", gemm_plan::shape_text(c.shape)},
                        {"chosen", gemm_plan::name(c.backend)},
                        {"openblas_us", std::round(check.times.openblas_us * 10) / 10},
                        {"libxsmm_us", std::round(check.times.libxsmm_us * 10) / 10},
                        {"pairs", check.times.pairs},
                        {"choice_speed", std::round(check.choice_speed * 1000) / 1000}};
    lines.push_back(j.dump());
  }
  return lines;
}

namespace {
// `choices` with each shape on `against`'s library ("openblas", "libxsmm", or "other": the one not chosen)
std::vector<gemm_plan::Choice> other_plan(std::vector<gemm_plan::Choice> choices, const std::string& against) {
  for (gemm_plan::Choice& c : choices) {
    const bool to_libxsmm = against == "other" ? c.backend == gemm_plan::Backend::openblas : against == "libxsmm";
    c.backend = to_libxsmm ? gemm_plan::Backend::libxsmm : gemm_plan::Backend::openblas;
  }
  return choices;
}

// v[i] for the fraction q of the sorted values
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[static_cast<std::size_t>(std::lround(q * static_cast<double>(v.size() - 1)))];
}
}  // namespace

std::string compare_gemm_plans(const BenchShape& shape, int threads, std::size_t pairs, std::size_t warmup,
                               const std::string& against) {
  if (against != "openblas" && !xsmm::built_in())
    throw std::invalid_argument(fmt::format("bench --compare-gemm {}: this build has no libxsmm", against));
  const gemm_plan::Policy policy = gemm_plan::policy();
  const std::vector<gemm_plan::Choice> chosen = gemm_plan::plan(), other = other_plan(chosen, against);
  std::string in_force[2];  // each plan's libraries, read after one of its steps
  auto use = [&](int which) {
    gemm_plan::set_policy(gemm_plan::Policy::automatic);  // a shape missing from the plan would take auto's rule
    gemm_plan::replay(which == 0 ? chosen : other);
  };
  set_num_threads(threads);
  nn::GPT<float> model(model_config(shape), 1);
  optim::AdamW<float> opt(optim::make_param_groups(model.named_parameters(), 0.01), 3e-4);
  Rng rng(2);
  IndexArray x = IndexArray::from_shape({shape.batch, shape.context}), y = x;
  auto step_ms = [&](int which) {
    use(which);
    for (auto& v : x) v = static_cast<Index>(rng.below(shape.vocab));
    for (auto& v : y) v = static_cast<Index>(rng.below(shape.vocab));
    const auto t0 = Clock::now();
    opt.zero_grad();
    model.loss(x, y).backward();
    opt.step();
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    in_force[which] = gemm_plan::summary(gemm_plan::plan());
    return ms;
  };
  std::vector<double> ms[2], ratios;
  for (std::size_t i = 0; i < warmup + pairs; ++i) {
    const int first = static_cast<int>(i % 2);  // ABBA: each plan goes first in every other pair
    double t[2];
    t[first] = step_ms(first);
    t[1 - first] = step_ms(1 - first);
    if (i < warmup) continue;
    ms[0].push_back(t[0]);
    ms[1].push_back(t[1]);
    ratios.push_back(t[1] / t[0]);
  }
  gemm_plan::set_policy(policy);  // back to the plan of the timed steps, for the shapes that follow
  gemm_plan::replay(chosen);
  auto round3 = [](double v) { return std::round(v * 1000) / 1000; };
  const nlohmann::json j = {{"gemm_compare", shape.name},
                            {"threads", threads},
                            {"against", against},
                            {"pairs", pairs},
                            {"chosen_ms", round3(median(ms[0]))},
                            {"against_ms", round3(median(ms[1]))},
                            {"ratio", round3(median(ratios))},
                            {"ratio_q1", round3(quantile(ratios, 0.25))},
                            {"ratio_q3", round3(quantile(ratios, 0.75))},
                            {"chosen_plan", in_force[0]},
                            {"against_plan", in_force[1]}};
  return j.dump();
}

}  // namespace tf::bench
