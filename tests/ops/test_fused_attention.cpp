// The fused causal self-attention op: float64 gradchecks with and without dropout, and the backward that computes
// the attention weights again (for long sequences) giving the same values and gradients, to the bit, as the one that
// keeps them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "support/helpers.hpp"
#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using test::random_array;

namespace {
using Inputs = std::vector<Var<double>>;

// The op's options: H heads, dropout p (in training when p > 0), the given keep limit.
AttentionOptions heads(std::size_t H, double p = 0, std::size_t keep_limit = kDefaultAttentionKeepBytes) {
  return {H, p, p > 0, keep_limit};
}

// y and dqkv of the fused op in float32 on a fixed input, with the given keep limit.
std::pair<Array<float>, Array<float>> run(std::size_t keep_limit, float dropout_p) {
  Var<float> qkv(test::random_array_f({2, 37, 192}, 21, -2.0, 2.0), true);  // (B, T, 3C), C = 64
  Rng rng(8);
  Var<float> y = causal_self_attention(qkv, {4, dropout_p, true, keep_limit}, rng);
  y.backward(test::random_array_f({2, 37, 64}, 22));
  return {y.value(), qkv.grad()};
}
}  // namespace

TEST_CASE("gradcheck: fused causal self-attention op on qkv [B,T,3C]", "[gradcheck][ops]") {
  Rng rng(1);
  REQUIRE_GRADCHECK(gradcheck([&](const Inputs& in) { return causal_self_attention(in[0], heads(2), rng); },
                              {random_array({2, 4, 12}, 5, -2.0, 2.0)}, {}, {"qkv"}));
}

TEST_CASE("gradcheck: fused causal self-attention with head sizes of whole SIMD vectors and partial row tiles",
          "[gradcheck][ops]") {
  Rng rng(1);
  for (std::size_t D : {8, 32}) {  // float64: one and four 8-lane vectors a row (AVX-512), two and eight with AVX2
    INFO("D " << D);
    REQUIRE_GRADCHECK(gradcheck([&](const Inputs& in) { return causal_self_attention(in[0], heads(1), rng); },
                                {random_array({1, 11, 3 * D}, 7, -2.0, 2.0)}, {}, {"qkv"}));
  }
}

TEST_CASE("gradcheck: fused causal self-attention with dropout (fixed mask)", "[gradcheck][ops]") {
  auto f = [](const Inputs& in) {
    Rng rng(5);  // same mask on every call
    return causal_self_attention(in[0], heads(2, 0.25), rng);
  };
  REQUIRE_GRADCHECK(gradcheck(f, {random_array({1, 6, 12}, 6, -2.0, 2.0)}, {}, {"qkv"}));
}

TEST_CASE("ops: fused attention that recomputes its weights in the backward gives the same bits as keeping them",
          "[ops]") {
  for (float p : {0.0f, 0.3f}) {
    INFO("dropout " << p);
    const auto kept = run(kDefaultAttentionKeepBytes, p), recomputed = run(0, p);
    CHECK(kept.first == recomputed.first);    // y
    CHECK(kept.second == recomputed.second);  // dqkv
  }
}

TEST_CASE("ops: a head's backward reads no weight its forward left unwritten, kept or with dropout", "[ops]") {
  namespace head = kernels::attention_head;
  const std::size_t T = 70;  // three blocks of rows, the last one partial
  for (std::size_t D : {12, 32}) {
    const std::size_t ld = 3 * D;
    const Array<float> qkv = test::random_array_f({T, ld}, 31, -2.0, 2.0), dy = test::random_array_f({T, D}, 32);
    std::vector<std::uint8_t> keep(T * T);
    for (std::size_t i = 0; i < keep.size(); ++i) keep[i] = i % 5 != 2 ? 1 : 0;
    for (bool dropout : {false, true}) {
      INFO("D " << D << ", dropout " << dropout);
      // the head's gradients, with P and Pd kept in buffers that hold `before` where the forward does not write
      auto gradients = [&](float before, std::vector<float>& p) {
        std::vector<float> scratch(head::scratch_size<float>(T, D)), pd(T * T, before), y(T * D), dq(T * ld),
            dk(T * ld), dv(T * ld);
        p.assign(T * T, before);
        const float* x = qkv.data();
        const std::uint8_t* mask = dropout ? keep.data() : nullptr;
        float* kept_pd = dropout ? pd.data() : nullptr;
        head::forward<float>(x, x + D, x + 2 * D, ld, T, D, 0.3f, mask, 1.25f, p.data(), kept_pd, y.data(), D,
                             scratch.data());
        head::backward<float>(x, x + D, x + 2 * D, ld, p.data(), kept_pd, nullptr, 1.25f, dy.data(), D, T, D, 0.3f,
                              dq.data(), dk.data(), dv.data(), scratch.data());
        dq.insert(dq.end(), dk.begin(), dk.end());
        dq.insert(dq.end(), dv.begin(), dv.end());
        return dq;
      };
      std::vector<float> p_nan, p_zero;
      const std::vector<float> from_nan = gradients(std::nanf(""), p_nan), from_zero = gradients(0.0f, p_zero);
      CHECK(std::all_of(from_nan.begin(), from_nan.end(), [](float g) { return std::isfinite(g); }));
      CHECK(from_nan == from_zero);
      head::zero_above_diagonal<float>(p_nan.data(), T);  // as the op shows P: the same as over zeros
      head::zero_above_diagonal<float>(p_zero.data(), T);
      CHECK(p_nan == p_zero);
    }
  }
}

