// The autodiff engine's rules: accumulation, deep graphs, leaves, no-grad scope, graph release.
#include <catch2/catch.hpp>

#include "support/helpers.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;

TEST_CASE("autograd: y = x*x + x accumulates both uses of x", "[autograd]") {
  Var<double> x(Array<double>{1.5, -2.0, 3.0}, true);
  Var<double> y = sum(x * x + x);
  y.backward();
  // dy/dx = 2x + 1
  CHECK(x.grad()(0) == Approx(4.0));
  CHECK(x.grad()(1) == Approx(-3.0));
  CHECK(x.grad()(2) == Approx(7.0));
}

TEST_CASE("autograd: a chain of 100,000 ops backpropagates iteratively and frees without recursion", "[autograd]") {
  Var<double> x(Array<double>{1.0}, true);
  Var<double> y = x;
  const int n = 100000;
  for (int i = 0; i < n; ++i) y = scale(y, 1.0) + scale(x, 1e-5);  // dy/dx grows by 1e-5 per link
  Var<double> loss = sum(y);
  loss.backward();
  CHECK(x.grad()(0) == Approx(1.0 + n * 1e-5).epsilon(1e-9));

  // A deep graph that is dropped without backward must also be freed without recursion.
  Var<double> z = x;
  for (int i = 0; i < n; ++i) z = scale(z, 1.0);
  z = Var<double>();
  SUCCEED("dropped a 100,000-op graph");
}

TEST_CASE("autograd: leaves keep .grad across backward calls until zero_grad", "[autograd]") {
  Var<double> w(Array<double>{2.0}, true);
  sum(scale(w, 3.0)).backward();
  sum(scale(w, 3.0)).backward();  // a new graph: gradients add up in the leaf
  CHECK(w.grad()(0) == Approx(6.0));
  w.zero_grad();
  CHECK_FALSE(w.has_grad());
  sum(scale(w, 3.0)).backward();
  CHECK(w.grad()(0) == Approx(3.0));
}

TEST_CASE("autograd: a no-grad scope records nothing", "[autograd]") {
  Var<double> w(Array<double>{2.0}, true);
  Var<double> y;
  {
    NoGradGuard guard;
    y = sum(w * w);
    CHECK_FALSE(grad_enabled());
  }
  CHECK(grad_enabled());
  CHECK_FALSE(y.requires_grad());
  CHECK(y.node().inputs.empty());
  CHECK_THROWS_AS(y.backward(), std::logic_error);
}

TEST_CASE("autograd: the graph is released after backward and a second backward throws", "[autograd]") {
  Var<double> x(Array<double>{3.0}, true);
  Var<double> h = x * x;  // an intermediate result
  Var<double> y = sum(h);
  y.backward();
  CHECK(x.grad()(0) == Approx(6.0));
  CHECK(y.node().inputs.empty());  // graph dropped
  CHECK(h.node().inputs.empty());
  CHECK_FALSE(h.has_grad());  // intermediate gradients freed
  CHECK_THROWS_AS(y.backward(), std::logic_error);
  CHECK(x.grad()(0) == Approx(6.0));  // the failed call changed nothing
}

TEST_CASE("autograd: retain_graph keeps the graph for a second backward, which accumulates", "[autograd]") {
  Var<double> x(Array<double>{3.0}, true);
  Var<double> h = x * x;
  h.retain_grad();
  Var<double> y = sum(h);
  BackwardOptions keep;
  keep.retain_graph = true;
  y.backward(keep);
  CHECK(x.grad()(0) == Approx(6.0));
  CHECK(h.grad()(0) == Approx(1.0));
  y.backward();
  CHECK(x.grad()(0) == Approx(12.0));
  CHECK_THROWS_AS(y.backward(), std::logic_error);
}

TEST_CASE("autograd: backward needs a one-element value or a seed of the value's shape", "[autograd]") {
  Var<double> x(Array<double>{1.0, 2.0}, true);
  Var<double> y = x * x;
  CHECK_THROWS_AS(y.backward(), std::invalid_argument);
  CHECK_THROWS_AS(y.backward(Array<double>{1.0}), std::invalid_argument);
  y.backward(Array<double>{1.0, 10.0});
  CHECK(x.grad()(0) == Approx(2.0));
  CHECK(x.grad()(1) == Approx(40.0));
}

