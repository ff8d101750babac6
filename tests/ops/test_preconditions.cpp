// No undefined behaviour from the public API: every op in ops.hpp, every Var accessor and the optimizers are run on
// bad inputs generated from one table of valid calls (each tensor argument undefined, each of its dimensions set to
// 0, grown by one, an axis added or removed; each axis argument out of range; each scalar parameter outside its
// range). A bad input must give std::invalid_argument naming the op and the argument; a perturbed shape the op
// accepts must give a defined result. The suite also runs this file under ASan and UBSan (the sanitize preset).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/optim/adam.hpp"
#include "tinyformer/optim/clip.hpp"
#include "tinyformer/optim/sgd.hpp"

using namespace tf;

namespace {

using Vars = std::vector<Var<double>>;

// One valid call of a public op: its name (as its messages say it), the names and valid shapes of its tensor
// arguments, and the axes (argument, axis) whose length must agree with another argument or satisfy a rule
// (growing one of those by one must be refused).
struct OpCase {
  std::string op;
  std::vector<std::string> args;
  std::vector<Shape> shapes;
  std::function<Var<double>(const Vars&)> call;
  std::vector<std::pair<std::size_t, std::size_t>> constrained = {};
  std::vector<std::size_t> optional = {};  // arguments that may be an undefined Var (linear's bias: no bias)
};

const IndexArray kIds = {{0, 1, 2}, {4, 3, 0}};  // for embedding: ids [2,3] into a table of 5 rows
const IndexArray kTargets = {0, 2};              // for cross_entropy: logits [2,3] -> targets [2]

// The arithmetic ops: elementwise with scalars and tensors, products, linear layers.
std::vector<OpCase> arithmetic_cases() {
  using P = std::pair<std::size_t, std::size_t>;
  const std::vector<P> both_2d = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
  return {
      {"add", {"a", "b"}, {{2, 3}, {2, 3}}, [](const Vars& v) { return add(v[0], v[1]); }, both_2d},
      {"sub", {"a", "b"}, {{2, 3}, {2, 3}}, [](const Vars& v) { return sub(v[0], v[1]); }, both_2d},
      {"mul", {"a", "b"}, {{2, 3}, {2, 3}}, [](const Vars& v) { return mul(v[0], v[1]); }, both_2d},
      {"div", {"a", "b"}, {{2, 3}, {2, 3}}, [](const Vars& v) { return div(v[0], v[1]); }, both_2d},
      {"add", {"a", "b"}, {{2, 3}, {2, 3}}, [](const Vars& v) { return v[0] + v[1]; }, both_2d},
      {"neg", {"a"}, {{2, 3}}, [](const Vars& v) { return -v[0]; }},
      {"scale", {"a"}, {{2, 3}}, [](const Vars& v) { return v[0] * 0.5; }},
      {"add_scalar", {"a"}, {{2, 3}}, [](const Vars& v) { return 1.0 + v[0]; }},
      {"scalar_div", {"a"}, {{2, 3}}, [](const Vars& v) { return 1.0 / v[0]; }},
      {"matmul", {"a", "b"}, {{2, 3}, {3, 4}}, [](const Vars& v) { return matmul(v[0], v[1]); }, {{0, 1}, {1, 0}}},
      {"matmul",
       {"a", "b"},
       {{3, 2}, {4, 3}},
       [](const Vars& v) { return matmul(v[0], v[1], true, true); },
       {{0, 0}, {1, 1}}},
      {"linear",
       {"x", "weight", "bias"},
       {{2, 3}, {4, 3}, {4}},
       [](const Vars& v) { return linear(v[0], v[1], v[2]); },
       {{0, 1}, {1, 0}, {1, 1}, {2, 0}},
       {2}},
      {"linear_gelu",
       {"x", "weight", "bias"},
       {{2, 3}, {4, 3}, {4}},
       [](const Vars& v) { return linear_gelu(v[0], v[1], v[2]); },
       {{0, 1}, {1, 0}, {1, 1}, {2, 0}},
       {2}},
      {"linear",
       {"x", "weight"},
       {{2, 3}, {4, 3}},
       [](const Vars& v) { return linear(v[0], v[1], Var<double>()); },
       {{0, 1}, {1, 1}}},
  };
}

// The ops that move, cut, join or reduce values.
std::vector<OpCase> shape_cases() {
  return {
      {"permute",
       {"a"},
       {{2, 3}},
       [](const Vars& v) {
         return permute(v[0], {1, 0});
       }},
      {"transpose", {"a"}, {{2, 3}}, [](const Vars& v) { return transpose(v[0], 0, -1); }},
      {"reshape",
       {"a"},
       {{2, 3}},
       [](const Vars& v) {
         return reshape(v[0], {3, 2});
       },
       {{0, 0}, {0, 1}}},
      {"reshape", {"a"}, {{2, 3}}, [](const Vars& v) { return reshape(v[0], {-1}); }},
      {"split",
       {"a"},
       {{2, 3}},
       [](const Vars& v) {
         return split(v[0], 1, {1, 2})[1];
       },
       {{0, 1}}},
      {"concat",
       {"parts[0]", "parts[1]"},
       {{2, 3}, {2, 2}},
       [](const Vars& v) { return concat(v, 1); },
       {{0, 0}, {1, 0}}},
      {"slice", {"a"}, {{2, 3}}, [](const Vars& v) { return slice(v[0], 1, 0, 2); }},
      {"index", {"a"}, {{2, 3}}, [](const Vars& v) { return index(v[0], 1, -1); }},
      {"sum", {"a"}, {{2, 3}}, [](const Vars& v) { return sum(v[0]); }},
      {"sum", {"a"}, {{2, 3}}, [](const Vars& v) { return sum(v[0], 1, true); }},
      {"mean", {"a"}, {{2, 3}}, [](const Vars& v) { return mean(v[0]); }},
      {"mean", {"a"}, {{2, 3}}, [](const Vars& v) { return mean(v[0], -1); }},
      {"sum",
       {"a"},
       {{2, 3}},
       [](const Vars& v) {
         return sum(v[0], std::vector<long>{0, 1}, true);
       }},
      {"var", {"a"}, {{2, 3}}, [](const Vars& v) { return var(v[0], std::vector<long>{-1}); }},
      {"max", {"a"}, {{2, 3}}, [](const Vars& v) { return max(v[0]); }},
      {"min", {"a"}, {{2, 3}}, [](const Vars& v) { return min(v[0], 1).values; }},
      {"unsqueeze", {"a"}, {{2, 3}}, [](const Vars& v) { return unsqueeze(v[0], -1); }},
      {"flatten", {"a"}, {{2, 3}}, [](const Vars& v) { return flatten(v[0]); }},
      {"stack",
       {"parts[0]", "parts[1]"},
       {{2, 3}, {2, 3}},
       [](const Vars& v) { return stack(v, 1); },
       {{0, 0}, {0, 1}, {1, 0}, {1, 1}}},
      {"expand",
       {"a"},
       {{2, 1}},
       [](const Vars& v) {
         return expand(v[0], {3, 2, 4});
       },
       {{0, 0}, {0, 1}}},
      {"index",
       {"a"},
       {{2, 3}},
       [](const Vars& v) {
         return index(v[0], {Slice{}, 2});
       }},
      {"take",
       {"a"},
       {{2, 3}},
       [](const Vars& v) {
         return take(v[0], Array<std::int64_t>{0, -1, 5});
       }},
  };
}

// The elementwise maths, maxima and selections of math.cpp, extrema.cpp and compare.cpp.
std::vector<OpCase> elementwise_cases() {
  using P = std::pair<std::size_t, std::size_t>;
  const std::vector<P> both_2d = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
  static const Var<double> mask(Array<double>{{1, 0, 1}, {0, 0, 1}});
  return {
      {"pow", {"a"}, {{2, 3}}, [](const Vars& v) { return pow(v[0], 1.5); }},
      {"pow", {"a", "b"}, {{2, 3}, {2, 3}}, [](const Vars& v) { return pow(v[0], v[1]); }, both_2d},
      {"sqrt", {"a"}, {{2, 3}}, [](const Vars& v) { return sqrt(v[0]); }},
      {"sigmoid", {"a"}, {{2, 3}}, [](const Vars& v) { return sigmoid(v[0]); }},
      {"abs", {"a"}, {{2, 3}}, [](const Vars& v) { return abs(v[0]); }},
      {"clone", {"a"}, {{2, 3}}, [](const Vars& v) { return clone(v[0]); }},
      {"round", {"a"}, {{2, 3}}, [](const Vars& v) { return round(v[0], 1); }},
      {"floor", {"a"}, {{2, 3}}, [](const Vars& v) { return floor(v[0]); }},
      {"ceil", {"a"}, {{2, 3}}, [](const Vars& v) { return ceil(v[0]); }},
      {"trunc", {"a"}, {{2, 3}}, [](const Vars& v) { return trunc(v[0]); }},
      {"sign", {"a"}, {{2, 3}}, [](const Vars& v) { return sign(v[0]); }},
      {"frac", {"a"}, {{2, 3}}, [](const Vars& v) { return frac(v[0]); }},
      {"sin", {"a"}, {{2, 3}}, [](const Vars& v) { return sin(v[0]); }},
      {"cos", {"a"}, {{2, 3}}, [](const Vars& v) { return cos(v[0]); }},
      {"tan", {"a"}, {{2, 3}}, [](const Vars& v) { return tan(v[0]); }},
      {"log1p", {"a"}, {{2, 3}}, [](const Vars& v) { return log1p(v[0]); }},
      {"expm1", {"a"}, {{2, 3}}, [](const Vars& v) { return expm1(v[0]); }},
      {"erf", {"a"}, {{2, 3}}, [](const Vars& v) { return erf(v[0]); }},
      {"maximum", {"a", "b"}, {{2, 3}, {2, 3}}, [](const Vars& v) { return maximum(v[0], v[1]); }, both_2d},
      {"minimum", {"a", "b"}, {{2, 3}, {2, 3}}, [](const Vars& v) { return minimum(v[0], v[1]); }, both_2d},
      {"where", {"a", "b"}, {{2, 3}, {2, 3}}, [](const Vars& v) { return where(mask, v[0], v[1]); }, both_2d},
      {"masked_fill", {"a"}, {{2, 3}}, [](const Vars& v) { return masked_fill(v[0], mask, -1.0); }, {{0, 0}, {0, 1}}},
  };
}

// Activations, softmax, norms, embedding, the loss, dropout and attention.
std::vector<OpCase> layer_cases() {
  static Rng rng(7);  // dropout's generator (only drawn from; the test checks no values)
  return {
      {"exp", {"a"}, {{2, 3}}, [](const Vars& v) { return exp(v[0]); }},
      {"log", {"a"}, {{2, 3}}, [](const Vars& v) { return log(v[0]); }},
      {"tanh", {"a"}, {{2, 3}}, [](const Vars& v) { return tanh(v[0]); }},
      {"relu", {"a"}, {{2, 3}}, [](const Vars& v) { return relu(v[0]); }},
      {"gelu", {"a"}, {{2, 3}}, [](const Vars& v) { return gelu(v[0]); }},
      {"silu", {"a"}, {{2, 3}}, [](const Vars& v) { return silu(v[0]); }},
      {"swiglu", {"x"}, {{2, 4}}, [](const Vars& v) { return swiglu(v[0]); }, {{0, 1}}},
      {"softmax", {"a"}, {{2, 3}}, [](const Vars& v) { return softmax(v[0]); }},
      {"log_softmax", {"a"}, {{2, 3}}, [](const Vars& v) { return log_softmax(v[0]); }},
      {"causal_mask", {"scores"}, {{2, 3, 3}}, [](const Vars& v) { return causal_mask(v[0]); }},
      {"layer_norm",
       {"x", "weight", "bias"},
       {{2, 3}, {3}, {3}},
       [](const Vars& v) { return layer_norm(v[0], v[1], v[2]); },
       {{0, 1}, {1, 0}, {2, 0}}},
      {"rms_norm",
       {"x", "weight"},
       {{2, 3}, {3}},
       [](const Vars& v) { return rms_norm(v[0], v[1]); },
       {{0, 1}, {1, 0}}},
      {"embedding", {"weight"}, {{5, 3}}, [](const Vars& v) { return embedding(v[0], kIds); }},
      {"cross_entropy", {"logits"}, {{2, 3}}, [](const Vars& v) { return cross_entropy(v[0], kTargets); }, {{0, 0}}},
      {"dropout", {"a"}, {{2, 3}}, [](const Vars& v) { return dropout(v[0], 0.5, true, rng); }},
      {"causal_self_attention",
       {"qkv"},
       {{2, 3, 6}},
       [](const Vars& v) {
         return causal_self_attention(v[0], {2, 0.0, false}, rng);
       },
       {{0, 2}}},
      {"rotary_qk", {"qkv"}, {{2, 3, 12}}, [](const Vars& v) { return rotary_qk(v[0], 2); }, {{0, 2}}},
  };
}

std::vector<OpCase> op_table() {
  std::vector<OpCase> all = arithmetic_cases();
  for (auto* part : {&shape_cases, &layer_cases, &elementwise_cases})
    for (OpCase& c : part()) all.push_back(std::move(c));
  return all;
}

Vars valid_inputs(const OpCase& c) {
  Vars v;
  for (std::size_t i = 0; i < c.shapes.size(); ++i)
    v.emplace_back(test::random_array(c.shapes[i], 100 + i, 0.5, 2.0), true);  // positive: log and 1/x stay finite
  return v;
}

std::string describe(const OpCase& c, std::size_t arg, const std::string& what) {
  return fmt::format(
      "{} (shapes of a valid call: {}): argument '{}' {}", c.op,
      [&] {
        std::string s;
        for (const auto& sh : c.shapes) s += shape_str(sh) + " ";
        return s;
      }(),
      c.args[arg], what);
}

// Runs the call; returns "" when it threw std::invalid_argument whose message has every piece of `expect`,
// otherwise what went wrong.
std::string expect_invalid_argument(const std::function<void()>& f, const std::vector<std::string>& expect) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    for (const auto& piece : expect)
      if (std::string(e.what()).find(piece) == std::string::npos)
        return fmt::format("the message \"{}\" does not contain \"{}\"", e.what(), piece);
    return "";
  } catch (const std::exception& e) {
    return fmt::format("threw another exception type: {}", e.what());
  }
  return "did not throw";
}

