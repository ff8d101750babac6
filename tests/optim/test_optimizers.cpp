// SGD, Adam and AdamW against (a) the update formulas written out here in float64 as plain loops and
// (b) literal values from torch 1.13 (torch.optim.*, foreach=False, float32) on the same tensors and gradients.
// Also: skipped parameters, zero_grad, set_lr, checkpoint state round trip and validation, decay groups.
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tinyformer/optim/adam.hpp"
#include "tinyformer/optim/clip.hpp"
#include "tinyformer/optim/param_groups.hpp"
#include "tinyformer/optim/sgd.hpp"

using namespace tf;
using namespace tf::optim;

namespace {

// The fixture: w [2,3] and b [3]; the gradient at step k (k = 0, 1, 2) is G + k*D (all values exact in float).
const std::vector<double> kW0 = {0.5, -1.25, 2.0, -0.75, 1.5, 0.25};
const std::vector<double> kB0 = {0.625, -0.375, 1.125};
const std::vector<double> kGW = {0.25, -0.5, 0.75, 1.0, -0.125, 0.375};
const std::vector<double> kDW = {-0.5, 0.25, 0.125, 0.375, 0.5, -1.0};
const std::vector<double> kGB = {0.5, 0.25, -0.75};
const std::vector<double> kDB = {-0.25, 0.375, 0.5};

// Values of w (6, row-major) then b (3) after each of the 3 steps.
using Trajectory = std::array<std::array<double, 9>, 3>;

double grad_at(int k, std::size_t j) {  // element j of the concatenated (w, b) gradient at step k
  return j < 6 ? kGW[j] + k * kDW[j] : kGB[j - 6] + k * kDB[j - 6];
}

template <class S>
Array<S> make_array(const std::vector<double>& v, const Shape& shape) {
  Array<S> a = Array<S>::from_shape(shape);
  for (std::size_t i = 0; i < v.size(); ++i) a.data()[i] = static_cast<S>(v[i]);
  return a;
}

template <class S>
struct Params {
  Var<S> w{make_array<S>(kW0, {2, 3}), true};
  Var<S> b{make_array<S>(kB0, {3}), true};
  // Group 0 holds w (weight decay wd_w), group 1 holds b (wd_b).
  std::vector<ParamGroup<S>> groups(double wd_w, double wd_b) const {
    return {ParamGroup<S>{{{"w", w}}, wd_w}, ParamGroup<S>{{{"b", b}}, wd_b}};
  }
  void set_grads(int k) {
    Array<S> gw = Array<S>::from_shape({2, 3}), gb = Array<S>::from_shape({3});
    for (std::size_t j = 0; j < 6; ++j) gw.data()[j] = static_cast<S>(grad_at(k, j));
    for (std::size_t j = 0; j < 3; ++j) gb.data()[j] = static_cast<S>(grad_at(k, 6 + j));
    w.mutable_grad() = gw;
    b.mutable_grad() = gb;
  }
  std::array<double, 9> values() const {
    std::array<double, 9> out{};
    for (std::size_t j = 0; j < 6; ++j) out[j] = static_cast<double>(w.value().data()[j]);
    for (std::size_t j = 0; j < 3; ++j) out[6 + j] = static_cast<double>(b.value().data()[j]);
    return out;
  }
};

template <class S>
Trajectory run_three_steps(Optimizer<S>& opt, Params<S>& ps) {
  Trajectory t{};
  for (int k = 0; k < 3; ++k) {
    ps.set_grads(k);
    opt.step();
    t[k] = ps.values();
  }
  return t;
}

// ---- the reference formulas, float64, one element at a time (independent of the library code) ----

// torch.optim.SGD: d = g + wd*p; buf = d (first step) | mu*buf + (1-tau)*d; d = nesterov ? d + mu*buf : buf;
// p -= lr*d. wd_w applies to w's elements (0..5), wd_b to b's (6..8).
Trajectory sgd_reference(double lr, double mu, double tau, bool nesterov, double wd_w, double wd_b) {
  Trajectory t{};
  std::array<double, 9> p{}, buf{};
  for (std::size_t j = 0; j < 9; ++j) p[j] = j < 6 ? kW0[j] : kB0[j - 6];
  for (int k = 0; k < 3; ++k) {
    for (std::size_t j = 0; j < 9; ++j) {
      const double wd = j < 6 ? wd_w : wd_b;
      double d = grad_at(k, j) + wd * p[j];
      if (mu != 0) {
        buf[j] = (k == 0) ? d : mu * buf[j] + (1 - tau) * d;
        d = nesterov ? d + mu * buf[j] : buf[j];
      }
      p[j] -= lr * d;
    }
    t[k] = p;
  }
  return t;
}

// Adam (decoupled = false): g += wd*p. AdamW (decoupled = true): p *= 1 - lr*wd. Then
// m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; m_hat = m/(1-b1^t); v_hat = v/(1-b2^t);
// p -= lr * m_hat / (sqrt(v_hat) + eps).
Trajectory adam_reference(double lr, double b1, double b2, double eps, bool decoupled, double wd_w, double wd_b) {
  Trajectory t{};
  std::array<double, 9> p{}, m{}, v{};
  for (std::size_t j = 0; j < 9; ++j) p[j] = j < 6 ? kW0[j] : kB0[j - 6];
  for (int k = 0; k < 3; ++k) {
    const int step = k + 1;
    for (std::size_t j = 0; j < 9; ++j) {
      const double wd = j < 6 ? wd_w : wd_b;
      double g = grad_at(k, j);
      if (decoupled)
        p[j] *= 1 - lr * wd;
      else
        g += wd * p[j];
      m[j] = b1 * m[j] + (1 - b1) * g;
      v[j] = b2 * v[j] + (1 - b2) * g * g;
      const double m_hat = m[j] / (1 - std::pow(b1, step));
      const double v_hat = v[j] / (1 - std::pow(b2, step));
      p[j] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
    t[k] = p;
  }
  return t;
}

void check_trajectory(const Trajectory& got, const Trajectory& want, double rel, const char* what) {
  for (int k = 0; k < 3; ++k)
    for (std::size_t j = 0; j < 9; ++j) {
      INFO(what << ": after step " << (k + 1) << ", element " << j << (j < 6 ? " of w" : " of b"));
      CHECK(got[k][j] == Approx(want[k][j]).epsilon(rel));
    }
}

const double kFloatRel = 1e-6;

}  // namespace

// The torch literals below come from this script (/usr/bin/python3, torch 1.13), one `make` per test:
//   import torch
//   W0 = [[0.5, -1.25, 2.0], [-0.75, 1.5, 0.25]]; B0 = [0.625, -0.375, 1.125]
//   GW = [[0.25, -0.5, 0.75], [1.0, -0.125, 0.375]]; DW = [[-0.5, 0.25, 0.125], [0.375, 0.5, -1.0]]
//   GB = [0.5, 0.25, -0.75]; DB = [-0.25, 0.375, 0.5]
//   def run(make, wd_w, wd_b):
//       w = torch.tensor(W0, requires_grad=True); b = torch.tensor(B0, requires_grad=True)
//       opt = make([{"params": [w], "weight_decay": wd_w}, {"params": [b], "weight_decay": wd_b}])
//       for k in range(3):
//           w.grad = torch.tensor(GW) + k * torch.tensor(DW); b.grad = torch.tensor(GB) + k * torch.tensor(DB)
//           opt.step(); print(w.detach().flatten().tolist() + b.detach().tolist())   # printed with %.9g

TEST_CASE("optim: SGD without momentum matches torch.optim.SGD and the formula over 3 steps", "[optim]") {
  // make = lambda g: torch.optim.SGD(g, lr=0.1, foreach=False); run(make, 0.0, 0.0)
  const Trajectory torch_values = {
      {{0.474999994, -1.20000005, 1.92499995, -0.850000024, 1.51250005, 0.212500006, 0.574999988, -0.400000006,
        1.20000005},
       {0.5, -1.17500007, 1.83749998, -0.987500012, 1.47500002, 0.275000006, 0.550000012, -0.462500006, 1.22500002},
       {0.574999988, -1.17500007, 1.73749995, -1.16250002, 1.38750005, 0.4375, 0.550000012, -0.5625, 1.20000005}}};
  Params<float> ps;
  SGD<float> opt(ps.groups(0.0, 0.0), 0.1);
  const Trajectory got = run_three_steps(opt, ps);
  check_trajectory(got, sgd_reference(0.1, 0.0, 0.0, false, 0.0, 0.0), kFloatRel, "formula");
  check_trajectory(got, torch_values, kFloatRel, "torch");
  CHECK(opt.state_tensors().empty());  // plain SGD keeps no state
  CHECK(opt.step_count() == 3);
}

TEST_CASE("optim: SGD with momentum 0.9 matches torch.optim.SGD and the formula over 3 steps", "[optim]") {
  // make = lambda g: torch.optim.SGD(g, lr=0.1, momentum=0.9, foreach=False); run(make, 0.0, 0.0)
  const Trajectory torch_values = {
      {{0.474999994, -1.20000005, 1.92499995, -0.850000024, 1.51250005, 0.212500006, 0.574999988, -0.400000006,
        1.20000005},
       {0.477499992, -1.13, 1.76999998, -1.07749999, 1.48625004, 0.241250008, 0.504999995, -0.485000014, 1.29250002},
       {0.554749966, -1.06700003, 1.53049994, -1.45725, 1.37512505, 0.429625005, 0.442000002, -0.661500037,
        1.35074997}}};
  Params<float> ps;
  SGD<float> opt(ps.groups(0.0, 0.0), 0.1, SgdOptions{0.9, 0.0, false});
  const Trajectory got = run_three_steps(opt, ps);
  check_trajectory(got, sgd_reference(0.1, 0.9, 0.0, false, 0.0, 0.0), kFloatRel, "formula");
  check_trajectory(got, torch_values, kFloatRel, "torch");
}

TEST_CASE("optim: SGD with Nesterov momentum matches torch.optim.SGD and the formula over 3 steps", "[optim]") {
  // make = lambda g: torch.optim.SGD(g, lr=0.1, momentum=0.9, nesterov=True, foreach=False); run(make, 0.0, 0.0)
  const Trajectory torch_values = {{{0.452499986, -1.15499997, 1.85749996, -0.939999998, 1.52374995, 0.178750008,
                                     0.529999971, -0.422500014, 1.26750004},
                                    {0.479749978, -1.06699991, 1.63049996, -1.28225005, 1.46262491, 0.26712501,
                                     0.441999972, -0.561500013, 1.37575006},
                                    {0.624274969, -1.01029992, 1.31494999, -1.79902506, 1.27511239, 0.599162519,
                                     0.385299981, -0.820349991, 1.40317512}}};
  Params<float> ps;
  SGD<float> opt(ps.groups(0.0, 0.0), 0.1, SgdOptions{0.9, 0.0, true});
  const Trajectory got = run_three_steps(opt, ps);
  check_trajectory(got, sgd_reference(0.1, 0.9, 0.0, true, 0.0, 0.0), kFloatRel, "formula");
  check_trajectory(got, torch_values, kFloatRel, "torch");
}

TEST_CASE("optim: SGD with weight decay (first group only) and dampening matches torch.optim.SGD and the formula",
          "[optim]") {
  // make = lambda g: torch.optim.SGD(g, lr=0.1, momentum=0.9, dampening=0.25, foreach=False); run(make, 0.1, 0.0)
  const Trajectory torch_values = {
      {{0.469999999, -1.1875, 1.90499997, -0.842500031, 1.49749994, 0.209999993, 0.574999988, -0.400000006, 1.20000005},
       {0.458224982, -1.10359371, 1.73958743, -1.0225563, 1.45589364, 0.219299987, 0.511249959, -0.469375014, 1.28625},
       {0.500440776, -1.01980114, 1.50266922, -1.30818772, 1.34190381, 0.347900242, 0.453874975, -0.606812537,
        1.34512496}}};
  Params<float> ps;
  SGD<float> opt(ps.groups(0.1, 0.0), 0.1, SgdOptions{0.9, 0.25, false});
  const Trajectory got = run_three_steps(opt, ps);
  check_trajectory(got, sgd_reference(0.1, 0.9, 0.25, false, 0.1, 0.0), kFloatRel, "formula");
  check_trajectory(got, torch_values, kFloatRel, "torch");
}

TEST_CASE("optim: Adam with L2 weight decay matches torch.optim.Adam and the formula over 3 steps", "[optim]") {
  // eps = 1e-3 makes the placement of eps (after the bias correction of v) visible at this tolerance.
  // make = lambda g: torch.optim.Adam(g, lr=0.05, eps=1e-3, foreach=False); run(make, 0.1, 0.0)
  const Trajectory torch_values = {{{0.450166106, -1.20007992, 1.95005262, -0.79994601, 1.45192313, 0.200124681,
                                     0.575099826, -0.424800783, 1.17493343},
                                    {0.443531871, -1.15238547, 1.9000355, -0.849650145, 1.41325665, 0.212670237,
                                     0.528608501, -0.471687675, 1.21840882},
                                    {0.469522208, -1.110991, 1.84990275, -0.899271786, 1.37122917, 0.245745569,
                                     0.492690951, -0.518395662, 1.24082041}}};
  Params<float> ps;
  Adam<float> opt(ps.groups(0.1, 0.0), 0.05, AdamOptions{0.9, 0.999, 1e-3});
  const Trajectory got = run_three_steps(opt, ps);
  check_trajectory(got, adam_reference(0.05, 0.9, 0.999, 1e-3, false, 0.1, 0.0), kFloatRel, "formula");
  check_trajectory(got, torch_values, kFloatRel, "torch");
}

TEST_CASE("optim: AdamW with decoupled weight decay matches torch.optim.AdamW and the formula over 3 steps",
          "[optim]") {
  // make = lambda g: torch.optim.AdamW(g, lr=0.05, betas=(0.9, 0.95), foreach=False); run(make, 0.1, 0.0)
  const Trajectory torch_values = {{{0.44749999, -1.19375002, 1.94000006, -0.796250045, 1.54250002, 0.198750004,
                                     0.574999988, -0.425000012, 1.17499995},
                                    {0.447894067, -1.14081669, 1.88034344, -0.841871858, 1.51032269, 0.212348282,
                                     0.528035343, -0.471563578, 1.21899807},
                                    {0.474883139, -1.09833944, 1.82102108, -0.886963844, 1.46653736, 0.244419992,
                                     0.491262108, -0.517596662, 1.24187517}}};
  Params<float> ps;
  AdamW<float> opt(ps.groups(0.1, 0.0), 0.05, AdamOptions{0.9, 0.95, 1e-8});
  const Trajectory got = run_three_steps(opt, ps);
  check_trajectory(got, adam_reference(0.05, 0.9, 0.95, 1e-8, true, 0.1, 0.0), kFloatRel, "formula");
  check_trajectory(got, torch_values, kFloatRel, "torch");
}

TEST_CASE("optim: the double instantiations of SGD, Adam and AdamW match the float64 formulas to 1e-12", "[optim]") {
  {
    Params<double> ps;
    SGD<double> opt(ps.groups(0.1, 0.0), 0.1, SgdOptions{0.9, 0.0, true});
    check_trajectory(run_three_steps(opt, ps), sgd_reference(0.1, 0.9, 0.0, true, 0.1, 0.0), 1e-12, "SGD double");
  }
  {
    Params<double> ps;
    Adam<double> opt(ps.groups(0.1, 0.0), 0.05, AdamOptions{0.9, 0.999, 1e-3});
    check_trajectory(run_three_steps(opt, ps), adam_reference(0.05, 0.9, 0.999, 1e-3, false, 0.1, 0.0), 1e-12,
                     "Adam double");
  }
  {
    Params<double> ps;
    AdamW<double> opt(ps.groups(0.1, 0.0), 0.05, AdamOptions{0.8, 0.95, 1e-3});
    check_trajectory(run_three_steps(opt, ps), adam_reference(0.05, 0.8, 0.95, 1e-3, true, 0.1, 0.0), 1e-12,
                     "AdamW double");
  }
}

TEST_CASE("optim: a parameter without a gradient is skipped by step() and gets no state", "[optim]") {
  Params<float> ps;
  AdamW<float> opt(ps.groups(0.1, 0.1), 0.05);
  ps.set_grads(0);
  ps.b.zero_grad();  // b has no gradient on the first step
  const Array<float> b_before = ps.b.value();
  opt.step();
  CHECK(ps.b.value() == b_before);  // untouched: not even the decoupled decay
  CHECK(ps.w.value() != make_array<float>(kW0, {2, 3}));
  std::vector<std::string> names;
  for (const auto& [name, a] : opt.state_tensors()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"step.w", "exp_avg.w", "exp_avg_sq.w"});

