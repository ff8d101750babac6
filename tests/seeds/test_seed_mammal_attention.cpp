// Seed 000, "Attention examples" (A. Gitter, 2022): the mammal and reptile queries of the lecture slides,
// a query matrix, self-attention of the animals, and a projected self-attention whose W^Q, W^K, W^V come
// from np.random.seed(775). Every deterministic number the notebook prints is recomputed here with the
// engine's ops in float64 and checked to its printed precision (printed.hpp); the printed text is quoted
// as the notebook shows it.
#include <catch2/catch.hpp>

#include <cmath>
#include <xtensor/xmath.hpp>

#include "seeds/numpy_legacy_random.hpp"
#include "seeds/printed.hpp"
#include "seeds/seed_attention.hpp"

using namespace tf;
using namespace tf::seeds;

namespace {

// The notebook's 1-D vectors are [1, C] rows here: the engine's matmul takes 2-D operands.
struct Animals {
  V64 kitten = constant({{9.1, 1.0, 2.1}});
  V64 lizard = constant({{0.1, 7.5, 4.3}});
  V64 salmon = constant({{1.3, 5.5, 8.2}});
  V64 whale = constant({{7.6, 2.4, 4.0}});
  V64 wolf = constant({{8.5, 2.7, 2.7}});
  V64 mammal = constant({{8.7, 3.2, 4.1}});
  V64 reptile = constant({{2.1, 9.9, 1.6}});
  // keys [5, 3] = np.stack([kitten, lizard, salmon, whale, wolf], axis=0)
  V64 animals = concat(std::vector<V64>{kitten, lizard, salmon, whale, wolf}, 0);
  // values [5, 4]: furry, scaly, slippery, huge, ferocious
  V64 values = constant(
      {{3.4, 1.3, 0.4, 9.8}, {7.5, 3.9, 4.1, 0.2}, {8.3, 2.8, 2.3, 0.1}, {1.6, 8.4, 9.9, 3.4}, {2.2, 9.4, 8.7, 1.1}});
};

// scaling = np.sqrt(len(mammal)); the notebook divides the scores by it.
const double kScaling = std::sqrt(3.0);

// w_q, w_k, w_v = np.random.rand(3, 2) three times after np.random.seed(775).
struct Projections {
  Array<double> w_q, w_k, w_v;
};
Projections projections_seed_775() {
  NumpyLegacyRandom rng(775);
  Projections p;
  p.w_q = rng.rand({3, 2});
  p.w_k = rng.rand({3, 2});
  p.w_v = rng.rand({3, 2});
  return p;
}

const char* const kMammalWeights = R"([1.57823895e-01 1.10228985e-13 1.16042942e-08 1.00599432e-01
 7.41576662e-01])";

}  // namespace

TEST_CASE("seed: mammal query", "[seeds]") {
  const Animals a;
  // print(scaling): a Python float repr, exact.
  CHECK(kScaling == 1.7320508075688772);
  check_printed(a.animals.value(), R"(array([[9.1, 1. , 2.1],
       [0.1, 7.5, 4.3],
       [1.3, 5.5, 8.2],
       [7.6, 2.4, 4. ],
       [8.5, 2.7, 2.7]]))",
                Printed::NumPy);
  const V64 scores = matmul(a.mammal, a.animals, false, true);  // mammal@animals.T [1, 5]
  check_printed(scores.value(), "array([90.98, 42.5 , 62.53, 90.2 , 93.66])", Printed::NumPy);
  const V64 scaled = scale(scores, 1.0 / kScaling);
  check_printed(scaled.value(), "array([52.52732749, 24.53738644, 36.10171233, 52.07699428, 54.07462621])",
                Printed::NumPy);
  const V64 weights = softmax(scaled);
  check_printed(weights.value(), kMammalWeights, Printed::NumPy);
  const V64 output = matmul(weights, a.values);  // [1, 4]
  check_printed(output.value(), "[2.32902909 8.02102694 7.51078092 2.70444657]", Printed::NumPy);
}

TEST_CASE("seed: reptile query", "[seeds]") {
  const Animals a;
  const V64 weights = softmax(scale(matmul(a.reptile, a.animals, false, true), 1.0 / kScaling));
  check_printed(weights.value(), R"([5.25436708e-13 9.98297480e-01 1.70251120e-03 1.47297680e-09
 7.33251915e-09])",
                Printed::NumPy);
  check_printed(matmul(weights, a.values).value(), "[7.50136196 3.89812728 4.09693552 0.19982976]", Printed::NumPy);
}

TEST_CASE("seed: query matrix of mammal and reptile", "[seeds]") {
  const Animals a;
  const V64 query = concat(std::vector<V64>{a.mammal, a.reptile}, 0);  // np.stack([mammal, reptile], axis=0)
  check_printed(query.value(), R"([[8.7 3.2 4.1]
 [2.1 9.9 1.6]])",
                Printed::NumPy);
  // softmax over each row of the [2, 5] scores
  const V64 weights = softmax(scale(matmul(query, a.animals, false, true), 1.0 / kScaling));
  check_printed(weights.value(), R"([[1.57823895e-01 1.10228985e-13 1.16042942e-08 1.00599432e-01
  7.41576662e-01]
 [5.25436708e-13 9.98297480e-01 1.70251120e-03 1.47297680e-09
  7.33251915e-09]])",
                Printed::NumPy);
  const char* const updated = R"(Updated mammal embedding: [2.32902909 8.02102694 7.51078092 2.70444657]