TEST_CASE("autograd: inputs that do not require grad get no gradient", "[autograd]") {
  Var<double> x(Array<double>{1.0, 2.0}, true);
  Var<double> c(Array<double>{5.0, 7.0});
  sum(x * c).backward();
  CHECK(x.grad()(1) == Approx(7.0));
  CHECK_FALSE(c.has_grad());
  CHECK_THROWS_AS(c.grad(), std::logic_error);
}

TEST_CASE("autograd: a large value used three times gets every gradient, copied and added whole at 1 and 2 threads",
          "[autograd][threads]") {
  // 100,003 values: past the size where copies and sums of gradients split over the threads, in pieces whose last
  // one ends off a round number. out = (x + x) + x: the outer add copies the seed into x's gradient (x's first
  // gradient, kept by the caller), the inner add adds it twice more.
  test::ThreadsGuard guard;
  const Array<float> value = test::random_array_f({100003}, 41);
  const Array<float> seed = test::random_array_f({100003}, 42);
  const Array<float> expected = (seed + seed) + seed;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Var<float> x(value, true);
    add(add(x, x), x).backward(seed);
    INFO("threads " << threads);
    CHECK(x.grad() == expected);
  }
}

TEST_CASE("autograd: a backward through an op whose input changed in place since it was read is refused, unchanged",
          "[autograd]") {
  // Each way to change a value in place (mutable_value: optimizers, initialisers, Python's in-place ops) on each kind
  // of input an op reads: a constant, a leaf that requires grad, and an op's result in the middle of the graph.
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    Var<double> x(Array<double>{1.0, 2.0}, true);
    Var<double> c(Array<double>{5.0, 7.0});
    Var<double> h = exp(x);
    Var<double> loss = sum(h * c + x * x);
    sum(scale(x, 3.0)).backward();  // a gradient already in the leaf: the refused call must leave it as it is
    Var<double> changed = which == 0 ? c : which == 1 ? x : h;
    changed.mutable_value()(0) += 1.0;
    try {
      loss.backward();
      FAIL("backward ran on values changed since the forward");
    } catch (const std::runtime_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("was changed in place after"));
    }
    CHECK(x.grad()(0) == Approx(3.0));
    CHECK(x.grad()(1) == Approx(3.0));
  }
  // Changed after the backward, or before the op read it: nothing to refuse.
  Var<double> x(Array<double>{1.0, 2.0}, true);
  x.mutable_value()(1) = 4.0;
  Var<double> loss = sum(x * x);
  loss.backward();
  x.mutable_value()(0) = 0.0;
  CHECK(x.grad()(1) == Approx(8.0));
}

TEST_CASE("autograd: a detached handle shares the values outside the graph", "[autograd]") {
  Var<double> x(Array<double>{1.5, -2.0}, true);
  Var<double> d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(&d.value() == &x.value());  // not copied
  // An op that reads it treats it as a constant: d(x * detach(x))/dx = x, not 2x.
  Var<double> loss = sum(x * d);
  loss.backward();
  CHECK(x.grad()(0) == Approx(1.5));
  CHECK(x.grad()(1) == Approx(-2.0));
  CHECK_FALSE(d.has_grad());
  CHECK_THROWS_AS(sum(d * d).backward(), std::logic_error);  // nothing in it requires a gradient
  // A change through it is a change of x (and of x's version).
  d.mutable_value()(0) = 9.0;
  CHECK(x.value()(0) == 9.0);
  // requires_grad on a detached handle makes it a new leaf (a copy): x is untouched by what reaches it.
  Var<double> leaf = x.detach();
  leaf.set_requires_grad(true);
  sum(leaf * leaf).backward();
  CHECK(leaf.grad()(0) == Approx(18.0));
  CHECK(x.grad()(0) == Approx(1.5));
}

TEST_CASE("autograd: a backward through an op whose own result changed in place since is refused", "[autograd]") {
  // tanh's backward reads its output (1 - y^2): a result changed after the op made it would give it the new values.
  Var<double> x(Array<double>{0.5, -1.0}, true);
  Var<double> y = tanh(x);
  Var<double> loss = sum(y * y);
  y.mutable_value()(0) = 0.0;
  CHECK_THROWS_WITH(loss.backward(), Catch::Contains("the result of 'tanh'") && Catch::Contains("changed in place"));
  CHECK_FALSE(x.has_grad());
}