// A shape the op may accept or refuse: "" when it refused with std::invalid_argument naming the op, or returned a
// defined result whose backward runs; otherwise what went wrong.
std::string accepted_or_refused(const OpCase& c, const Vars& inputs) {
  try {
    const Var<double> y = c.call(inputs);
    if (!y.defined()) return "returned an undefined Var";
    sum(y).backward();
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find(c.op) == std::string::npos)
      return fmt::format("the message \"{}\" does not name the op", e.what());
  } catch (const std::exception& e) {
    return fmt::format("threw another exception type: {}", e.what());
  }
  return "";
}

}  // namespace

TEST_CASE("preconditions: every op in the table runs and differentiates on its valid inputs", "[ops][preconditions]") {
  for (const OpCase& c : op_table()) {
    INFO(c.op);
    const Vars in = valid_inputs(c);
    const Var<double> y = c.call(in);
    REQUIRE(y.defined());
    CHECK(y.numel() > 0);
    CHECK_NOTHROW(sum(y).backward());
    for (const auto& x : in) CHECK(x.has_grad());
  }
}

TEST_CASE("preconditions: every op refuses an undefined Var in each tensor argument, naming it",
          "[ops][preconditions]") {
  std::size_t checked = 0;
  for (const OpCase& c : op_table())
    for (std::size_t arg = 0; arg < c.args.size(); ++arg) {
      Vars in = valid_inputs(c);
      in[arg] = Var<double>();
      INFO(describe(c, arg, "undefined"));
      if (std::find(c.optional.begin(), c.optional.end(), arg) != c.optional.end())
        CHECK_NOTHROW(sum(c.call(in)).backward());  // optional: undefined means none
      else
        CHECK(expect_invalid_argument([&] { c.call(in); }, {c.op + ": argument '" + c.args[arg] + "'", "undefined"}) ==
              "");
      ++checked;
    }
  CHECK(checked >= 59);
}

