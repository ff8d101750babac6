#pragma once
// torch.optim.SGD: momentum, dampening, Nesterov and L2 weight decay (formulas in sgd.cpp).
#include "tinyformer/optim/optimizer.hpp"

namespace tf::optim {

struct SgdOptions {
  double momentum = 0.0;   // >= 0
  double dampening = 0.0;  // momentum buffer update: buf = momentum*buf + (1 - dampening)*g
  bool nesterov = false;   // needs momentum > 0 and dampening == 0
};

// torch.optim.SGD. State: momentum_buffer (only when momentum > 0).
template <class S>
class SGD : public Optimizer<S> {
 public:
  SGD(std::vector<ParamGroup<S>> groups, double lr, SgdOptions options = {});
  SGD(NamedVars<S> params, double lr, SgdOptions options = {}, double weight_decay = 0.0);
  const SgdOptions& options() const { return options_; }

 protected:
  void update(Array<S>& param, const Array<S>& grad, double weight_decay, std::vector<Array<S>>& state,
              bool first) override;

 private:
  SgdOptions options_;
};

extern template class SGD<float>;
extern template class SGD<double>;

}  // namespace tf::optim
