// nn::Module: the reference register_parameter returns, set_parameter (tying), the names it refuses, sub-modules
// destroyed after registration and cycles of registration. The last two were seen failing on the library before their
// check (934b397^): a destroyed sub-module crashed the walk (SIGSEGV), a cycle was accepted and its walk never ended.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <xtensor/xbuilder.hpp>

#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/nn/module.hpp"

using namespace tf;

namespace {
// Registers one parameter, keeps the reference register_parameter returned (into the module's list), registers `more`
// parameters after it (enough to reallocate a std::vector that held the first), then uses the kept reference: into a
// list that moves its elements it would read and write freed memory (ASan stops there; the sanitize build runs this).
struct ManyParameters : nn::Module<float> {
  explicit ManyParameters(int more) {
    decltype(auto) first = register_parameter("first", xt::ones<float>({3}));
    for (int i = 0; i < more; ++i) register_parameter("p" + std::to_string(i), xt::zeros<float>({2}));
    first_node = first.node_ptr();
    first.mutable_value()(1) = 5.0f;
  }
  NodePtr<float> first_node;
};
}  // namespace

TEST_CASE("nn: register_parameter returns a reference that stays valid after later registrations", "[nn]") {
  ManyParameters m(100);
  const auto named = m.named_parameters();
  REQUIRE(named.size() == 101);
  REQUIRE(named[0].first == "first");
  CHECK(m.first_node == named[0].second.node_ptr());  // the registered parameter itself, not a copy of its value
  CHECK(named[0].second.value()(1) == 5.0f);          // the write through the handle reached it
  CHECK(named[0].second.requires_grad());
}

namespace {
struct Registrar : nn::Module<float> {
  using nn::Module<float>::register_parameter;
  using nn::Module<float>::register_module;
};
}  // namespace

TEST_CASE("nn: register_parameter and register_module refuse names a checkpoint cannot hold and empty values",
          "[nn][preconditions]") {
  const std::vector<std::string> bad_names = {"", "a.b", ".", "w", "child"};  // the last two are taken below
  for (const std::string& name : bad_names) {
    Registrar m, child, other;
    m.register_parameter("w", xt::ones<float>({2}));
    m.register_module("child", child);
    INFO("name '" << name << "'");
    CHECK_THROWS_AS(m.register_parameter(name, xt::ones<float>({2})), std::invalid_argument);
    CHECK_THROWS_AS(m.register_module(name, other), std::invalid_argument);
    CHECK(m.named_parameters().size() == 1);  // nothing was added
  }
  Registrar m;
  for (const Shape& empty : std::vector<Shape>{{0}, {3, 0}, {0, 2}})
    CHECK_THROWS_WITH(m.register_parameter("weight", Array<float>::from_shape(empty)),
                      Catch::Contains("'weight'") && Catch::Contains("no elements"));
  CHECK_THROWS_AS(m.register_module("self", m), std::invalid_argument);
}

namespace {
// A chain of `levels` modules, each holding one parameter and the next level in a std::unique_ptr member, as a model
// built layer by layer holds its layers: root.next.next ... Destroying level d (d >= 1) resets the pointer one level
// above it, the way a user replaces or drops a layer after registering it.
struct Chain : nn::Module<float> {
  using nn::Module<float>::register_module;
  explicit Chain(int levels) {
    register_parameter("w", xt::ones<float>({2}));
    if (levels > 1) {
      next = std::make_unique<Chain>(levels - 1);
      register_module("next", *next);
    }
  }
  void destroy_level(int d) {
    Chain* above = this;
    for (int i = 1; i < d; ++i) above = above->next.get();
    above->next.reset();
  }
  std::unique_ptr<Chain> next;
};

std::string path_of_level(int d) {
  std::string path = "next";
  for (int i = 1; i < d; ++i) path += ".next";
  return path;
}
}  // namespace

TEST_CASE("nn: a registered sub-module destroyed at any depth is named by every call that walks the modules",
          "[nn][preconditions]") {
  using Call = std::pair<const char*, void (*)(Chain&)>;
  const std::vector<Call> calls = {
      {"named_parameters", [](Chain& m) { (void)m.named_parameters(); }},
      {"parameters", [](Chain& m) { (void)m.parameters(); }},
      {"num_parameters", [](Chain& m) { (void)m.num_parameters(); }},
      {"zero_grad", [](Chain& m) { m.zero_grad(); }},
      {"train", [](Chain& m) { m.train(); }},
      {"eval", [](Chain& m) { m.eval(); }},
  };
  for (int levels = 2; levels <= 4; ++levels)
    for (int d = 1; d < levels; ++d)
      for (const auto& [call, run] : calls) {
        Chain m(levels);
        REQUIRE(m.named_parameters().size() == static_cast<std::size_t>(levels));
        m.destroy_level(d);
        INFO(levels << " levels, level " << d << " destroyed, " << call);
        CHECK_THROWS_AS(run(m), std::invalid_argument);
        CHECK_THROWS_WITH(run(m), Catch::Contains("'" + path_of_level(d) + "'") && Catch::Contains("destroyed"));
        CHECK(m.training());  // eval() and train() changed nothing before throwing
      }
}

TEST_CASE("nn: register_module refuses a module that contains the one registering it (a cycle)",
          "[nn][preconditions]") {
  for (int levels = 2; levels <= 4; ++levels) {  // one level is the module itself, refused as such above
    Chain top(levels);
    Chain* bottom = &top;
    while (bottom->next) bottom = bottom->next.get();
    Registrar outer;
    INFO(levels << " levels");
    CHECK_THROWS_WITH(bottom->register_module("loop", top), Catch::Contains("'loop'") && Catch::Contains("cycle"));
    CHECK(top.named_parameters().size() == static_cast<std::size_t>(levels));  // nothing was added
    outer.register_module("top", top);  // a module may be registered by one that does not contain it
    CHECK_THROWS_WITH(bottom->register_module("loop", outer), Catch::Contains("cycle"));
  }
}