TEST_CASE("preconditions: every op refuses a tensor argument with a dimension of size 0, naming it",
          "[ops][preconditions]") {
  std::size_t checked = 0;
  for (const OpCase& c : op_table())
    for (std::size_t arg = 0; arg < c.args.size(); ++arg)
      for (std::size_t axis = 0; axis < c.shapes[arg].size(); ++axis) {
        Vars in = valid_inputs(c);
        Shape s = c.shapes[arg];
        s[axis] = 0;
        in[arg] = Var<double>(Array<double>::from_shape(s), true);
        INFO(describe(c, arg, "with shape " + shape_str(s)));
        CHECK(expect_invalid_argument([&] { c.call(in); },
                                      {c.op + ": argument '" + c.args[arg] + "'", "no elements"}) == "");
        ++checked;
      }
  CHECK(checked >= 100);
}

TEST_CASE("preconditions: a dimension that must agree, grown by one, is refused naming the op",
          "[ops][preconditions]") {
  std::size_t checked = 0;
  for (const OpCase& c : op_table())
    for (const auto& [arg, axis] : c.constrained) {
      Vars in = valid_inputs(c);
      Shape s = c.shapes[arg];
      s[axis] += 1;
      in[arg] = Var<double>(test::random_array(s, 5, 0.5, 2.0), true);
      INFO(describe(c, arg, "with shape " + shape_str(s)));
      CHECK(expect_invalid_argument([&] { c.call(in); }, {c.op}) == "");
      ++checked;
    }
  CHECK(checked >= 30);
}

