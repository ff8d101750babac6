// Seed 004, "Attention with trainable weights" (PyTorch): simple dot-product attention of six 3-d inputs
// ("Your journey starts with one step"), then trainable W_q, W_k, W_v from torch.manual_seed(123) /
// torch.rand, the SelfAttentionParameter and SelfAttentionLinear classes (nn.Linear(3, 2, bias=False)
// after torch.manual_seed(789)) and exercise 3.1. The weights are regenerated bit for bit by
// TorchCpuGenerator; inputs are the float32 values torch holds (0.43f, ...), widened to double.
// PyTorch computes in float32 and prints 4 decimals; here everything runs in float64, which differs from the
// float32 results by ~1e-7, well inside the printing's 5e-5 (the closest printed entry leaves 1e-7 spare).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "seeds/printed.hpp"
#include "seeds/seed_attention.hpp"
#include "seeds/torch_cpu_random.hpp"

using namespace tf;
using namespace tf::seeds;

namespace {

// inputs [6, 3]: Your, journey, starts, with, one, step (float32, as torch.tensor makes them)
V64 inputs() {
  const float x[6][3] = {{0.43f, 0.15f, 0.89f}, {0.55f, 0.87f, 0.66f}, {0.57f, 0.85f, 0.64f},
                         {0.22f, 0.58f, 0.33f}, {0.77f, 0.25f, 0.10f}, {0.05f, 0.80f, 0.55f}};
  Array<double> a = Array<double>::from_shape({6, 3});
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 3; ++j) a(i, j) = static_cast<double>(x[i][j]);
  return constant(a);
}

V64 journey(const V64& x) { return split(x, 0, {1, 1, 4})[1]; }  // inputs[1] as [1, 3]

const char* const kJourneyScores = "tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])";
const char* const kJourneyWeights = "tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])";

// context_vectors of the trainable attention: printed by cell 16 and again by SelfAttentionParameter (cell 41).
const char* const kTrainableContext = R"(tensor([[0.2996, 0.8053],
        [0.3061, 0.8210],
        [0.3058, 0.8203],
        [0.2948, 0.7939],
        [0.2927, 0.7891],
        [0.2990, 0.8040]])";

const char* const kLinearContext = R"(tensor([[-0.0739,  0.0713],
        [-0.0748,  0.0703],
        [-0.0749,  0.0702],
        [-0.0760,  0.0685],
        [-0.0763,  0.0679],
        [-0.0754,  0.0693]], grad_fn=<MmBackward0>))";

// SelfAttentionParameter: W_q, W_k, W_v [d_in, d_out] used as x W.
struct SelfAttentionParameter {
  V64 w_q, w_k, w_v;
  // torch.manual_seed(seed) then torch.rand(d_in, d_out) for W_q, W_k, W_v in that order.
  static SelfAttentionParameter from_seed(std::uint64_t seed, std::size_t d_in, std::size_t d_out) {
    TorchCpuGenerator g(seed);
    SelfAttentionParameter m;
    m.w_q = constant(g.rand({d_in, d_out}));
    m.w_k = constant(g.rand({d_in, d_out}));
    m.w_v = constant(g.rand({d_in, d_out}));
    return m;
  }
  // x [T, d_in] -> context [T, d_out]: softmax(q k^T / sqrt(d_out)) v
  V64 forward(const V64& x) const {
    const V64 keys = matmul(x, w_k), queries = matmul(x, w_q), values = matmul(x, w_v);
    return attention(queries, keys, values);
  }
};

// SelfAttentionLinear: nn.Linear weights [d_out, d_in] used as x W^T (a matmul transpose flag).
struct SelfAttentionLinear {
  V64 w_q, w_k, w_v;
  static SelfAttentionLinear from_seed(std::uint64_t seed, std::size_t d_in, std::size_t d_out) {
    TorchCpuGenerator g(seed);
    SelfAttentionLinear m;
    m.w_q = constant(g.linear_weight(d_in, d_out));
    m.w_k = constant(g.linear_weight(d_in, d_out));
    m.w_v = constant(g.linear_weight(d_in, d_out));
    return m;
  }
  V64 forward(const V64& x) const {
    const V64 keys = matmul(x, w_k, false, true), queries = matmul(x, w_q, false, true),
              values = matmul(x, w_v, false, true);
    return attention(queries, keys, values);
  }
};

}  // namespace

TEST_CASE("seed: attention scores of the query 'journey'", "[seeds]") {
  const V64 x = inputs(), query = journey(x);
  // The naive loop: dot_product(query, x_i) = sum_k query_k x_ik, as mul + sum.
  check_printed(sum(mul(x, query), -1).value(), kJourneyScores, Printed::Torch);
  // torch.dot(x_i, query) for every i: one product with a transpose flag.
  check_printed(matmul(query, x, false, true).value(), kJourneyScores, Printed::Torch);
}

