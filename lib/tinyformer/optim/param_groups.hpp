#pragma once
// Weight-decay groups for GPT training: which parameters get weight decay (optimizer.decay_rule).
#include "tinyformer/config/fields.hpp"
#include "tinyformer/optim/optimizer.hpp"

namespace tf::optim {

// Which parameters get weight decay:
//   matrices_no_embeddings (default)  dim() >= 2 and the name contains neither "wte" nor "wpe": the Linear
//                                     weights; biases, LayerNorm gains/biases and the embeddings get none
//   matrices                          dim() >= 2, embeddings included (nanoGPT's configure_optimizers)
//   all                               every parameter
//   none                              no parameter
using config::DecayRule;  // optimizer.decay_rule, declared in the config

bool gets_weight_decay(const std::string& name, std::size_t dim, DecayRule rule);

// Two groups, always in this order (either may be empty): [0] the parameters `rule` decays, with
// weight_decay; [1] the others, with 0. Order within a group is the input order. A Var listed twice (tied
// weights) is kept once, under its first name. Throws std::invalid_argument if weight_decay < 0.
template <class S>
std::vector<ParamGroup<S>> make_param_groups(const NamedVars<S>& params, double weight_decay,
                                             DecayRule rule = DecayRule::matrices_no_embeddings);

}  // namespace tf::optim