TEST_CASE("preconditions: any other shape change is either refused naming the op or gives a defined result",
          "[ops][preconditions]") {
  // Each tensor argument: every dimension grown by one, an axis of 2 added in front or at the end, the last axis
  // removed. Under ASan and UBSan this shows that no accepted shape reads or writes outside its buffers.
  for (const OpCase& c : op_table())
    for (std::size_t arg = 0; arg < c.args.size(); ++arg) {
      std::vector<Shape> variants;
      const Shape& s0 = c.shapes[arg];
      for (std::size_t axis = 0; axis < s0.size(); ++axis) {
        Shape s = s0;
        s[axis] += 1;
        variants.push_back(s);
      }
      Shape front = s0, back = s0, fewer = s0;
      front.insert(front.begin(), 2);
      back.push_back(2);
      fewer.pop_back();
      variants.insert(variants.end(), {front, back, fewer});
      for (const Shape& s : variants) {
        Vars in = valid_inputs(c);
        in[arg] = Var<double>(test::random_array(s, 9, 0.5, 2.0), true);
        INFO(describe(c, arg, "with shape " + shape_str(s)));
        CHECK(accepted_or_refused(c, in) == "");
      }
    }
}

TEST_CASE("preconditions: axis arguments out of range are refused naming the op", "[ops][preconditions]") {
  const Var<double> a(test::random_array({2, 3}, 1), true);
  using AxisCall = std::pair<std::string, std::function<void(long)>>;
  const std::vector<AxisCall> calls = {
      {"sum", [&](long ax) { sum(a, ax); }},
      {"mean", [&](long ax) { mean(a, ax, true); }},
      {"transpose", [&](long ax) { transpose(a, ax, 0); }},
      {"transpose", [&](long ax) { transpose(a, 1, ax); }},
      {"split",
       [&](long ax) {
         split(a, ax, {1, 1});
       }},
      {"concat",
       [&](long ax) {
         concat<double>({a, a}, ax);
       }},
      {"slice", [&](long ax) { slice(a, ax, 0, 1); }},
      {"index", [&](long ax) { index(a, ax, 0); }},
      {"sum",
       [&](long ax) {
         sum(a, std::vector<long>{0, ax});
       }},
      {"var", [&](long ax) { var(a, std::vector<long>{ax}); }},
      {"max", [&](long ax) { max(a, ax); }},
      {"argmin", [&](long ax) { argmin(a, ax); }},
      {"squeeze", [&](long ax) { squeeze(a, ax); }},
      {"flatten", [&](long ax) { flatten(a, ax); }},
      {"unbind", [&](long ax) { unbind(a, ax); }},
  };
  for (const auto& [op, call] : calls)
    for (const long ax : {2L, -3L, 100L, -100L, std::numeric_limits<long>::min()}) {
      INFO(op << " with axis " << ax << " on a tensor of shape [2,3]");
      CHECK(expect_invalid_argument([&, &call = call] { call(ax); }, {op}) == "");
    }
}

