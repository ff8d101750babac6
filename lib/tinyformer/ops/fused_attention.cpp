// Fused causal multi-head self-attention: scores, mask, softmax, dropout and the weighted sum in one op,
// reading each head's q/k/v columns in place from qkv [B,T,(H+2Hkv)D] (no permute copies). Heads run in parallel;
// each head's loops (ops/kernels/causal_head.cpp) touch only the causal lower triangle.
// Grouped-query attention (Hkv < H key/value heads, G = H/Hkv): query head h reads k/v head g = h / G, so the
// backward sums the G query heads' dK and dV of a group (one thread a group, heads in order: deterministic).
//
// Per batch entry b and head h, with Q, K, V [T,D] (row stride (H+2Hkv)D), scale = 1/sqrt(D):
//   forward   P = softmax(mask(scale Q K^T))   [T,T]    Pd = P * M / (1-p)    Y = Pd V   [T,D] (row stride C)
//   backward  dPd = dY V^T      dV = Pd^T dY      dP = dPd * M / (1-p)
//             dS = P * (dP - rowsum(dP * P))      (softmax backward; masked entries have P = 0)
//             dQ = scale dS K   dK = scale dS^T Q
//
// Memory: P [B,H,T,T] is what the backward needs besides qkv. When it is small (at most 32 MB for the whole layer,
// AttentionOptions::keep_limit_bytes) it is kept from the forward; when it is larger (long sequences: 64 MB a layer at
// B 2, H 8, T 1024) only the dropout mask is kept, one byte a weight, and the backward computes each head's P again
// from Q and K, with the same loops in the same order, so the values are the same to the bit either way. The head
// kernels then hold a block of P's rows at a time, never the whole T x T.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf {

namespace {

namespace head = kernels::attention_head;

struct AttentionShape {
  std::size_t B, T, C, H, Hkv, D;                                         // C = H D
  std::size_t ld() const { return C + 2 * Hkv * D; }                      // row stride of qkv
  std::size_t group() const { return H / Hkv; }                           // query heads per key/value head
  std::size_t k_col(std::size_t h) const { return C + h / group() * D; }  // head h's k columns in a qkv row
  std::size_t v_col(std::size_t h) const { return C + (Hkv + h / group()) * D; }
};

// What the forward leaves for the backward besides qkv.
template <class S>
struct Saved {
  Array<S> probs;                  // [B,H,T,T] P, when kept
  Array<S> dropped;                // [B,H,T,T] Pd, when kept and with dropout
  std::vector<std::uint8_t> keep;  // [B,H,T,T] the dropout mask, when P is computed again (1: kept)
  bool recompute = false, dropout = false;
  S keep_scale = S(1);
  // head bh's arguments of head::backward: P and Pd when kept, else the mask
  const S* p(std::size_t bh, std::size_t TT) const { return recompute ? nullptr : probs.data() + bh * TT; }
  const S* pd(std::size_t bh, std::size_t TT) const {
    return recompute || !dropout ? nullptr : dropped.data() + bh * TT;
  }
  const std::uint8_t* mask(std::size_t bh, std::size_t TT) const {
    return dropout && recompute ? keep.data() + bh * TT : nullptr;
  }
};

// Reads one value of each cache line of [p, p + n) in order, so that the hardware's stream prefetcher brings the block
// into the cache at memory speed. A head's q, k and v are D columns of rows (H+2Hkv)D apart, which the loops would
// otherwise fetch a line at a time, waiting on each; all heads of a batch entry read the same rows. Only for blocks of
// at most half the L2 cache (sysconf; 256 KB if it does not say): a larger block pushes out its own start
// (measured, one thread, this op alone at B 16, T 128, C 128, H 4: forward 4.7-5.0 -> 3.2-3.9 ms, backward 6.9-7.0 ->
// 5.2-6.2 ms; at medium's T 256, C 256, a 768 KB block, no gain). Values are only read.
template <class S>
void warm(const S* p, std::size_t n) {
  constexpr std::size_t kLineValues = 64 / sizeof(S);
  S sum = 0;
  for (std::size_t i = 0; i < n; i += kLineValues) sum += p[i];
  volatile S sink = sum;  // keeps the reads
  (void)sink;
}

// Heads a parallel piece takes at least: a head's products are about T T D multiply-adds (the causal half of two
// T x T x D products; the backward has twice that), so heads of a few positions stay on one thread.
std::size_t min_heads_per_piece(const AttentionShape& a) {
  return std::max<std::size_t>(1, kMinPieceMacs / std::max<std::size_t>(1, a.T * a.T * a.D));
}

bool fits_half_l2(std::size_t bytes) {
  static const std::size_t half_l2 = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? static_cast<std::size_t>(l2) / 2 : std::size_t{256} << 10;
  }();
  return bytes <= half_l2;
}