  // Next step b has a gradient: its own step counter starts at 1 (bias correction as on a first step), as in
  // torch, where each parameter keeps its own state['step'].
  ps.set_grads(0);
  opt.step();
  for (const auto& [name, a] : opt.state_tensors()) {
    if (name == "step.w") CHECK(a() == 2.0f);
    if (name == "step.b") CHECK(a() == 1.0f);
  }
  // b after one AdamW step with gradient G_b: p*(1 - lr*wd) - lr*g/(|g| + eps) per element.
  for (std::size_t j = 0; j < 3; ++j) {
    const double p = kB0[j] * (1 - 0.05 * 0.1), g = kGB[j];
    CHECK(ps.b.value()(j) == Approx(p - 0.05 * g / (std::abs(g) + 1e-8)).epsilon(kFloatRel));
  }
  CHECK(opt.step_count() == 2);
}

TEST_CASE("optim: zero_grad drops the gradient of every parameter", "[optim]") {
  Params<float> ps;
  SGD<float> opt(ps.groups(0.0, 0.0), 0.1);
  ps.set_grads(1);
  REQUIRE(ps.w.has_grad());
  REQUIRE(ps.b.has_grad());
  opt.zero_grad();
  CHECK_FALSE(ps.w.has_grad());
  CHECK_FALSE(ps.b.has_grad());
  const Array<float> w_before = ps.w.value();
  opt.step();  // nothing to do
  CHECK(ps.w.value() == w_before);
}