Updated reptile embedding: [7.50136196 3.89812728 4.09693552 0.19982976])";
  const V64 animal_output = matmul(weights, a.values);  // [2, 4]
  check_printed(animal_output.value(), updated, Printed::NumPy);
  // The rows one at a time, as the notebook prints them (animal_output[0], animal_output[1]).
  const std::vector<V64> rows = split(animal_output, 0, {1, 1});
  check_printed(rows[0].value(), "[2.32902909 8.02102694 7.51078092 2.70444657]", Printed::NumPy);
  check_printed(rows[1].value(), "[7.50136196 3.89812728 4.09693552 0.19982976]", Printed::NumPy);

  // The attention(queries, keys, values) function gives the same, and np.isclose(...).all() holds.
  const V64 animal_output2 = attention(query, a.animals, a.values);
  check_printed(animal_output2.value(), updated, Printed::NumPy);
  CHECK(xt::allclose(animal_output.value(), animal_output2.value()));
}

TEST_CASE("seed: self-attention of the animals", "[seeds]") {
  const Animals a;
  const V64 self_output = attention(a.animals, a.animals, a.animals);  // [5, 3]
  // Each printed line is "original <animals[i]> and updated <animal_self_output[i]>": [5, 3 + 3].
  check_printed(concat(std::vector<V64>{a.animals, self_output}, 1).value(),
                R"(kitten	original [9.1 1.  2.1] and updated [8.97593633 1.33207376 2.22679209] embeddings
lizard	original [0.1 7.5 4.3] and updated [0.99832734 6.00278776 7.21956386] embeddings
salmon	original [1.3 5.5 8.2] and updated [1.29999732 5.50000446 8.1999913 ] embeddings
whale	original [7.6 2.4 4. ] and updated [8.47958483 2.29781683 2.78497945] embeddings
wolf	original [8.5 2.7 2.7] and updated [8.6669283  2.1237928  2.54756204] embeddings)",
                Printed::NumPy);
}

TEST_CASE("seed: w_q from np.random.seed(775) by the NumPy legacy generator", "[seeds]") {
  const Animals a;
  const Projections p = projections_seed_775();
  check_printed(p.w_q, R"(array([[0.37573502, 0.24683143],
       [0.24614648, 0.38234858],
       [0.03510655, 0.89775264]]))",
                Printed::NumPy);
  CHECK(to_shape(p.w_q.shape()) == Shape{3, 2});  // w_q.shape
  CHECK(a.animals.shape() == Shape{5, 3});        // animals.shape
}

TEST_CASE("seed: multi-head projections with np.random.seed(775)", "[seeds]") {
  const Animals a;
  const Projections p = projections_seed_775();
  check_printed(matmul(a.animals, constant(p.w_q)).value(), R"(array([[3.73905893, 4.51379518],
       [2.03463026, 6.75263382],
       [2.13013489, 9.78536968],
       [3.58676392, 6.38456605],
       [3.95313086, 5.55434048]]))",
                Printed::NumPy);
  check_printed(matmul(a.animals, constant(p.w_k)).value(), R"(array([[ 8.96561697,  2.8778713 ],
       [ 9.18598435,  6.01216844],
       [12.06063652,  5.9414747 ],
       [10.5822552 ,  4.0030275 ],
       [10.27859483,  4.02849108]]))",
                Printed::NumPy);
  check_printed(matmul(a.animals, constant(p.w_v)).value(), R"(array([[2.18065523, 5.67484759],
       [4.44534671, 5.48037139],
       [7.14038542, 7.99398679],
       [3.76938987, 6.79569809],
       [2.87492446, 6.39373835]]))",
                Printed::NumPy);
}

TEST_CASE("seed: projected self-attention of the animals with np.random.seed(775)", "[seeds]") {
  const Animals a;
  const Projections p = projections_seed_775();
  // attention(animals@w_q, animals@w_k, animals@w_v): the scale is sqrt(len(queries[0])) = sqrt(2).
  const V64 q = matmul(a.animals, constant(p.w_q)), k = matmul(a.animals, constant(p.w_k)),
            v = matmul(a.animals, constant(p.w_v));
  const V64 multi_output = attention(q, k, v);  // [5, 2]
  check_printed(concat(std::vector<V64>{a.animals, multi_output}, 1).value(),
                R"(kitten	original [9.1 1.  2.1] and updated [7.1384725  7.99233055] embeddings
lizard	original [0.1 7.5 4.3] and updated [7.08124031 7.93886421] embeddings
salmon	original [1.3 5.5 8.2] and updated [7.08371845 7.94113509] embeddings
whale	original [7.6 2.4 4. ] and updated [7.1378387  7.99162334] embeddings
wolf	original [8.5 2.7 2.7] and updated [7.13919142 7.99289749] embeddings)",
                Printed::NumPy);
}

TEST_CASE("seed: mammal weights without the 1/sqrt(3) scaling do not match the printed ones", "[seeds]") {
  // The checker must notice a wrong formula: softmax(mammal@animals.T) without the scaling gives
  // [6.2e-02 5.5e-23 2.7e-14 2.9e-02 9.1e-01], far from the printed weights; the scaled ones match.
  const Animals a;
  const V64 scores = matmul(a.mammal, a.animals, false, true);
  CHECK_FALSE(matches_printed(softmax(scores).value(), kMammalWeights, Printed::NumPy));
  CHECK(matches_printed(softmax(scale(scores, 1.0 / kScaling)).value(), kMammalWeights, Printed::NumPy));
  // A near miss is caught too: scaling by 1/sqrt(3.0001) moves the weights by ~1e-5.
  CHECK_FALSE(matches_printed(softmax(scale(scores, 1.0 / std::sqrt(3.0001))).value(), kMammalWeights, Printed::NumPy));
}
