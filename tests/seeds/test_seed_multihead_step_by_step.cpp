// Seed 003, "A step to step guide to understand attention mechanisms": two-head self-attention of
// "I love Transformers" (n = 3, d_model = 4, h = 2, d_k = d_v = 2). np.random.seed(0) drives everything:
// randint(10, size=(3, 4)) for the input, then Xavier-uniform W_Q, W_K, W_V (two heads each, in that order)
// and W_O, all regenerated here by the NumPy legacy generator. Heads are computed the way a transformer
// does it (one projection for all heads, reshape and permute to [H, T, D]), and every printed tensor of
// the notebook is checked to its printed precision.
#include <catch2/catch.hpp>

#include <cmath>
#include <xtensor/xmath.hpp>

#include "seeds/numpy_legacy_random.hpp"
#include "seeds/printed.hpp"
#include "seeds/seed_attention.hpp"

using namespace tf;
using namespace tf::seeds;

namespace {

constexpr std::size_t kHeads = 2, kModel = 4, kHead = kModel / kHeads, kSeq = 3;  // h, d_model, d_k, n

struct Example {
  Array<double> input;          // [n, d_model]
  Array<double> w_q, w_k, w_v;  // [h, d_model, d_k] as np.array([xavier_uniform_init(4, 2) for _ in range(h)])
  Array<double> w_o;            // [h * d_v, d_model]
};

// limit = sqrt(6 / (in + out)); np.random.uniform(-limit, limit, (in, out))
Array<double> xavier_uniform(NumpyLegacyRandom& rng, std::size_t in, std::size_t out) {
  const double limit = std::sqrt(6.0 / static_cast<double>(in + out));
  return rng.uniform(-limit, limit, {in, out});
}

Array<double> per_head_xavier(NumpyLegacyRandom& rng) {
  Array<double> w = Array<double>::from_shape({kHeads, kModel, kHead});
  for (std::size_t h = 0; h < kHeads; ++h) {
    const Array<double> one = xavier_uniform(rng, kModel, kHead);
    std::copy(one.begin(), one.end(), w.begin() + static_cast<std::ptrdiff_t>(h * kModel * kHead));
  }
  return w;
}

Example example_seed_0() {
  NumpyLegacyRandom rng(0);
  Example e;
  e.input = rng.randint(10, {kSeq, kModel});
  e.w_q = per_head_xavier(rng);
  e.w_k = per_head_xavier(rng);
  e.w_v = per_head_xavier(rng);
  e.w_o = xavier_uniform(rng, kHeads * kHead, kModel);
  return e;
}

// X W_i for every head i at once: W [H, C, D] -> permute to [C, H, D] -> reshape [C, H*D]; X W [T, H*D]
// -> reshape [T, H, D] -> permute to [H, T, D].
V64 project_heads(const V64& x, const Array<double>& w) {
  const V64 w_all = reshape(permute(constant(w), {1, 0, 2}), {static_cast<long>(kModel), -1});
  const V64 projected = matmul(x, w_all);
  return permute(reshape(projected, {static_cast<long>(kSeq), static_cast<long>(kHeads), -1}), {1, 0, 2});
}

struct Forward {
  V64 q, k, v;       // Q', K', V' [H, T, D]
  V64 weights;       // softmax(Q' K'^T / sqrt(d_k)) [H, T, T]
  V64 weighted;      // weights V' [H, T, D]
  V64 concatenated;  // np.concatenate(weighted, axis=1) [T, H*D]
  V64 output;        // concatenated W_O [T, d_model]
};

Forward forward(const Example& e) {
  Forward f;
  const V64 x = constant(e.input);  // Q = K = V = input_matrix
  f.q = project_heads(x, e.w_q);
  f.k = project_heads(x, e.w_k);
  f.v = project_heads(x, e.w_v);
  f.weights = attention_weights(f.q, f.k);
  f.weighted = matmul(f.weights, f.v);
  std::vector<V64> heads = split(f.weighted, 0, {1, 1});  // [1, T, D] each
  for (auto& h : heads) h = reshape(h, {static_cast<long>(kSeq), static_cast<long>(kHead)});
  f.concatenated = concat(heads, 1);
  f.output = matmul(f.concatenated, constant(e.w_o));
  return f;
}

// A head of an [H, ...] tensor, without the head axis.
Array<double> head(const V64& t, std::size_t i) {
  const Shape s = t.shape();
  const std::vector<V64> parts = split(t, 0, std::vector<std::size_t>(s[0], 1));
  const std::vector<long> shape(s.begin() + 1, s.end());
  return reshape(parts[i], shape).value();
}

}  // namespace

TEST_CASE("seed: input matrix from np.random.seed(0) and randint", "[seeds]") {
  const Example e = example_seed_0();
  check_printed(e.input, R"(Input Matrix = Q = K = V: 
[[5 0 3 3]
 [7 9 3 5]
 [2 4 7 6]])",
                Printed::NumPy);
}