TEST_CASE("optim: set_lr changes the step size of the next step and lr() reports it", "[optim]") {
  Params<float> ps;
  SGD<float> opt(ps.groups(0.0, 0.0), 0.1);
  CHECK(opt.lr() == 0.1);
  opt.set_lr(0.5);
  CHECK(opt.lr() == 0.5);
  ps.set_grads(0);
  opt.step();
  for (std::size_t j = 0; j < 6; ++j) CHECK(ps.w.value().data()[j] == Approx(kW0[j] - 0.5 * kGW[j]).epsilon(kFloatRel));
  CHECK_THROWS_AS(opt.set_lr(-1e-3), std::invalid_argument);
  CHECK_THROWS_AS(opt.set_lr(std::nan("")), std::invalid_argument);
  CHECK(opt.lr() == 0.5);
}

TEST_CASE("optim: AdamW from a parameter list defaults to weight decay 0.01, Adam and SGD to 0", "[optim]") {
  Params<float> ps;
  NamedVars<float> list = {{"w", ps.w}, {"b", ps.b}};
  AdamW<float> adamw(list);
  Adam<float> adam(list);
  SGD<float> sgd(list, 0.1);
  REQUIRE(adamw.param_groups().size() == 1);
  CHECK(adamw.param_groups()[0].weight_decay == 0.01);
  CHECK(adam.param_groups()[0].weight_decay == 0.0);
  CHECK(sgd.param_groups()[0].weight_decay == 0.0);
  CHECK(adamw.lr() == 1e-3);
  CHECK(adamw.options().beta1 == 0.9);
  CHECK(adamw.options().beta2 == 0.999);
  CHECK(adamw.options().eps == 1e-8);
  CHECK(std::string(adamw.name()) == "AdamW");
}

