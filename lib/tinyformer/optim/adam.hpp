#pragma once
// torch.optim.Adam and AdamW (formulas in adam.cpp).
#include "tinyformer/optim/optimizer.hpp"

namespace tf::optim {

struct AdamOptions {
  double beta1 = 0.9;    // in [0, 1)
  double beta2 = 0.999;  // in [0, 1)
  double eps = 1e-8;     // >= 0
};

// torch.optim.Adam: the group's weight decay is L2, added to the gradient. State: step, exp_avg, exp_avg_sq.
template <class S>
class Adam : public Optimizer<S> {
 public:
  Adam(std::vector<ParamGroup<S>> groups, double lr = 1e-3, AdamOptions options = {});
  Adam(NamedVars<S> params, double lr = 1e-3, AdamOptions options = {}, double weight_decay = 0.0);
  const AdamOptions& options() const { return options_; }

 protected:
  Adam(std::vector<ParamGroup<S>> groups, double lr, AdamOptions options, bool decoupled, const char* name);
  void update(Array<S>& param, const Array<S>& grad, double weight_decay, std::vector<Array<S>>& state,
              bool first) override;

 private:
  AdamOptions options_;
  bool decoupled_;  // AdamW: p *= 1 - lr*wd before the Adam update, instead of g += wd*p
};

// torch.optim.AdamW: decoupled weight decay (default 0.01 when built from a plain parameter list).
template <class S>
class AdamW : public Adam<S> {
 public:
  AdamW(std::vector<ParamGroup<S>> groups, double lr = 1e-3, AdamOptions options = {});
  AdamW(NamedVars<S> params, double lr = 1e-3, AdamOptions options = {}, double weight_decay = 0.01);
};

extern template class Adam<float>;
extern template class Adam<double>;
extern template class AdamW<float>;
extern template class AdamW<double>;

}  // namespace tf::optim