TEST_CASE("autograd: a hook on an op result sees its whole gradient, and what it leaves flows on to the inputs",
          "[autograd][hooks]") {
  Var<double> x(Array<double>{1.5, -2.0, 3.0}, true);
  Var<double> h = x * x;
  Var<double> y = sum(scale(h, 3.0) + h);  // dy/dh = 4 from two uses, dh/dx = 2x
  std::vector<Array<double>> seen;
  const auto first = h.register_hook([&](Array<double>& g) {
    seen.push_back(g);
    g *= 0.5;
  });
  h.register_hook([&](Array<double>& g) { seen.push_back(g); });  // after the first: sees what it left
  y.backward(BackwardOptions{true});
  REQUIRE(seen.size() == 2);
  CHECK((seen[0] == Array<double>{4.0, 4.0, 4.0}));
  CHECK((seen[1] == Array<double>{2.0, 2.0, 2.0}));
  CHECK((x.grad() == Array<double>{6.0, -8.0, 12.0}));  // 2 * 2x
  h.remove_hook(first);
  h.remove_hook(first);  // a second time: nothing
  y.backward();
  CHECK(seen.size() == 3);
  CHECK((seen[2] == Array<double>{4.0, 4.0, 4.0}));
  CHECK((x.grad() == Array<double>{18.0, -24.0, 36.0}));  // + 4 * 2x
}

TEST_CASE("autograd: a hook on a leaf sees that backward's gradient alone, before it is added to .grad",
          "[autograd][hooks]") {
  Var<double> w(Array<double>{2.0, -1.0}, true);
  sum(scale(w, 3.0)).backward();  // .grad = 3
  std::vector<Array<double>> seen;
  w.register_hook([&](Array<double>& g) {
    seen.push_back(g);
    g = xt::eval(2.0 * g);
  });
  sum(scale(w, 3.0) + w).backward();  // this backward's: 3 + 1, doubled by the hook
  REQUIRE(seen.size() == 1);
  CHECK((seen[0] == Array<double>{4.0, 4.0}));
  CHECK((w.grad() == Array<double>{11.0, 11.0}));  // 3 + 8
}

TEST_CASE("autograd: a hook that throws, or leaves another shape, changes no leaf's gradient and keeps the graph",
          "[autograd][hooks]") {
  Var<double> a(Array<double>{1.0, 2.0}, true), b(Array<double>{3.0, 4.0}, true);
  sum(a).backward();  // a.grad = 1; b has none
  Var<double> y = sum(scale(b, 2.0)) + sum(a * a);
  // b's gradient is made before a's hook runs (a leaf's hook runs once all of its gradient is in)
  const auto id = a.register_hook([](Array<double>&) { throw std::runtime_error("a hook that fails"); });
  CHECK_THROWS_WITH(y.backward(), "a hook that fails");
  CHECK((a.grad() == Array<double>{1.0, 1.0}));
  CHECK_FALSE(b.has_grad());
  a.remove_hook(id);
  const auto wrong = a.register_hook([](Array<double>& g) { g = Array<double>{1.0, 2.0, 3.0}; });
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("must keep the value's shape") && Catch::Contains("shape [2]"));
  CHECK((a.grad() == Array<double>{1.0, 1.0}));
  CHECK_FALSE(b.has_grad());
  a.remove_hook(wrong);
  y.backward();                                  // the graph was kept: it runs now
  CHECK((a.grad() == Array<double>{3.0, 5.0}));  // 1 + 2a
  CHECK((b.grad() == Array<double>{2.0, 2.0}));
}

TEST_CASE("autograd: a hook goes only on a value that requires grad", "[autograd][hooks]") {
  Var<double> c(Array<double>{1.0});
  CHECK_THROWS_AS(c.register_hook([](Array<double>&) {}), std::logic_error);
  Var<double> w(Array<double>{1.0}, true);
  CHECK_THROWS_WITH(w.detach().register_hook([](Array<double>&) {}), Catch::Contains("detached"));
  CHECK_THROWS_AS(w.register_hook(GradHook<double>()), std::invalid_argument);
}