namespace {
// Runs `make` twice: A steps with gradients 0, 1, 2; B steps with 0, 1, then is replaced by a fresh optimizer on
// copies of the parameters that loads A-after-2-steps' state. Both then take step 3 and must agree exactly.
template <class MakeOpt>
void check_state_round_trip(MakeOpt make) {
  Params<float> a;
  auto opt_a = make(a);
  a.set_grads(0);
  opt_a->step();
  a.set_grads(1);
  opt_a->step();
  const NamedArrays<float> saved = opt_a->state_tensors();
  const std::int64_t saved_count = opt_a->step_count();
  REQUIRE_FALSE(saved.empty());

  Params<float> b;
  b.w.mutable_value() = a.w.value();
  b.b.mutable_value() = a.b.value();
  auto opt_b = make(b);
  opt_b->load_state(saved, saved_count);
  CHECK(opt_b->step_count() == 2);
  const NamedArrays<float> loaded = opt_b->state_tensors();
  REQUIRE(loaded.size() == saved.size());
  for (std::size_t i = 0; i < saved.size(); ++i) {
    CHECK(loaded[i].first == saved[i].first);
    CHECK(loaded[i].second == saved[i].second);
  }

  Params<float> fresh;  // the same parameters without the state: a different third step
  fresh.w.mutable_value() = a.w.value();
  fresh.b.mutable_value() = a.b.value();
  auto opt_fresh = make(fresh);

  for (Params<float>* p : {&a, &b, &fresh}) p->set_grads(2);
  opt_a->step();
  opt_b->step();
  opt_fresh->step();
  CHECK(a.w.value() == b.w.value());  // bitwise
  CHECK(a.b.value() == b.b.value());
  CHECK(a.w.value() != fresh.w.value());
  CHECK(opt_b->step_count() == 3);
}
}  // namespace

