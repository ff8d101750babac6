// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// One query's attention over the cached keys and values of its head, for decoding (infer/decoder.hpp). The cached
// positions come in up to two segments (a ring buffer's window wraps around its end), each rows of D floats:
//   w_t = scale q . k_t        p = softmax(w)        out = sum_t p_t v_t
// over the positions of the first segment, then the second's, in that order (the softmax is
// kernels::attention_head::softmax_row, every attention path's). Single-threaded: the decoder runs heads side by side.
#include <cstddef>

#include "tinyformer/ops/kernels/isa.hpp"

namespace TF_KERNEL_NAMESPACE {

struct KeyValueRows {
  const float* k = nullptr;  // [n, D]
  const float* v = nullptr;  // [n, D]
  std::size_t n = 0;
};

// q [D], out [D]; w [first.n + second.n] scratch (the weights p on return).
void attend_query(const float* q, std::size_t D, float scale, const KeyValueRows& first, const KeyValueRows& second,
                  float* w, float* out);

}  // namespace TF_KERNEL_NAMESPACE