TEST_CASE("seed: attention weights of 'journey' normalised by their sum", "[seeds]") {
  const V64 x = inputs();
  const V64 scores = matmul(journey(x), x, false, true);
  const V64 weights = div(scores, sum(scores));
  // print(attention_weights, sum(attention_weights)), naive and idiomatic
  check_printed(concat(std::vector<V64>{weights, reshape(sum(weights), {1, 1})}, 1).value(),
                "tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656]) tensor(1.0000)", Printed::Torch);
  check_printed(sum(weights).value(), "tensor(1.)", Printed::Torch);
}

TEST_CASE("seed: softmax attention weights and context vector of 'journey'", "[seeds]") {
  const V64 x = inputs();
  const V64 scores = matmul(journey(x), x, false, true);
  // Naive: torch.exp(x) / torch.exp(x).sum()
  check_printed(div(exp(scores), sum(exp(scores))).value(), kJourneyWeights, Printed::Torch);
  const V64 weights = softmax(scores);  // torch.softmax(attention_scores, dim=0)
  check_printed(weights.value(), kJourneyWeights, Printed::Torch);
  // z = sum_i a_i x_i
  check_printed(matmul(weights, x).value(), "tensor([0.4419, 0.6515, 0.5683])", Printed::Torch);
}

TEST_CASE("seed: attention weights and context vectors of all inputs", "[seeds]") {
  const V64 x = inputs();
  check_printed(x.value(), R"(tensor([[0.4300, 0.1500, 0.8900],
        [0.5500, 0.8700, 0.6600],
        [0.5700, 0.8500, 0.6400],
        [0.2200, 0.5800, 0.3300],
        [0.7700, 0.2500, 0.1000],
        [0.0500, 0.8000, 0.5500]]))",
                Printed::Torch);
  const V64 weights = softmax(matmul(x, x, false, true));  // row i: softmax(inputs @ x_i)
  check_printed(weights.value(), R"(tensor([[0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],
        [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
        [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
        [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],
        [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
        [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896]]))",
                Printed::Torch);
  const V64 context = matmul(weights, x);
  check_printed(context.value(), R"(tensor([[0.4421, 0.5931, 0.5790],
        [0.4419, 0.6515, 0.5683],
        [0.4431, 0.6496, 0.5671],
        [0.4304, 0.6298, 0.5510],
        [0.4671, 0.5910, 0.5266],
        [0.4177, 0.6503, 0.5645]]))",
                Printed::Torch);
  // print(attention_weights @ inputs): the notebook text is cut off after "[0.4177, 0.6503, 0."; the 17
  // complete numbers are checked (the 18th is the 0.5645 above).
  Array<double> first17 = Array<double>::from_shape({17});
  std::copy_n(context.value().begin(), 17, first17.begin());
  check_printed(first17, R"(tensor([[0.4421, 0.5931, 0.5790],
        [0.4419, 0.6515, 0.5683],
        [0.4431, 0.6496, 0.5671],
        [0.4304, 0.6298, 0.5510],
        [0.4671, 0.5910, 0.5266],
        [0.4177, 0.6503,)",
                Printed::Torch);
}

TEST_CASE("seed: W_q, W_k, W_v from torch.manual_seed(123) by the torch CPU generator", "[seeds]") {
  const SelfAttentionParameter m = SelfAttentionParameter::from_seed(123, 3, 2);
  check_printed(m.w_q.value(), R"(Parameter containing:
tensor([[0.2961, 0.5166],
        [0.2517, 0.6886],
        [0.0740, 0.8665]]))",
                Printed::Torch);
  check_printed(m.w_k.value(), R"(Parameter containing:
tensor([[0.1366, 0.1025],
        [0.1841, 0.7264],
        [0.3153, 0.6871]]))",
                Printed::Torch);
  check_printed(m.w_v.value(), R"(Parameter containing:
tensor([[0.0756, 0.1966],
        [0.3164, 0.4017],
        [0.1186, 0.8274]]))",
                Printed::Torch);
}