TEST_CASE("optim: SGD momentum state export/import round trip gives identical subsequent steps", "[optim]") {
  check_state_round_trip([](Params<float>& p) {
    return std::make_unique<SGD<float>>(p.groups(0.1, 0.0), 0.1, SgdOptions{0.9, 0.0, true});
  });
  Params<float> p;
  SGD<float> opt(p.groups(0.0, 0.0), 0.1, SgdOptions{0.9, 0.0, false});
  p.set_grads(0);
  opt.step();
  std::vector<std::string> names;
  for (const auto& [name, a] : opt.state_tensors()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"momentum_buffer.w", "momentum_buffer.b"});
}

TEST_CASE("optim: Adam and AdamW state export/import round trip gives identical subsequent steps", "[optim]") {
  check_state_round_trip([](Params<float>& p) {
    return std::make_unique<Adam<float>>(p.groups(0.1, 0.0), 0.05, AdamOptions{0.9, 0.999, 1e-3});
  });
  check_state_round_trip([](Params<float>& p) { return std::make_unique<AdamW<float>>(p.groups(0.1, 0.0), 0.05); });
}

TEST_CASE("optim: load_state throws listing every mismatched name and shape and changes nothing", "[optim]") {
  Params<float> ps;
  Adam<float> opt(ps.groups(0.0, 0.0), 0.05);
  ps.set_grads(0);
  opt.step();
  const NamedArrays<float> before = opt.state_tensors();

  auto zeros = [](const Shape& s) { return Array<float>(Array<float>::from_shape(s) * 0.0f); };
  Array<float> one = Array<float>::from_shape({});
  one() = 1.0f;
  const NamedArrays<float> bad = {
      {"step.w", one},
      {"exp_avg.w", zeros({3, 2})},  // wrong shape
      {"exp_avg_sq.w", zeros({2, 3})},
      {"exp_avg.nope", zeros({2, 3})},    // no such parameter
      {"momentum_buffer.b", zeros({3})},  // not an Adam state kind
      {"step.b", one},
      {"exp_avg.b", zeros({3})},  // exp_avg_sq.b missing
  };
  std::string message;
  try {
    opt.load_state(bad, 1);
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  INFO(message);
  REQUIRE_FALSE(message.empty());
  CHECK_THAT(message, Catch::Contains("the Adam state does not fit this optimizer"));
  CHECK_THAT(message, Catch::Contains("4 problems"));
  CHECK_THAT(message, Catch::Contains("'exp_avg.w' has shape [3, 2] but needs [2, 3]"));
  CHECK_THAT(message, Catch::Contains("'exp_avg.nope'"));
  CHECK_THAT(message, Catch::Contains("'momentum_buffer.b'"));
  CHECK_THAT(message, Catch::Contains("missing 'exp_avg_sq.b'"));
  const NamedArrays<float> after = opt.state_tensors();
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) CHECK(after[i].second == before[i].second);

  // Other refusals: a duplicate, a step counter that is not a whole number >= 1, a negative step count,
  // no state at all after steps, and any state for plain SGD.
  NamedArrays<float> dup = before;
  dup.push_back(before[0]);
  CHECK_THROWS_WITH(opt.load_state(dup, 1), Catch::Contains("'step.w' appears more than once"));
  NamedArrays<float> zero_step = before;
  zero_step[0].second() = 0.5f;
  CHECK_THROWS_WITH(opt.load_state(zero_step, 1), Catch::Contains("'step.w' = 0.5 must be a whole number >= 1"));
  CHECK_THROWS_WITH(opt.load_state(before, -1), Catch::Contains("step_count = -1 must be >= 0"));
  CHECK_THROWS_WITH(opt.load_state({}, 5), Catch::Contains("no state tensor at all"));
  Params<float> q;
  SGD<float> plain(q.groups(0.0, 0.0), 0.1);
  CHECK_THROWS_WITH(plain.load_state({{"momentum_buffer.w", zeros({2, 3})}}, 1),
                    Catch::Contains("unexpected tensor 'momentum_buffer.w'"));
  CHECK_NOTHROW(plain.load_state({}, 7));
  CHECK(plain.step_count() == 7);
  CHECK_NOTHROW(opt.load_state({}, 0));  // back to a fresh optimizer
  CHECK(opt.state_tensors().empty());
}