TEST_CASE("seed: Xavier-uniform W_Q of two heads from np.random.seed(0)", "[seeds]") {
  const Example e = example_seed_0();
  check_printed(e.w_q, R"(array([[[-0.88657405, -0.45468741],
        [-0.04466977,  0.62433746],
        [-0.04004566, -0.21443041],
        [ 0.67215753, -0.32520768]],

       [[ 0.29634374, -0.26351692],
        [ 0.91431032, -0.71929844],
        [ 0.74017452, -0.05278391],
        [ 0.6018215 ,  0.04095496]]]))",
                Printed::NumPy);
  CHECK(to_shape(e.w_q.shape()) == Shape{2, 4, 2});
  CHECK(head(constant(e.w_q), 0).shape() == head(constant(e.w_q), 1).shape());
  CHECK(to_shape(head(constant(e.w_q), 0).shape()) == Shape{4, 2});  // W_Q[0].shape
}

TEST_CASE("seed: projected Q', K', V' of two heads", "[seeds]") {
  const Forward f = forward(example_seed_0());
  check_printed(f.q.value(), R"(array([[[-2.53653461, -3.89235132],
        [-3.36739554,  0.16689562],
        [ 1.80079842, -1.86428392]],

       [[ 5.50770678, -1.35307145],
        [15.53283014, -8.27188133],
        [13.0420794 , -3.52798521]]]))",
                Printed::NumPy);
  CHECK(to_shape(head(f.q, 0).shape()) == Shape{3, 2});  // Q_prime[0].shape
  check_printed(head(f.k, 0), R"(K_1_prime: 
[[ 3.18209156 -2.04023375]
 [ 5.26836762 -1.73965563]
 [ 4.67550023 -8.09978892]])",
                Printed::NumPy);
  check_printed(head(f.v, 0), R"(V_1_prime: 
[[ 0.34381182  1.1983878 ]
 [ 6.06952461 -6.1297034 ]
 [ 5.6468306  -2.31171686]])",
                Printed::NumPy);
  check_printed(head(f.k, 1), R"(K_2_prime: 
[[-0.41383514 -2.08497727]
 [-6.48627938 -4.77384381]
 [-8.23726599 -1.59698938]])",
                Printed::NumPy);
  check_printed(head(f.v, 1), R"(V_2_prime: 
[[ 4.22924766  4.64235554]
 [ 2.69400362 -2.69442861]
 [ 3.31644301  4.78472233]])",
                Printed::NumPy);
}

TEST_CASE("seed: scaled attention weights of two heads", "[seeds]") {
  const Forward f = forward(example_seed_0());
  // Entries down to 2.8e-39 are checked to 9 significant digits (NumPy's scientific printing).
  check_printed(f.weights.value(), R"(array([[[8.32207466e-07, 8.62661112e-09, 9.99999159e-01],
        [9.79261626e-01, 7.06124878e-03, 1.36771253e-02],
        [5.06701339e-05, 4.85740226e-04, 9.99463590e-01]],

       [[9.99999999e-01, 7.02243021e-10, 3.67172510e-14],
        [1.00000000e+00, 7.32297340e-23, 2.77013209e-39],
        [1.00000000e+00, 3.91078473e-22, 1.37240079e-32]]]))",
                Printed::NumPy);
  // scaled_attention_scores[0].sum(axis=-1)
  check_printed(sum(constant(head(f.weights, 0)), -1).value(), "array([1., 1., 1.])", Printed::NumPy);
}

TEST_CASE("seed: weighted values of two heads", "[seeds]") {
  const Forward f = forward(example_seed_0());
  check_printed(f.weighted.value(), R"(array([[[ 5.64682619, -2.31171397],
        [ 0.45677255,  1.09863418],
        [ 5.64676721, -2.31339355]],

       [[ 4.22924766,  4.64235554],
        [ 4.22924766,  4.64235554],
        [ 4.22924766,  4.64235554]]]))",
                Printed::NumPy);
}

TEST_CASE("seed: concatenated heads", "[seeds]") {
  const Forward f = forward(example_seed_0());
  check_printed(f.concatenated.value(), R"(array([[ 5.64682619, -2.31171397,  4.22924766,  4.64235554],
       [ 0.45677255,  1.09863418,  4.22924766,  4.64235554],
       [ 5.64676721, -2.31339355,  4.22924766,  4.64235554]]))",
                Printed::NumPy);
  CHECK(f.concatenated.shape() == Shape{3, 4});
  // The transformer way, [H, T, D] -> transpose to [T, H, D] -> reshape [T, H*D], is the same array.
  const V64 merged = reshape(transpose(f.weighted, 0, 1), {static_cast<long>(kSeq), -1});
  CHECK(merged.value() == f.concatenated.value());
}

TEST_CASE("seed: final output projection through W_O", "[seeds]") {
  const Forward f = forward(example_seed_0());
  check_printed(f.output.value(), R"(array([[ 7.3765234 ,  6.13875477,  3.44813173, -0.03779159],
       [ 3.6536207 ,  4.44609421,  5.25015372, -0.89010674],
       [ 7.3761135 ,  6.13921767,  3.44763211, -0.03725722]]))",
                Printed::NumPy);
}
