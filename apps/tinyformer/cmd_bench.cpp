// tinyformer bench [--shape tiny|small|medium|large|all] [--threads N] [--steps N] [--warmup N] [--profile] [--gemm]
//                  [--scaling] [--check-gemm] [--compare-gemm openblas|libxsmm|other]
// Under mpirun -np N the processes train the shape data-parallel (bench.hpp); rank 0 prints.
// --scaling runs the shapes T64 ... T1024 (bench::scaling_shapes), each in a fresh process (this binary again with
// --shape T<n>) so that each line's peak RSS is that T's alone; under a launcher (mpirun, srun) they run one after the
// other in the same processes, and peak_rss_mb is then the peak so far.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench.hpp"
#include "commands.hpp"
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/tensor/blas_core.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"
#include "tinyformer/tensor/gemm_xsmm.hpp"
#include "tinyformer/tensor/parallel.hpp"

extern char** environ;

namespace tf::app {

namespace {

// Runs this binary with `args` and the same stdout and stderr, waits for it; throws when it fails.
void run_self(const std::vector<std::string>& args) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<char*> argv;
  std::string self = "/proc/self/exe";
  argv.push_back(self.data());
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("bench --scaling: cannot start a fresh process of tinyformer");
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(fmt::format("bench --scaling: the run of {} failed", args.at(2)));
}

// A launcher (mpirun, srun) started this process: a child would inherit its job's identity, so --scaling then runs
// in this process.
bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

// The options of tinyformer bench.
struct BenchOpts {
  std::string shape = "all";
  int threads = 0;  // auto: the physical cores
  std::size_t steps = 20, warmup = 3;
  bool gemm = false;
  bool check_gemm = false;
  std::string compare_gemm;  // empty: no comparison
  bool profile = false;
  bool sample = false;
  bool scaling = false;
  std::size_t new_tokens = 256;
  std::string checkpoint;  // --sample of a trained model
  std::string prompt = "Once upon a time";
  bool int8 = false;
  bool bandwidth = false;
  std::size_t array_mb = 128;
};

// --bandwidth: the STREAM-like kernels at 1 and 2 threads (or --threads alone).
void print_bandwidth(const BenchOpts& o, bool threads_given) {
  std::vector<int> counts{1, 2};
  if (threads_given) counts = {o.threads};
  for (int t : counts)
    for (const auto& r : bench::measure_bandwidth(t, o.array_mb << 20, 9)) fmt::print("{}\n", bench::to_json_line(r));
}

// --gemm: each library alone, then the choice per shape (auto's rule, and measured): the best line is the machine's
// SGEMM peak. Each line names the kernels its libraries run: OpenBLAS's core type (and who chose it,
// tensor/blas_core.hpp) and libxsmm's target instruction set.
void print_sgemm_peaks() {
  std::vector<gemm_plan::Policy> policies{gemm_plan::Policy::openblas};
  if (xsmm::built_in()) policies.push_back(gemm_plan::Policy::libxsmm);
  policies.push_back(gemm_plan::Policy::automatic);
  if (xsmm::built_in()) policies.push_back(gemm_plan::Policy::measure);
  const blas::CoreChoice& core = blas::core_choice();
  for (int t : {1, 2})
    for (gemm_plan::Policy p : policies) {
      const double gflops = bench::measure_sgemm_gflops(t, p);
      if (!dist::is_root()) continue;
      nlohmann::json j = {{"sgemm_gflops", std::round(gflops * 10) / 10}, {"threads", t}, {"gemm", gemm_plan::name(p)}};
      if (p != gemm_plan::Policy::libxsmm) {
        j["openblas_core"] = core.running;
        j["openblas_own_core"] = core.own;
        j["openblas_core_decided_by"] = core.decided_by;
        j["openblas_cpu_best"] = core.cpu_best;  // above openblas_core when a user's OPENBLAS_CORETYPE holds it back
      }
      if (p != gemm_plan::Policy::openblas) j["libxsmm_target"] = xsmm::target();
      fmt::print("{}\n", j.dump());
    }
}

// --scaling outside a launcher: each T in a fresh process of this binary, so that each line's peak RSS is its own.
void run_scaling_in_fresh_processes(const BenchOpts& o) {
  for (const auto& s : bench::scaling_shapes()) {
    std::vector<std::string> args{"bench", "--shape", s.name, "--threads", std::to_string(o.threads)};
    if (o.profile) args.push_back("--profile");
    if (o.sample) {  // sampling takes no steps
      args.insert(args.end(), {"--sample", "--new-tokens", std::to_string(o.new_tokens)});
    } else {
      args.insert(args.end(), {"--steps", std::to_string(o.steps), "--warmup", std::to_string(o.warmup)});
    }
    run_self(args);
  }
}

// Times the shapes the options name in this process (and its MPI peers), one JSON line each; rank 0 prints.
void run_shapes(const BenchOpts& o) {
  std::vector<bench::BenchShape> shapes;
  if (o.scaling)  // under mpirun: one after the other in these processes
    shapes = bench::scaling_shapes();
  else if (o.shape == "all")
    shapes = bench::bench_shapes();
  else
    shapes.push_back(bench::bench_shape(o.shape));
  if (!o.checkpoint.empty()) {  // --sample of a trained model
    const auto weights = o.int8 ? infer::DecoderWeights::q8 : infer::DecoderWeights::f32;
    fmt::print("{}\n", bench::to_json_line(
                           bench::bench_checkpoint_sampling(o.checkpoint, o.prompt, o.new_tokens, o.threads, weights)));
    return;
  }
  for (const auto& s : shapes) {
    if (o.sample) {
      fmt::print("{}\n", bench::to_json_line(bench::bench_sampling(s, o.threads, o.new_tokens)));
      std::fflush(stdout);
      continue;
    }
    const bench::BenchResult r = bench::bench_training(s, o.threads, o.steps, o.warmup, o.profile);
    if (!dist::is_root()) continue;
    fmt::print("{}\n", bench::to_json_line(r));
    if (o.profile) fmt::print("{}\n", bench::profile_table(r, o.steps));
    if (o.check_gemm)
      for (const std::string& line : bench::check_gemm_plan(s.name)) fmt::print("{}\n", line);
    if (!o.compare_gemm.empty())
      fmt::print("{}\n", bench::compare_gemm_plans(s, o.threads, o.steps, o.warmup, o.compare_gemm));
    std::fflush(stdout);
  }
}

// bench's options of decoding and memory: --checkpoint, --prompt and --int8 (with --sample), --bandwidth and
// --array-mb. --checkpoint excludes `shapes` (--shape, --scaling), --bandwidth those and `timing` (what times steps).
void add_decoding_options(CLI::App* cmd, BenchOpts& o, CLI::Option* sample, const std::vector<CLI::Option*>& shapes,
                          const std::vector<CLI::Option*>& timing) {
  CLI::Option* checkpoint =
      cmd->add_option("--checkpoint", o.checkpoint,
                      "With --sample: time the decoding of this checkpoint as `sample` runs it (greedy, --new-tokens "
                      "after --prompt), with the bytes of weights a token reads and the fraction of the read "
                      "bandwidth measured over as many bytes")
          ->check(readable_file())
          ->needs(sample);
  cmd->add_option("--prompt", o.prompt, "With --checkpoint: the prompt")->capture_default_str()->needs(checkpoint);
  cmd->add_flag("--int8", o.int8, "With --checkpoint: decode with int8 weights (per group of 32, as llama2.c's runq.c)")
      ->needs(checkpoint);
  CLI::Option* bandwidth = cmd->add_flag(
      "--bandwidth", o.bandwidth,
      "Print the memory bandwidth instead: STREAM-like read, copy and triad at 1 and 2 threads (or --threads)");
  cmd->add_option("--array-mb", o.array_mb, "With --bandwidth: MiB per array")
      ->capture_default_str()
      ->check(CLI::Range(1, 16384))
      ->needs(bandwidth);
  bandwidth->excludes(sample);
  for (CLI::Option* other : shapes) {
    checkpoint->excludes(other);
    bandwidth->excludes(other);
  }
  for (CLI::Option* other : timing) bandwidth->excludes(other);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOpts>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Training speed (GPT + AdamW on random tokens), one JSON line per shape; under mpirun, data-parallel");
  CLI::Option* shape =
      cmd->add_option(
             "--shape", o->shape,
             "tiny | small | medium | large | all, one of --scaling's T64 ... T1024, or floor (tiny's graph with "
             "next to no arithmetic: the per-step overhead)")
          ->capture_default_str();
  CLI::Option* threads =
      cmd->add_option(
             "--threads", o->threads,
             fmt::format("Kernel threads (BLAS runs single-threaded inside them); default: auto, OMP_NUM_THREADS "
                         "when set, else the {} physical cores",
                         physical_cores()))
          ->check(CLI::Range(1, max_threads()));
  CLI::Option* steps = cmd->add_option("--steps", o->steps, "Timed steps (the median is reported)")
                           ->capture_default_str()
                           ->check(CLI::Range(1, 100000));
  CLI::Option* warmup = cmd->add_option("--warmup", o->warmup, "Untimed steps first")
                            ->capture_default_str()
                            ->check(CLI::Range(0, 100000));
  CLI::Option* profile =
      cmd->add_flag("--profile", o->profile, "Also print each op's share of a step (forward and backward ms per step)");
  CLI::Option* gemm = cmd->add_flag(
      "--gemm", o->gemm,
      "Print the measured SGEMM GFLOP/s at 1 and 2 threads of each library (openblas, libxsmm) and of the "
      "choice per shape (auto's rule, and measure's timing) instead");
  CLI::Option* check_gemm = cmd->add_flag(
      "--check-gemm", o->check_gemm,
      "After each shape's steps, time both libraries again on each product shape of the plan and print how "
      "the chosen one's speed compares with the faster one's (one JSON line per product)");
  CLI::Option* compare_gemm =
      cmd->add_option("--compare-gemm", o->compare_gemm,
                      "After each shape's steps, train it again with the plan of products those steps used and with "
                      "another (every product on openblas or libxsmm, or each on the other library), the two taking "
                      "turns step by step in one process, --steps pairs after --warmup: one JSON line with the "
                      "median of the paired step-time ratios, which resolves a few percent on a machine whose "
                      "speed differs from one process to the next")
          ->check(CLI::IsMember({"openblas", "libxsmm", "other"}));
  CLI::Option* sample = cmd->add_flag(
      "--sample", o->sample,
      "Time sampling instead: tokens/s with and without the KV cache (of a random model of each --shape), "
      "or of a trained model with --checkpoint");
  CLI::Option* scaling = cmd->add_flag(
      "--scaling", o->scaling,
      "Time T = 64, 128, 256, 512, 1024 at V 512, C 256, H 8, L 4 and 2048 tokens a step, each in a fresh "
      "process (one JSON line per T)");
  cmd->add_option("--new-tokens", o->new_tokens, "Tokens to sample with --sample")
      ->capture_default_str()
      ->check(whole_number(1, kMaxSampledTokens, "a bound on the time and memory of one sample"))
      ->needs(sample);
  add_decoding_options(cmd, *o, sample, {shape, scaling}, {steps, warmup, profile, check_gemm, compare_gemm, gemm});
  // A flag the chosen benchmark would ignore is a usage error: --gemm measures SGEMM alone, --sample times no step.
  gemm->excludes(shape)->excludes(threads)->excludes(steps)->excludes(warmup)->excludes(profile)->excludes(check_gemm);
  gemm->excludes(sample)->excludes(scaling)->excludes(compare_gemm);
  compare_gemm->excludes(sample)->excludes(scaling);
  sample->excludes(steps)->excludes(warmup)->excludes(profile)->excludes(check_gemm);
  scaling->excludes(shape);  // --scaling's own shapes
  cmd->callback([o] {
    select_action([o] {
      const bool threads_given = o->threads != 0;
      if (o->threads == 0) o->threads = default_threads();
      if (!o->compare_gemm.empty() && dist::size() > 1)
        throw std::invalid_argument("bench --compare-gemm times steps in one process: run it without mpirun");
      if (o->gemm)
        print_sgemm_peaks();
      else if (o->bandwidth)
        print_bandwidth(*o, threads_given);
      else if (o->scaling && !started_by_launcher())
        run_scaling_in_fresh_processes(*o);
      else
        run_shapes(*o);
      return 0;
    });
  });
}

}  // namespace tf::app