// Y = Pd V for every head, P computed (and kept or not), the dropout mask drawn in (b, h, i, j) order.
template <class S>
Array<S> attention_forward(const S* base, const AttentionShape& a, S dropout_p, bool use_dropout,
                           std::size_t keep_limit_bytes, Rng& rng, Saved<S>& saved, Array<S>* weights) {
  const std::size_t TT = a.T * a.T, BH = a.B * a.H;
  const S scale = S(1) / std::sqrt(static_cast<S>(a.D));
  saved.dropout = use_dropout;
  saved.keep_scale = use_dropout ? S(1) / (S(1) - dropout_p) : S(1);
  saved.recompute = !weights && BH * TT * sizeof(S) > keep_limit_bytes;
  if (use_dropout) {  // the mask is drawn on this thread, so it does not depend on the split
    saved.keep.resize(BH * TT);
    for (auto& m : saved.keep) m = rng.uniform() >= dropout_p ? 1 : 0;
  }
  if (!saved.recompute) {
    saved.probs = Array<S>::from_shape({a.B, a.H, a.T, a.T});
    if (use_dropout) saved.dropped = Array<S>::from_shape({a.B, a.H, a.T, a.T});
  }
  Array<S> y = Array<S>::from_shape({a.B, a.T, a.C});
  const bool warm_qkv = fits_half_l2(a.T * a.ld() * sizeof(S));
  parallel_for(BH, min_heads_per_piece(a), [&](std::size_t begin, std::size_t end) {
    std::vector<S> scratch(head::scratch_size<S>(a.T, a.D));
    for (std::size_t bh = begin; bh < end; ++bh) {
      const std::size_t b = bh / a.H, h = bh % a.H;
      const S* row = base + b * a.T * a.ld();
      if ((bh == begin || h == 0) && warm_qkv) warm(row, a.T * a.ld());  // entry b's qkv rows
      S* p = saved.recompute ? nullptr : saved.probs.data() + bh * TT;
      head::forward(row + h * a.D, row + a.k_col(h), row + a.v_col(h), a.ld(), a.T, a.D, scale,
                    use_dropout ? saved.keep.data() + bh * TT : nullptr, saved.keep_scale, p,
                    p && use_dropout ? saved.dropped.data() + bh * TT : nullptr, y.data() + b * a.T * a.C + h * a.D,
                    a.C, scratch.data());
      if (weights) head::zero_above_diagonal(p, a.T);  // shown: the head wrote what its backward reads
    }
  });
  if (!saved.recompute) saved.keep = {};  // the backward reads Pd
  if (weights) *weights = saved.probs;
  return y;
}