TEST_CASE("gradcheck: fused causal self-attention recomputing its weights, with and without dropout",
          "[gradcheck][ops]") {
  for (double p : {0.0, 0.25}) {
    INFO("dropout " << p);
    auto f = [p](const Inputs& in) {
      Rng rng(5);  // same mask on every call
      return causal_self_attention(in[0], {2, p, true, 0}, rng);
    };
    REQUIRE_GRADCHECK(gradcheck(f, {random_array({2, 5, 12}, 6, -2.0, 2.0)}, {}, {"qkv"}));
  }
}

namespace {
// The fused op's y and dqkv for qkv [B,T,3C] and the gradient dy [B,T,C] reaching y, computed again with plain
// loops in double from the formulas at the top of ops/fused_attention.cpp (no dropout).
struct Reference {
  std::vector<double> y, dqkv;
};
template <class S>
Reference reference_attention(const Array<S>& qkv, const Array<S>& dy, std::size_t H) {
  const std::size_t B = qkv.shape()[0], T = qkv.shape()[1], C = qkv.shape()[2] / 3, D = C / H, ld = 3 * C;
  const double scale = 1.0 / std::sqrt(double(D));
  Reference r{std::vector<double>(B * T * C, 0.0), std::vector<double>(B * T * ld, 0.0)};
  auto at = [&](std::size_t b, std::size_t t, std::size_t part, std::size_t h, std::size_t d) {
    return double(qkv.data()[(b * T + t) * ld + part * C + h * D + d]);
  };
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      std::vector<double> p(T * T, 0.0), ds(T * T, 0.0);
      for (std::size_t i = 0; i < T; ++i) {  // P = softmax over j <= i of scale q_i . k_j
        double mx = -1e300, total = 0;
        for (std::size_t j = 0; j <= i; ++j) {
          double s = 0;
          for (std::size_t d = 0; d < D; ++d) s += at(b, i, 0, h, d) * at(b, j, 1, h, d);
          p[i * T + j] = s * scale;
          mx = std::max(mx, s * scale);
        }
        for (std::size_t j = 0; j <= i; ++j) total += p[i * T + j] = std::exp(p[i * T + j] - mx);
        for (std::size_t j = 0; j <= i; ++j) p[i * T + j] /= total;
      }
      for (std::size_t i = 0; i < T; ++i) {
        double dot = 0;  // sum_j dP_ij P_ij
        for (std::size_t j = 0; j <= i; ++j) {
          double dp = 0;
          for (std::size_t d = 0; d < D; ++d) {
            const double g = dy.data()[(b * T + i) * C + h * D + d];
            r.y[(b * T + i) * C + h * D + d] += p[i * T + j] * at(b, j, 2, h, d);
            r.dqkv[(b * T + j) * ld + 2 * C + h * D + d] += p[i * T + j] * g;  // dV
            dp += g * at(b, j, 2, h, d);
          }
          ds[i * T + j] = dp;
          dot += dp * p[i * T + j];
        }
        for (std::size_t j = 0; j <= i; ++j) ds[i * T + j] = p[i * T + j] * (ds[i * T + j] - dot);
      }
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j <= i; ++j)
          for (std::size_t d = 0; d < D; ++d) {
            r.dqkv[(b * T + i) * ld + h * D + d] += scale * ds[i * T + j] * at(b, j, 1, h, d);      // dQ
            r.dqkv[(b * T + j) * ld + C + h * D + d] += scale * ds[i * T + j] * at(b, i, 0, h, d);  // dK
          }
    }
  return r;
}

// The largest |a - b| / (1 + |b|).
template <class S>
double max_relative_error(const Array<S>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < b.size(); ++i)
    m = std::max(m, std::abs(double(a.data()[i]) - b[i]) / (1 + std::abs(b[i])));
  return m;
}

template <class S>
void check_against_reference(double tolerance) {
  // head sizes for every SIMD kernel path (one, two, four and eight vectors a row, in groups of columns, and plain
  // loops) and sequence lengths with partial row tiles and partial column blocks
  for (std::size_t D : {4, 8, 12, 16, 32, 64, 128})
    for (std::size_t T : {1, 7, 8, 31, 33, 70}) {
      const std::size_t H = 2, C = H * D;
      Array<S> qkv = Array<S>::from_shape({std::size_t{2}, T, 3 * C}),
               dy = Array<S>::from_shape({std::size_t{2}, T, C});
      Rng init(T * 100 + D);
      for (S& v : qkv) v = static_cast<S>(init.uniform(-2.0, 2.0));
      for (S& v : dy) v = static_cast<S>(init.uniform(-1.0, 1.0));
      Var<S> x(qkv, true);
      Rng rng(1);
      Var<S> y = causal_self_attention(x, heads(H), rng);
      y.backward(dy);
      const Reference ref = reference_attention(qkv, dy, H);
      INFO("T " << T << ", D " << D);
      CHECK(max_relative_error(y.value(), ref.y) < tolerance);
      CHECK(max_relative_error(x.grad(), ref.dqkv) < tolerance);
    }
}
}  // namespace

TEST_CASE("ops: fused attention matches plain loops in double for every head-size path and partial tile", "[ops]") {
  check_against_reference<double>(1e-12);
  check_against_reference<float>(2e-5);
}
