#pragma once
// The attention maths of the seed notebooks, composed from the engine's own ops (float64).
//   weights = softmax(q k^T / sqrt(D))      q [..., Tq, D], k [..., Tk, D] -> [..., Tq, Tk]
//   attention = weights v                   v [..., Tk, Dv]                 -> [..., Tq, Dv]
#include <cmath>
#include <utility>

#include "tinyformer/ops/ops.hpp"

namespace tf::seeds {

using V64 = Var<double>;

inline V64 constant(Array<double> a) { return V64(std::move(a)); }

// q k^T / sqrt(D), the transpose as a matmul flag.
inline V64 scaled_scores(const V64& q, const V64& k) {
  const double d = static_cast<double>(q.shape().back());
  return scale(matmul(q, k, false, true), 1.0 / std::sqrt(d));
}

inline V64 attention_weights(const V64& q, const V64& k) { return softmax(scaled_scores(q, k)); }

inline V64 attention(const V64& q, const V64& k, const V64& v) { return matmul(attention_weights(q, k), v); }

}  // namespace tf::seeds
