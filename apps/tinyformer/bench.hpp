#pragma once
// `tinyformer bench`: training speed of the GPT with AdamW on random tokens, and the machine's SGEMM limit.
// Under mpirun the N processes train one model data-parallel: the shape's batch is the global batch, each process
// takes B/N of its rows, and the gradients are all-reduced (dist::GradientAllReduce) before the optimizer step.
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/autograd/profile.hpp"
#include "tinyformer/config/config.hpp"
#include "tinyformer/infer/decoder.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"

namespace tf::bench {

struct BenchShape {
  std::string name;
  std::size_t vocab, context, d_model, heads, layers, batch;
};

// tiny (64, 32, 64, 4, 2, 32) · small (96, 128, 128, 4, 4, 16) · medium (256, 256, 256, 8, 6, 8) ·
// large (512, 1024, 256, 8, 4, 2), where attention's T^2 terms dominate
const std::vector<BenchShape>& bench_shapes();
// `bench --scaling`: T = 64, 128, 256, 512, 1024 at V 512, C 256, H 8, L 4 and 2048 tokens a step (B = 2048 / T),
// named "T64" ... "T1024" (T1024 is large's shape).
const std::vector<BenchShape>& scaling_shapes();
// "floor" (4, 2, 8, 4, 2, 1): tiny's graph (2 layers of 4 heads, the same ops, AdamW) with next to no arithmetic, so
// its step is the cost of everything but the kernels: graph nodes, closures, shape checks, allocation, thread wake-ups.
const BenchShape& floor_shape();
// Any of the names above; throws std::invalid_argument listing them.
const BenchShape& bench_shape(const std::string& name);
// The GPT of a shape: untied head, biases, dropout 0, LayerNorm, GELU, learned positions (the model section's
// defaults).
config::ModelConfig model_config(const BenchShape& shape);

struct BenchResult {
  std::string shape;
  std::size_t context = 0, batch = 0;  // the shape's T and global B
  int threads = 1;                     // per process
  int processes = 1;                   // MPI processes (dist::size())
  std::size_t params = 0;
  double ms_per_step = 0;      // median over the timed steps
  double cpu_ms_per_step = 0;  // median CPU time of the process (all threads) per timed step
  double tokens_per_s = 0;     // the global batch's tokens (all processes) per second
  double allreduce_ms = 0;     // median time per step in the gradient all-reduce, after a barrier (0 with one process)
  std::size_t allreduce_bytes = 0;  // per step: 4 x params
  double gflops = 0;                // (6 * params * tokens + 12 * layers * T * d_model * tokens) / step time
  double peak_rss_mb = 0;
  std::string gemm_policy;             // TINYFORMER_GEMM's policy (tensor/gemm_plan.hpp)
  std::vector<std::string> gemm_plan;  // the library of each float product shape so far, "TN 64 192 1024 libxsmm"
  // Under auto, what choosing measured per product of each shape, in microseconds: {"openblas": .., "libxsmm": ..}
  std::vector<std::pair<double, double>> gemm_measured_us;
  std::vector<double> losses;            // per step, to show runs agree whatever the thread count
  std::vector<profile::OpTime> profile;  // with profiling on: per op, summed over the timed steps
};

// With `profile` the timed steps also record per-op times (see autograd/profile.hpp) and, under MPI, the
// all-reduce as the phase "gradient all-reduce" (it starts after a barrier, timed as "waiting for the other
// processes", so it is the transfer and the sum alone); the hooks cost a clock read per op, so ms_per_step of a
// profiled run is slightly higher. Collective under MPI; throws dist::CollectiveError when N does not divide the batch.
BenchResult bench_training(const BenchShape& shape, int threads, std::size_t steps, std::size_t warmup,
                           bool profile = false);
std::string to_json_line(const BenchResult& r);
// A table of the profile: op, calls per step, forward and backward ms per step, share of the step.
std::string profile_table(const BenchResult& r, std::size_t steps);

// Sampling speed: `new_tokens` tokens from a 1-token prompt with a randomly initialised GPT of the shape, with the
// KV cache and without it (the whole sequence recomputed per token), at temperature 1 from the same seed.
struct SampleBenchResult {
  std::string shape;
  int threads = 1;
  std::size_t new_tokens = 0;
  double cached_tokens_per_s = 0, uncached_tokens_per_s = 0;
  bool identical = false;  // both produced the same tokens
};
SampleBenchResult bench_sampling(const BenchShape& shape, int threads, std::size_t new_tokens);
std::string to_json_line(const SampleBenchResult& r);

// bench --sample --checkpoint: the decoding speed of a trained model, as `sample` runs it (infer::generate on an
// infer::Decoder): the prompt encoded as `sample` encodes it, then `new_tokens` tokens at temperature 0 (no stop at
// <s>), timed from the prompt's first token to the last new one, after the weights were packed (and an untimed warm-up
// of 8 tokens from <s> alone). The bytes of weights one token reads over the time a token takes, against the read
// bandwidth of the same bytes measured right before and after in the same process with the same threads (the larger
// of the two, read_bandwidth_gbps).
struct CheckpointSampleResult {
  std::string checkpoint, weights;  // weights: "f32" or "q8"
  int threads = 1;
  std::size_t prompt_tokens = 0, new_tokens = 0;
  double seconds = 0, tokens_per_s = 0;
  double cpu_seconds = 0;  // the process's CPU time (all threads) in the same span: free of the time others held cores
  std::size_t weight_bytes_per_token = 0;
  double weight_gb_per_s = 0;  // weight_bytes_per_token * tokens_per_s / 1e9
  double read_gb_per_s = 0;    // the machine's read bandwidth over a buffer that size
  std::vector<Index> tokens;   // prompt + new tokens
};
CheckpointSampleResult bench_checkpoint_sampling(const std::string& checkpoint, const std::string& prompt,
                                                 std::size_t new_tokens, int threads, infer::DecoderWeights weights);
std::string to_json_line(const CheckpointSampleResult& r);

// bench --bandwidth: STREAM-like kernels on arrays of `array_bytes` each with `threads` threads of the pool, each
// thread on its own contiguous part: read (a sum of a, the decoder's access), copy (c = a), triad (a = b + s c). GB/s
// counts the bytes the kernel names (read 1, copy 2, triad 3 arrays), the median of `repeats` passes.
struct BandwidthResult {
  std::string kernel;
  int threads = 1;
  std::size_t array_bytes = 0;
  double gb_per_s = 0;
};
std::vector<BandwidthResult> measure_bandwidth(int threads, std::size_t array_bytes, int repeats);
std::string to_json_line(const BandwidthResult& r);
// The read kernel alone over a buffer of `bytes` (huge pages advised, as the decoder's weights), the median GB/s.
double read_bandwidth_gbps(std::size_t bytes, int threads, int repeats);

// The machine's SGEMM peak at `threads` threads: the best GFLOP/s of three transformer-shaped products (x [4096,256]
// W [256,768], its dW = dY^T X over 4096 rows, and 1024^3), each thread running whole products (one library call, as
// the library alone would, not cut into gemm()'s pieces) on its own arrays at the same time, every product on the
// library(ies) of `policy` (it replaces the plan so far). Each shape's time is the median of 9 runs.
double measure_sgemm_gflops(int threads, gemm_plan::Policy policy);

// bench --check-gemm: each product shape of the plan so far timed again on both libraries (9 pairs at most), one
// JSON line per shape: the library chosen, each library's median us, and `choice_speed`, the speed of the chosen
// library as a fraction of the faster one's (1: the choice is the faster; 0.8: the other would have been 1.25x as
// fast). A check of the choice made at the first use of the shape, not a timing.
std::vector<std::string> check_gemm_plan(const std::string& shape);

// bench --compare-gemm: the plan of products that the timed steps used against another, in one process: `against` is
// "openblas" or "libxsmm" (every product on it) or "other" (each shape on the library not chosen). A fresh model of
// the shape trains `pairs` pairs of steps, the two plans taking turns step by step in the order ABBA, after `warmup`
// untimed pairs. One JSON line: each plan's median ms per step, the median of the paired ratios against / chosen and
// its quartiles, and each plan's libraries as they were in force. On a machine whose speed differs from one process
// to the next by more than the difference sought (this project's 2-core guest: 20-30%), paired steps in one process
// resolve what alternating processes cannot. Throws std::invalid_argument for libxsmm or other in a build without
// libxsmm.
std::string compare_gemm_plans(const BenchShape& shape, int threads, std::size_t pairs, std::size_t warmup,
                               const std::string& against);

}  // namespace tf::bench