// dqkv from dy [B,T,C], a key/value head's group of query heads at a time: the group's first head writes dK and dV,
// the others add theirs in head order.
template <class S>
Array<S> attention_backward(const S* x, const S* dy, const AttentionShape& a, const Saved<S>& saved) {
  const std::size_t TT = a.T * a.T, G = a.group(), ld = a.ld();
  const S scale = S(1) / std::sqrt(static_cast<S>(a.D));
  Array<S> dqkv = Array<S>::from_shape({a.B, a.T, ld});
  const bool warm_rows = fits_half_l2((ld + a.C) * a.T * sizeof(S));
  const std::size_t min_groups = std::max<std::size_t>(1, min_heads_per_piece(a) / (2 * G));  // G heads, twice the work
  parallel_for(a.B * a.Hkv, min_groups, [&](std::size_t begin, std::size_t end) {
    std::vector<S> scratch(head::scratch_size<S>(a.T, a.D));
    std::vector<S> dkv(G > 1 ? a.T * ld : 0);  // [T,ld]: a later head's dK in columns 0..D-1, dV in D..2D-1
    for (std::size_t bg = begin; bg < end; ++bg) {
      const std::size_t b = bg / a.Hkv, g = bg % a.Hkv;
      const S* row = x + b * a.T * ld;
      S* drow = dqkv.data() + b * a.T * ld;
      if ((bg == begin || g == 0) && warm_rows) {  // entry b's qkv and dy rows
        warm(row, a.T * ld);
        warm(dy + b * a.T * a.C, a.T * a.C);
      }
      for (std::size_t h = g * G; h < (g + 1) * G; ++h) {
        const std::size_t bh = b * a.H + h;
        const S *q = row + h * a.D, *k = row + a.k_col(h), *v = row + a.v_col(h);
        const bool first = h == g * G;
        S* dk = first ? drow + a.k_col(h) : dkv.data();
        S* dv = first ? drow + a.v_col(h) : dkv.data() + a.D;
        head::backward(q, k, v, ld, saved.p(bh, TT), saved.pd(bh, TT), saved.mask(bh, TT), saved.keep_scale,
                       dy + b * a.T * a.C + h * a.D, a.C, a.T, a.D, scale, drow + h * a.D, dk, dv, scratch.data());
        if (first) continue;
        for (std::size_t t = 0; t < a.T; ++t)
          for (std::size_t d = 0; d < a.D; ++d) {
            drow[t * ld + a.k_col(h) + d] += dkv[t * ld + d];
            drow[t * ld + a.v_col(h) + d] += dkv[t * ld + a.D + d];
          }
      }
    }
  });
  return dqkv;
}

}  // namespace

template <class S>
Var<S> causal_self_attention(const Var<S>& qkv, const AttentionOptions& options, Rng& rng, Array<S>* weights) {
  const S dropout_p = static_cast<S>(options.dropout);
  check_input(qkv, "causal_self_attention", "qkv");
  const Shape shape = qkv.shape();
  const std::size_t H = options.n_head, Hkv = options.n_kv_head == 0 ? H : options.n_kv_head;
  if (H == 0 || H % Hkv != 0)
    throw std::invalid_argument(
        fmt::format("causal_self_attention: n_kv_head = {} must divide n_head = {} (both at least 1)", Hkv, H));
  if (shape.size() != 3 || shape[2] % (H + 2 * Hkv) != 0 || shape[2] == 0)
    throw std::invalid_argument(fmt::format(
        "causal_self_attention: qkv must be [B,T,(n_head + 2 n_kv_head) D] with n_head = {}, n_kv_head = {}, got {}", H,
        Hkv, shape_str(shape)));
  if (!(dropout_p >= 0 && dropout_p < 1))
    throw std::invalid_argument(fmt::format("causal_self_attention: dropout {} must be in [0, 1)", dropout_p));
  const std::size_t D = shape[2] / (H + 2 * Hkv);
  const AttentionShape a{shape[0], shape[1], H * D, H, Hkv, D};
  auto saved = std::make_shared<Saved<S>>();
  Array<S> y = attention_forward(qkv.value().data(), a, dropout_p, options.training && dropout_p > 0,
                                 options.keep_limit_bytes, rng, *saved, weights);
  return make_result<S>(
      std::move(y), {qkv},
      [a, saved](Node<S>& self) {
        Node<S>& in = *self.inputs[0];
        accumulate_grad(in, attention_backward(in.value.data(), self.grad.data(), a, *saved));
      },
      "causal_self_attention");
}

template Var<float> causal_self_attention<float>(const Var<float>&, const AttentionOptions&, Rng&, Array<float>*);
template Var<double> causal_self_attention<double>(const Var<double>&, const AttentionOptions&, Rng&, Array<double>*);

}  // namespace tf