TEST_CASE("preconditions: scalar parameters outside their range are refused naming the op and the value",
          "[ops][preconditions]") {
  const Var<double> a(test::random_array({2, 3}, 1), true);
  const Var<double> qkv(test::random_array({2, 3, 12}, 2), true);
  const Var<double> c3(test::random_array({3}, 3), true);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Rng rng(1);
  struct Bad {
    std::string op;
    std::function<void()> call;
  };
  std::vector<Bad> bad;
  for (const auto& perm : std::vector<std::vector<std::size_t>>{{0, 0}, {0}, {0, 1, 2}, {2, 0}, {}})
    bad.push_back({"permute", [=] { permute(a, perm); }});
  for (const auto& shape : std::vector<std::vector<long>>{{-1, -1}, {4, 2}, {-2, -3}, {7}, {}, {0, -1}})
    bad.push_back({"reshape", [=] { reshape(a, shape); }});
  for (const auto& sizes : std::vector<std::vector<std::size_t>>{{1, 1}, {3, 1}, {}, {4}})
    bad.push_back({"split", [=] { split(a, 1, sizes); }});
  bad.push_back({"concat", [] { concat(std::vector<Var<double>>{}, 0); }});
  for (const auto& [b, e] : std::vector<std::pair<long, long>>{{0, 0}, {2, 1}, {0, 4}, {-4, 1}, {3, 3}})
    bad.push_back({"slice", [=, b = b, e = e] { slice(a, 1, b, e); }});
  for (const long i : {3L, -4L, 100L}) bad.push_back({"index", [=] { index(a, 1, i); }});
  for (const double p : {-0.1, 1.0, 2.0, nan, inf}) bad.push_back({"dropout", [=, &rng] { dropout(a, p, true, rng); }});
  for (const double eps : {-1.0, inf, nan}) {
    bad.push_back({"layer_norm", [=] { layer_norm(a, c3, c3, eps); }});
    bad.push_back({"rms_norm", [=] { rms_norm(a, c3, eps); }});
  }
  for (const std::size_t heads : {0, 3, 5, 8})
    bad.push_back({"causal_self_attention", [=, &rng] { causal_self_attention(qkv, {heads, 0.0, false}, rng); }});
  for (const double p : {-0.5, 1.0, nan})
    bad.push_back({"causal_self_attention", [=, &rng] { causal_self_attention(qkv, {2, p, true}, rng); }});
  for (const std::size_t heads : {0, 3, 4}) bad.push_back({"rotary_qk", [=] { rotary_qk(qkv, heads); }});
  for (const double base : {0.0, -1.0, nan, inf}) bad.push_back({"rotary_qk", [=] { rotary_qk(qkv, 2, base); }});
  for (const Index t : {3, -2, 100}) bad.push_back({"cross_entropy", [=] { cross_entropy(a, IndexArray{0, t}); }});
  bad.push_back({"cross_entropy", [=] { cross_entropy(a, IndexArray{0, 1, 2}); }});
  bad.push_back({"cross_entropy", [=] { cross_entropy(a, IndexArray::from_shape({0})); }});
  for (const Index id : {5, -1}) bad.push_back({"embedding", [=] { embedding(a, IndexArray{0, id}); }});
  bad.push_back({"embedding", [=] { embedding(reshape(a, {6}), IndexArray{0}); }});
  bad.push_back({"embedding", [=] { embedding(a, IndexArray::from_shape({2, 0})); }});
  bad.push_back({"matmul", [=] { matmul(reshape(a, {6}), a); }});
  for (const Shape& target : std::vector<Shape>{{4}, {2, 2}, {1, 2, 3}, {3, 3}, {2, 3, 1}})
    bad.push_back({"sum_to_shape", [=] { sum_to_shape(a.value(), target); }});
  for (const auto& b : bad) {
    INFO(b.op);
    CHECK(expect_invalid_argument(b.call, {b.op}) == "");
  }
}

