#pragma once
// The optimizer a run config asks for: its optimizer section read in one place.
#include <memory>

#include "tinyformer/config/config.hpp"
#include "tinyformer/optim/optimizer.hpp"

namespace tf::optim {

// optimizer.name (sgd | adam | adamw) with lr, betas, eps, momentum and nesterov, over `params` split into two
// weight-decay groups by optimizer.decay_rule and optimizer.weight_decay (param_groups.hpp).
std::unique_ptr<Optimizer<float>> make_optimizer(const config::OptimizerConfig& cfg, const NamedVars<float>& params);

}  // namespace tf::optim