namespace {
template <class M>
constexpr bool never_unbuilt() {
  return !std::is_default_constructible_v<M> && !std::is_copy_constructible_v<M> && !std::is_move_constructible_v<M> &&
         !std::is_copy_assignable_v<M> && !std::is_move_assignable_v<M>;
}
}  // namespace

TEST_CASE("nn: no library module can be default-constructed, copied or moved, so none exists half built",
          "[nn][preconditions]") {
  // Each constructor checks its arguments and builds every parameter; no moved-from or empty state is reachable.
  STATIC_REQUIRE(never_unbuilt<nn::Linear<float>>());
  STATIC_REQUIRE(never_unbuilt<nn::Embedding<float>>());
  STATIC_REQUIRE(never_unbuilt<nn::Norm<float>>());
  STATIC_REQUIRE(never_unbuilt<nn::CausalSelfAttention<float>>());
  STATIC_REQUIRE(never_unbuilt<nn::MLP<float>>());
  STATIC_REQUIRE(never_unbuilt<nn::Block<float>>());
  STATIC_REQUIRE(never_unbuilt<nn::GPT<double>>());
  // The base alone can be made empty (a user's module starts so), but not copied or moved away from its registrations.
  STATIC_REQUIRE(!std::is_copy_constructible_v<nn::Module<float>> && !std::is_move_constructible_v<nn::Module<float>>);
}

TEST_CASE("nn: named_children lists the direct sub-modules in the order registered, as torch's", "[nn]") {
  config::ModelConfig cfg;
  cfg.vocab_size = 11;
  cfg.context = 8;
  cfg.d_model = 16;
  cfg.n_head = 2;
  cfg.n_layer = 2;
  nn::GPT<float> gpt(cfg, 1);
  std::vector<std::string> names;
  for (const auto& [name, child] : gpt.named_children()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"transformer", "lm_head"});
  std::vector<std::string> block;
  for (const auto& [name, child] : gpt.block(1).named_children()) block.push_back(name);
  CHECK(block == std::vector<std::string>{"ln_1", "attn", "ln_2", "mlp"});
  CHECK(gpt.block(1).named_children()[1].second == &gpt.block(1).attn);
  // the parameters are the children's, under their names: the same walk as named_parameters
  std::size_t n = 0;
  for (const auto& [name, child] : gpt.named_children()) n += child->num_parameters();
  CHECK(n == gpt.num_parameters());
}

TEST_CASE("nn: set_parameter ties a weight: one node, trained once, listed once, refused when it cannot fit", "[nn]") {
  // nanoGPT's tying, lm_head.weight = wte.weight, between two library modules.
  Rng rng(3);
  nn::Embedding<double> wte(5, 4, rng);
  nn::Linear<double> head(4, 5, false, nn::InitScheme::normal, 7);
  head.set_parameter("weight", wte.weight());
  CHECK(head.weight().node_ptr() == wte.weight().node_ptr());
  // The head computes with the shared weight, and both uses reach it: d/dW of sum(head(wte(ids))).
  const IndexArray ids = {1, 3};
  Var<double> loss = sum(head.forward(wte.forward(ids)));
  loss.backward();
  const Array<double>& w = wte.weight().value();
  Array<double> expected = xt::zeros<double>({5, 4});
  for (std::size_t t = 0; t < 2; ++t)
    for (std::size_t v = 0; v < 5; ++v)
      for (std::size_t c = 0; c < 4; ++c) {
        expected(v, c) += w(ids(t), c);  // through the head: x_t
        expected(ids(t), c) += w(v, c);  // through the embedding: sum over v of W[v]
      }
  CHECK(xt::allclose(wte.weight().grad(), expected));
  // A module holding both lists the shared weight once (torch's named_parameters()).
  struct Tied : nn::Module<double> {
    using nn::Module<double>::register_module;
  } model;
  model.register_module("wte", wte);
  model.register_module("lm_head", head);
  const auto named = model.named_parameters();
  REQUIRE(named.size() == 1);
  CHECK(named[0].first == "wte.weight");
  // Refused, with nothing changed: no such parameter, another shape, an op's result, a constant, a detached handle.
  nn::Linear<double> other(4, 6, true, nn::InitScheme::normal, 1);
  const NodePtr<double> before = other.weight().node_ptr();
  CHECK_THROWS_WITH(other.set_parameter("scale", wte.weight()), Catch::Contains("no parameter 'scale'"));
  CHECK_THROWS_WITH(other.set_parameter("weight", wte.weight()), Catch::Contains("shape [5, 4] differs"));
  Var<double> w6(Array<double>(xt::ones<double>({6, 4})), true);
  CHECK_THROWS_AS(other.set_parameter("weight", scale(w6, 2.0)), std::invalid_argument);
  CHECK_THROWS_AS(other.set_parameter("weight", Var<double>(Array<double>(xt::ones<double>({6, 4})))),
                  std::invalid_argument);
  CHECK_THROWS_AS(other.set_parameter("weight", w6.detach()), std::invalid_argument);
  CHECK(other.weight().node_ptr() == before);
  other.set_parameter("weight", w6);
  CHECK(other.weight().node_ptr() == w6.node_ptr());
}