TEMPLATE_TEST_CASE("preconditions: every accessor of an undefined Var throws std::invalid_argument", "[autograd]",
                   float, double) {
  Var<TestType> v;
  CHECK_FALSE(v.defined());
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"value", [&] { (void)v.value(); }},
      {"mutable_value", [&] { (void)v.mutable_value(); }},
      {"shape", [&] { (void)v.shape(); }},
      {"dim", [&] { (void)v.dim(); }},
      {"size", [&] { (void)v.size(0); }},
      {"numel", [&] { (void)v.numel(); }},
      {"item", [&] { (void)v.item(); }},
      {"requires_grad", [&] { (void)v.requires_grad(); }},
      {"set_requires_grad", [&] { v.set_requires_grad(true); }},
      {"has_grad", [&] { (void)v.has_grad(); }},
      {"grad", [&] { (void)v.grad(); }},
      {"mutable_grad", [&] { (void)v.mutable_grad(); }},
      {"zero_grad", [&] { v.zero_grad(); }},
      {"retain_grad", [&] { v.retain_grad(); }},
      {"op", [&] { (void)v.op(); }},
      {"backward", [&] { v.backward(); }},
      {"backward(seed)", [&] { v.backward(Array<TestType>{1}); }},
      {"node", [&] { (void)v.node(); }},
  };
  for (const auto& [name, call] : calls) {
    INFO(name);
    CHECK(expect_invalid_argument(call, {"undefined"}) == "");
  }
}

