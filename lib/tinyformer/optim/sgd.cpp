// SGD with momentum, dampening, Nesterov and L2 weight decay: torch.optim.SGD (torch 1.13, single tensor).
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/optim/sgd.hpp"

namespace tf::optim {

namespace {

void check_sgd_options(const SgdOptions& o) {
  if (!(std::isfinite(o.momentum) && o.momentum >= 0))
    throw std::invalid_argument(fmt::format("SGD: momentum must be a finite number >= 0, got {}", o.momentum));
  if (!std::isfinite(o.dampening))
    throw std::invalid_argument(fmt::format("SGD: dampening must be finite, got {}", o.dampening));
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    throw std::invalid_argument(
        fmt::format("SGD: nesterov needs momentum > 0 and dampening = 0, got momentum {} and dampening {}", o.momentum,
                    o.dampening));
}

template <class S>
std::vector<typename Optimizer<S>::StateKind> sgd_state_kinds(const SgdOptions& o) {
  check_sgd_options(o);
  if (o.momentum == 0) return {};
  return {{"momentum_buffer", false}};
}

}  // namespace

template <class S>
SGD<S>::SGD(std::vector<ParamGroup<S>> groups, double lr, SgdOptions options)
    : Optimizer<S>(std::move(groups), lr, "SGD", sgd_state_kinds<S>(options)), options_(options) {}

template <class S>
SGD<S>::SGD(NamedVars<S> params, double lr, SgdOptions options, double weight_decay)
    : SGD(std::vector<ParamGroup<S>>{ParamGroup<S>{std::move(params), weight_decay}}, lr, options) {}

// Per element, with lr, wd, momentum (mu), dampening (tau) rounded to S:
//   d   = g + wd*p                              (only when wd != 0)
//   buf = d                                     on the parameter's first step (momentum > 0)
//   buf = mu*buf + (1 - tau)*d                  afterwards
//   d   = d + mu*buf  (nesterov)   or   d = buf
//   p   = p - lr*d
// p, g, buf: the parameter's shape.
template <class S>
void SGD<S>::update(Array<S>& param, const Array<S>& grad, double weight_decay, std::vector<Array<S>>& state,
                    bool first) {
  const S wd = static_cast<S>(weight_decay);
  const S mu = static_cast<S>(options_.momentum);
  const S one_minus_tau = static_cast<S>(1.0 - options_.dampening);
  const S neg_lr = static_cast<S>(-this->lr());
  const bool use_momentum = options_.momentum != 0;
  S* p = param.data();
  const S* g = grad.data();
  S* buf = use_momentum ? state[0].data() : nullptr;
  const std::size_t n = param.size();
  for (std::size_t i = 0; i < n; ++i) {
    S d = g[i];
    if (weight_decay != 0) d = d + wd * p[i];
    if (use_momentum) {
      buf[i] = first ? d : mu * buf[i] + one_minus_tau * d;
      d = options_.nesterov ? d + mu * buf[i] : buf[i];
    }
    p[i] = p[i] + neg_lr * d;
  }
}

template class SGD<float>;
template class SGD<double>;

}  // namespace tf::optim
