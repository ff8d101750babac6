// nn::Module: the handle register_parameter returns.
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>

#include <xtensor/xbuilder.hpp>

#include "tinyformer/nn/module.hpp"

using namespace tf;

namespace {
// Registers one parameter, keeps what register_parameter returned (decltype(auto): a Var& if it returned a reference
// into the module's list), registers `more` parameters after it (enough to reallocate any list that held the first),
// then uses the kept handle: with a reference that would read and write freed memory (ASan stops there).
struct ManyParameters : nn::Module<float> {
  explicit ManyParameters(int more) {
    decltype(auto) first = register_parameter("first", xt::ones<float>({3}));
    for (int i = 0; i < more; ++i) register_parameter("p" + std::to_string(i), xt::zeros<float>({2}));
    first_node = first.node_ptr();
    first.mutable_value()(1) = 5.0f;
  }
  NodePtr<float> first_node;
  // A function, so that the class is complete where it is asked (clang refuses it in a data member's initializer).
  static constexpr bool returns_handle() {
    return !std::is_reference_v<decltype(std::declval<ManyParameters&>().register_parameter("", Array<float>()))>;
  }
};
}  // namespace

TEST_CASE("nn: register_parameter returns a handle that stays valid after later registrations", "[nn]") {
  static_assert(ManyParameters::returns_handle(), "register_parameter must return a Var by value, not a reference");
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