TEST_CASE("preconditions: optimizers and clipping refuse undefined, repeated or empty parameters and bad rates",
          "[optim][preconditions]") {
  const Var<float> w(Array<float>{1.0f, 2.0f}, true), b(Array<float>{0.5f}, true);
  using Params = optim::NamedVars<float>;
  using Make = std::function<void(Params, double)>;
  const std::vector<std::pair<std::string, Make>> optimizers = {
      {"SGD", [](Params p, double lr) { optim::SGD<float>(std::move(p), lr); }},
      {"Adam", [](Params p, double lr) { optim::Adam<float>(std::move(p), lr); }},
      {"AdamW", [](Params p, double lr) { optim::AdamW<float>(std::move(p), lr); }},
  };
  const Var<float> result = w * 2.0f;
  const std::vector<std::pair<std::string, Params>> bad_params = {
      {"an undefined parameter", {{"w", w}, {"b", Var<float>()}}},
      {"no parameters", {}},
      {"a name given twice", {{"w", w}, {"w", b}}},
      {"one Var under two names", {{"w", w}, {"v", w}}},
      {"an empty name", {{"", w}}},
      {"an op result", {{"w", result}}},
  };
  for (const auto& [name, make] : optimizers) {
    for (const auto& [what, params] : bad_params) {
      INFO(name << " with " << what);
      CHECK(expect_invalid_argument([&, &make = make, &params = params] { make(params, 0.1); }, {name}) == "");
    }
    for (const double lr : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
      INFO(name << " with lr " << lr);
      CHECK(expect_invalid_argument([&, &make = make] { make({{"w", w}}, lr); }, {name, "lr"}) == "");
    }
  }
  CHECK(expect_invalid_argument(
            [&] {
              optim::clip_grad_norm<float>(std::vector<Var<float>>{w, Var<float>()}, 1.0);
            },
            {"undefined"}) == "");
}
