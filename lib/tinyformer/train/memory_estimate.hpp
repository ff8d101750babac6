#pragma once
// The memory a run needs, estimated from the config before anything is allocated, and the check that refuses a
// run the machine cannot hold (one line naming the keys that drive the estimate, the estimate and what is
// available), so that a d_model, batch_size, eval_size or vocabulary far beyond the machine is refused at once
// instead of ending in std::bad_alloc (or the kernel's OOM killer) after the run directory was created.
//
// The estimate, in bytes (float32 weights, S = 4 bytes; B batch_size, T context, C d_model, H n_head, L n_layer,
// V vocabulary, F the MLP's hidden width, Q c_attn's width (nn::qkv_width), P parameters):
//   weights      S P;  gradients S P;  optimizer  2 S P (Adam, AdamW), S P (SGD with momentum)
//   checkpoint   weights + optimizer: a save copies both into the writer before the file is written
//   activations  S B T (L (7 C + Q + 2 F + 2 H T) + 3 V + 2 C): the forward values a step keeps for backward and
//                their gradients (layer norms, q k v, the attention's [B,H,T,T] weights, the MLP; buffers are
//                reused between ops), the logits, their softmax and gradient
//   evaluation   2 S B T V: the held-out batch's logits and probabilities (its activations reuse the step's)
//   batches      2 I N K B T (I = 4 bytes a token id, N processes, K grad_accum): the x and y ids of the step's global
//                batch, which every process draws whole, and as much again for its micro-batches when N K > 1
//   data         data::data_footprint (the file, the ids, the held-out set)
// The constants were fitted to the peak resident memory of real runs; tests/app/cli_memory.sh checks that the
// estimate stays within 0.5x to 3x of it for a config dominated by activations and one dominated by parameters.
#include <string>
#include <vector>

#include "tinyformer/config/config.hpp"
#include "tinyformer/tensor/memory.hpp"

namespace tf::train {

struct MemoryEstimate {
  double weights = 0, gradients = 0, optimizer = 0, checkpoint = 0, activations = 0, evaluation = 0, batches = 0,
         data = 0;  // bytes
  double total() const {
    return weights + gradients + optimizer + checkpoint + activations + evaluation + batches + data;
  }
};

// With T and V of the data (0 where not known yet: then only the data's part is counted).
MemoryEstimate estimate_memory(const config::RunConfig& cfg, std::size_t T, std::size_t V, double data_bytes);

// Throws config::ConfigError when the estimate exceeds the available memory: "<file>: <key> (...): <key>=<value>
// and ... need an estimated 812 GiB (parameters 40 GiB, ...); this machine has 21.3 GiB available; ...".
void check_memory(const config::RunConfig& cfg, const MemoryEstimate& estimate, std::size_t T, std::size_t V);

}  // namespace tf::train