TEST_CASE("optim: constructors reject bad hyper-parameters and duplicate or non-leaf parameters", "[optim]") {
  Params<float> ps;
  CHECK_THROWS_WITH(SGD<float>(ps.groups(0.0, 0.0), -0.1), Catch::Contains("lr must be"));
  CHECK_THROWS_WITH(SGD<float>(ps.groups(-0.5, 0.0), 0.1), Catch::Contains("param_groups[0].weight_decay"));
  CHECK_THROWS_WITH(SGD<float>(ps.groups(0.0, 0.0), 0.1, SgdOptions{0.0, 0.0, true}), Catch::Contains("nesterov"));
  CHECK_THROWS_WITH(SGD<float>(ps.groups(0.0, 0.0), 0.1, SgdOptions{0.9, 0.1, true}), Catch::Contains("nesterov"));
  CHECK_THROWS_WITH(SGD<float>(ps.groups(0.0, 0.0), 0.1, SgdOptions{-0.9, 0.0, false}), Catch::Contains("momentum"));
  CHECK_THROWS_WITH(Adam<float>(ps.groups(0.0, 0.0), 1e-3, AdamOptions{1.0, 0.999, 1e-8}), Catch::Contains("beta1"));
  CHECK_THROWS_WITH(AdamW<float>(ps.groups(0.0, 0.0), 1e-3, AdamOptions{0.9, -0.1, 1e-8}), Catch::Contains("beta2"));
  CHECK_THROWS_WITH(Adam<float>(ps.groups(0.0, 0.0), 1e-3, AdamOptions{0.9, 0.999, -1.0}), Catch::Contains("eps"));
  CHECK_THROWS_WITH(Adam<float>(NamedVars<float>{{"w", ps.w}, {"w2", ps.w}}),
                    Catch::Contains("'w' and 'w2' are the same Var"));
  CHECK_THROWS_WITH(Adam<float>(NamedVars<float>{{"w", ps.w}, {"w", ps.b}}), Catch::Contains("'w' appears twice"));
  CHECK_THROWS_WITH(Adam<float>(NamedVars<float>{}), Catch::Contains("empty parameter list"));
  Var<float> op_result = make_result<float>(
      ps.w.value(), {ps.w}, [](Node<float>&) {}, "copy");
  CHECK_THROWS_WITH(Adam<float>(NamedVars<float>{{"x", op_result}}), Catch::Contains("not a leaf"));
}

