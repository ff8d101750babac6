// Adam (L2 weight decay added to the gradient) and AdamW (decoupled weight decay), exactly torch 1.13's
// single-tensor torch.optim.Adam / torch.optim.AdamW (amsgrad, maximize off).
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/arrays.hpp"
#include "tinyformer/optim/adam.hpp"

namespace tf::optim {

namespace {

template <class S>
std::vector<typename Optimizer<S>::StateKind> adam_state_kinds(const AdamOptions& o, const char* name) {
  if (!(o.beta1 >= 0 && o.beta1 < 1))
    throw std::invalid_argument(fmt::format("{}: beta1 must be in [0, 1), got {}", name, o.beta1));
  if (!(o.beta2 >= 0 && o.beta2 < 1))
    throw std::invalid_argument(fmt::format("{}: beta2 must be in [0, 1), got {}", name, o.beta2));
  if (!(std::isfinite(o.eps) && o.eps >= 0))
    throw std::invalid_argument(fmt::format("{}: eps must be a finite number >= 0, got {}", name, o.eps));
  // "step" is a float counter, like torch's state['step'] (a float32 tensor in torch 1.13).
  return {{"step", true}, {"exp_avg", false}, {"exp_avg_sq", false, true}};
}

}  // namespace

template <class S>
Adam<S>::Adam(std::vector<ParamGroup<S>> groups, double lr, AdamOptions options, bool decoupled, const char* name)
    : Optimizer<S>(std::move(groups), lr, name, adam_state_kinds<S>(options, name)),
      options_(options),
      decoupled_(decoupled) {}

template <class S>
Adam<S>::Adam(std::vector<ParamGroup<S>> groups, double lr, AdamOptions options)
    : Adam(std::move(groups), lr, options, false, "Adam") {}

template <class S>
Adam<S>::Adam(NamedVars<S> params, double lr, AdamOptions options, double weight_decay)
    : Adam(std::vector<ParamGroup<S>>{ParamGroup<S>{std::move(params), weight_decay}}, lr, options, false, "Adam") {}

template <class S>
AdamW<S>::AdamW(std::vector<ParamGroup<S>> groups, double lr, AdamOptions options)
    : Adam<S>(std::move(groups), lr, options, true, "AdamW") {}

template <class S>
AdamW<S>::AdamW(NamedVars<S> params, double lr, AdamOptions options, double weight_decay)
    : Adam<S>(std::vector<ParamGroup<S>>{ParamGroup<S>{std::move(params), weight_decay}}, lr, options, true, "AdamW") {}

// With t = this parameter's step count after the increment, in float64:
//   bias_correction1 = 1 - beta1^t,  bias_correction2 = 1 - beta2^t,  step_size = lr / bias_correction1
// then per element, with the scalars rounded to S (m = exp_avg, v = exp_avg_sq):
//   AdamW:  p = p * (1 - lr*wd)                 (decoupled decay, before the moments)
//   Adam:   g = g + wd*p                        (L2, only when wd != 0)
//   m = m*beta1 + (1 - beta1)*g
//   v = v*beta2 + (1 - beta2)*g*g
//   denom = sqrt(v) / sqrt(bias_correction2) + eps
//   p = p - step_size * m / denom
// i.e. the textbook p -= lr * m_hat / (sqrt(v_hat) + eps) with m_hat = m / bias_correction1 and
// v_hat = v / bias_correction2, evaluated in torch's order (which decides the float rounding).
// p, g, m, v: the parameter's shape; step: shape [].
template <class S>
void Adam<S>::update(Array<S>& param, const Array<S>& grad, double weight_decay, std::vector<Array<S>>& state,
                     bool /*first: m and v start at zero*/) {
  S& step = state[0]();
  step += 1;
  const double t = static_cast<double>(step);
  const double lr = this->lr();
  const double bias_correction1 = 1.0 - std::pow(options_.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(options_.beta2, t);
  kernels::AdamStep<S> k{};
  k.neg_step_size = static_cast<S>(-(lr / bias_correction1));
  k.bias_correction2_sqrt = static_cast<S>(std::sqrt(bias_correction2));
  k.beta1 = static_cast<S>(options_.beta1);
  k.one_minus_beta1 = static_cast<S>(1.0 - options_.beta1);
  k.beta2 = static_cast<S>(options_.beta2);
  k.one_minus_beta2 = static_cast<S>(1.0 - options_.beta2);
  k.eps = static_cast<S>(options_.eps);
  k.wd = static_cast<S>(weight_decay);
  k.decay_factor = static_cast<S>(1.0 - lr * weight_decay);
  k.l2 = !decoupled_ && weight_decay != 0;
  k.decoupled = decoupled_ && weight_decay != 0;  // p * 1 would change nothing
  // elementwise, so any split over the threads gives the same bits (kernels/arrays.hpp, kernels/adam_step.hpp)
  kernels::adam_update<S>(param.size(), k, grad.data(), param.data(), state[1].data(), state[2].data());
}

template class Adam<float>;
template class Adam<double>;
template class AdamW<float>;
template class AdamW<double>;

}  // namespace tf::optim