TEST_CASE("seed: query, key and value projections with torch.manual_seed(123)", "[seeds]") {
  const SelfAttentionParameter m = SelfAttentionParameter::from_seed(123, 3, 2);
  const V64 x = inputs(), x_2 = journey(x);
  check_printed(matmul(x_2, m.w_q).value(), "tensor([0.4306, 1.4551])", Printed::Torch);
  check_printed(matmul(x_2, m.w_k).value(), "tensor([0.4433, 1.1419])", Printed::Torch);
  check_printed(matmul(x_2, m.w_v).value(), "tensor([0.3951, 1.0037])", Printed::Torch);
  check_printed(matmul(x, m.w_k).value(), R"(tensor([[0.3669, 0.7646],
        [0.4433, 1.1419],
        [0.4361, 1.1156],
        [0.2408, 0.6706],
        [0.1827, 0.3292],
        [0.3275, 0.9642]]))",
                Printed::Torch);
  check_printed(matmul(x, m.w_v).value(), R"(tensor([[0.1855, 0.8812],
        [0.3951, 1.0037],
        [0.3879, 0.9831],
        [0.2393, 0.5493],
        [0.1492, 0.3346],
        [0.3221, 0.7863]]))",
                Printed::Torch);
  check_printed(matmul(x, m.w_q).value(), R"(tensor([[0.2309, 1.0966],
        [0.4306, 1.4551],
        [0.4300, 1.4343],
        [0.2355, 0.7990],
        [0.2983, 0.6565],
        [0.2568, 1.0533]]))",
                Printed::Torch);
}

TEST_CASE("seed: trainable attention scores, scaled softmax weights and context vectors", "[seeds]") {
  const SelfAttentionParameter m = SelfAttentionParameter::from_seed(123, 3, 2);
  const V64 x = inputs();
  const V64 keys = matmul(x, m.w_k), values = matmul(x, m.w_v), queries = matmul(x, m.w_q);
  const V64 scores = matmul(queries, keys, false, true);  // attention_scores[i] = keys @ query_i
  check_printed(scores.value(), R"(tensor([[0.9231, 1.3545, 1.3241, 0.7910, 0.4032, 1.1330],
        [1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440],
        [1.2544, 1.8284, 1.7877, 1.0654, 0.5508, 1.5238],
        [0.6973, 1.0167, 0.9941, 0.5925, 0.3061, 0.8475],
        [0.6114, 0.8819, 0.8626, 0.5121, 0.2707, 0.7307],
        [0.8995, 1.3165, 1.2871, 0.7682, 0.3937, 1.0996]]))",
                Printed::Torch);
  const V64 weights = softmax(scale(scores, 1.0 / std::sqrt(2.0)));  // d_k = 2
  check_printed(weights.value(), R"(tensor([[0.1551, 0.2104, 0.2059, 0.1413, 0.1074, 0.1799],
        [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820],
        [0.1503, 0.2256, 0.2192, 0.1315, 0.0914, 0.1819],
        [0.1591, 0.1994, 0.1962, 0.1477, 0.1206, 0.1769],
        [0.1610, 0.1949, 0.1923, 0.1501, 0.1265, 0.1752],
        [0.1557, 0.2092, 0.2048, 0.1419, 0.1089, 0.1794]]))",
                Printed::Torch);
  check_printed(matmul(weights, values).value(), kTrainableContext, Printed::Torch);
}

TEST_CASE("seed: SelfAttentionParameter with torch.manual_seed(123)", "[seeds]") {
  const SelfAttentionParameter sap = SelfAttentionParameter::from_seed(123, 3, 2);
  check_printed(sap.forward(inputs()).value(), kTrainableContext, Printed::Torch);
}

TEST_CASE("seed: SelfAttentionLinear with torch.manual_seed(789)", "[seeds]") {
  const SelfAttentionLinear sal = SelfAttentionLinear::from_seed(789, 3, 2);
  CHECK(sal.w_q.shape() == Shape{2, 3});  // nn.Linear weight [out, in]
  check_printed(sal.forward(inputs()).value(), kLinearContext, Printed::Torch);
}

TEST_CASE("seed: exercise 3.1, SelfAttentionParameter with the transposed Linear weights", "[seeds]") {
  const SelfAttentionLinear sal = SelfAttentionLinear::from_seed(789, 3, 2);
  SelfAttentionParameter sap = SelfAttentionParameter::from_seed(123, 3, 2);
  // sap.W_q = nn.Parameter(sal.W_q.weight.T), ...: a materialised transpose, used as x W.
  sap.w_q = transpose(sal.w_q, 0, 1);
  sap.w_k = transpose(sal.w_k, 0, 1);
  sap.w_v = transpose(sal.w_v, 0, 1);
  const V64 x = inputs();
  const Array<double> a = sap.forward(x).value(), b = sal.forward(x).value();
  check_printed(a, kLinearContext, Printed::Torch);
  check_printed(b, kLinearContext, Printed::Torch);
  // assert a.equal(b): the transposed copy and the transpose flag give bitwise the same result.
  CHECK(a == b);
}