TEST_CASE("optim: make_param_groups splits nanoGPT names by decay rule", "[optim]") {
  auto param = [](const Shape& s) { return Var<float>(Array<float>::from_shape(s), true); };
  Var<float> wte = param({16, 8});
  const NamedVars<float> named = {
      {"transformer.wte.weight", wte},
      {"transformer.wpe.weight", param({4, 8})},
      {"transformer.h.0.ln_1.weight", param({8})},
      {"transformer.h.0.ln_1.bias", param({8})},
      {"transformer.h.0.attn.c_attn.weight", param({24, 8})},
      {"transformer.h.0.attn.c_attn.bias", param({24})},
      {"lm_head.weight", param({16, 8})},
  };
  auto names = [](const ParamGroup<float>& g) {
    std::vector<std::string> out;
    for (const auto& [n, p] : g.params) out.push_back(n);
    return out;
  };
  using Names = std::vector<std::string>;

  auto groups = make_param_groups(named, 0.1);  // default rule: matrices_no_embeddings
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].weight_decay == 0.1);
  CHECK(groups[1].weight_decay == 0.0);
  CHECK(names(groups[0]) == Names{"transformer.h.0.attn.c_attn.weight", "lm_head.weight"});
  CHECK(names(groups[1]) == Names{"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
                                  "transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.bias"});

  groups = make_param_groups(named, 0.1, DecayRule::matrices);  // nanoGPT: every 2-D parameter
  CHECK(names(groups[0]) == Names{"transformer.wte.weight", "transformer.wpe.weight",
                                  "transformer.h.0.attn.c_attn.weight", "lm_head.weight"});
  CHECK(names(groups[1]) ==
        Names{"transformer.h.0.ln_1.weight", "transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.bias"});

  groups = make_param_groups(named, 0.1, DecayRule::all);
  CHECK(groups[0].params.size() == 7);
  CHECK(groups[1].params.empty());
  groups = make_param_groups(named, 0.1, DecayRule::none);
  CHECK(groups[0].params.empty());
  CHECK(groups[1].params.size() == 7);

  // A tied weight listed twice is kept once, under its first name; the groups feed an optimizer directly.
  NamedVars<float> tied = named;
  tied.emplace_back("lm_head_tied.weight", wte);
  groups = make_param_groups(tied, 0.1, DecayRule::matrices);
  CHECK(names(groups[0]).size() == 4);
  CHECK_NOTHROW(AdamW<float>(groups, 1e-3));

  CHECK_THROWS_AS(make_param_groups(named, -0.1), std::invalid_argument);
}
