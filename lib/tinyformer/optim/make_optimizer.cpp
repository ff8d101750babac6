#include "tinyformer/optim/make_optimizer.hpp"

#include <stdexcept>

#include "tinyformer/optim/adam.hpp"
#include "tinyformer/optim/param_groups.hpp"
#include "tinyformer/optim/sgd.hpp"

namespace tf::optim {

std::unique_ptr<Optimizer<float>> make_optimizer(const config::OptimizerConfig& cfg, const NamedVars<float>& params) {
  auto groups = make_param_groups(params, cfg.weight_decay, cfg.decay_rule);
  const AdamOptions adam{cfg.betas[0], cfg.betas[1], cfg.eps};
  switch (cfg.name) {
    case config::OptimizerName::sgd: {
      SgdOptions sgd;
      sgd.momentum = cfg.momentum;
      sgd.nesterov = cfg.nesterov;
      return std::make_unique<SGD<float>>(std::move(groups), cfg.lr, sgd);
    }
    case config::OptimizerName::adam:
      return std::make_unique<Adam<float>>(std::move(groups), cfg.lr, adam);
    case config::OptimizerName::adamw:
      return std::make_unique<AdamW<float>>(std::move(groups), cfg.lr, adam);
  }
  throw std::logic_error("make_optimizer: unhandled optimizer");
}

}  // namespace tf::optim
