// tinyformer bench [--shape tiny|small|medium|all] [--threads N] [--steps N] [--warmup N] [--profile] [--gemm]
// Under mpirun -np N the processes train the shape data-parallel (bench.hpp); rank 0 prints.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "tinyformer/bench/bench.hpp"
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf::app {

void add_bench_command(CLI::App& app) {
  struct Opts {
    std::string shape = "all";
    int threads = 0;  // auto: the physical cores
    std::size_t steps = 20, warmup = 3;
    bool gemm = false;
    bool profile = false;
    bool sample = false;
    std::size_t new_tokens = 256;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("bench", "Training speed (GPT + AdamW on random tokens), one JSON line per shape; under mpirun, data-parallel");
  cmd->add_option("--shape", o->shape, "tiny | small | medium | all")->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  fmt::format("Kernel threads (BLAS runs single-threaded inside them); default: auto, the {} physical "
                              "cores",
                              physical_cores()))
      ->check(CLI::Range(1, max_threads()));
  cmd->add_option("--steps", o->steps, "Timed steps (the median is reported)")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", o->warmup, "Untimed steps first")->capture_default_str()->check(CLI::Range(0, 100000));
  cmd->add_flag("--profile", o->profile, "Also print each op's share of a step (forward and backward ms per step)");
  cmd->add_flag("--gemm", o->gemm, "Print the measured SGEMM GFLOP/s at 1 and 2 threads instead");
  cmd->add_flag("--sample", o->sample, "Time sampling instead: tokens/s with and without the KV cache");
  cmd->add_option("--new-tokens", o->new_tokens, "Tokens to sample with --sample")->capture_default_str()->check(whole_number(1));
  cmd->callback([o] {
    select_action([o] {
      if (o->threads == 0) o->threads = physical_cores();
      if (o->gemm) {
        for (int t : {1, 2}) {
          const double gflops = bench::measure_sgemm_gflops(t);
          if (dist::is_root()) fmt::print("{{\"sgemm_gflops\": {:.1f}, \"threads\": {}}}\n", gflops, t);
        }
        return 0;
      }
      std::vector<bench::BenchShape> shapes;
      if (o->shape == "all")
        shapes = bench::bench_shapes();
      else
        shapes.push_back(bench::bench_shape(o->shape));
      for (const auto& s : shapes) {
        if (o->sample) {
          fmt::print("{}\n", bench::to_json_line(bench::bench_sampling(s, o->threads, o->new_tokens)));
          std::fflush(stdout);
          continue;
        }
        const bench::BenchResult r = bench::bench_training(s, o->threads, o->steps, o->warmup, o->profile);
        if (!dist::is_root()) continue;
        fmt::print("{}\n", bench::to_json_line(r));
        if (o->profile) fmt::print("{}\n", bench::profile_table(r, o->steps));
        std::fflush(stdout);
      }
      return 0;
    });
  });
}

}  // namespace tf::app
