// Weight-decay groups (param_groups.hpp).
#include "tinyformer/optim/param_groups.hpp"

#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace tf::optim {

bool gets_weight_decay(const std::string& name, std::size_t dim, DecayRule rule) {
  switch (rule) {
    case DecayRule::all:
      return true;
    case DecayRule::none:
      return false;
    case DecayRule::matrices:
      return dim >= 2;
    case DecayRule::matrices_no_embeddings:
      return dim >= 2 && name.find("wte") == std::string::npos && name.find("wpe") == std::string::npos;
  }
  return false;
}

template <class S>
std::vector<ParamGroup<S>> make_param_groups(const NamedVars<S>& params, double weight_decay, DecayRule rule) {
  if (!(std::isfinite(weight_decay) && weight_decay >= 0))
    throw std::invalid_argument(
        fmt::format("make_param_groups: weight_decay must be a finite number >= 0, got {}", weight_decay));
  std::vector<ParamGroup<S>> groups(2);
  groups[0].weight_decay = weight_decay;
  groups[1].weight_decay = 0.0;
  std::set<const Node<S>*> seen;
  for (const auto& [name, p] : params) {
    if (p.defined() && !seen.insert(&p.node()).second) continue;  // tied weights: first name wins
    const bool decay = gets_weight_decay(name, p.defined() ? p.dim() : 0, rule);
    groups[decay ? 0 : 1].params.emplace_back(name, p);
  }
  return groups;
}

template std::vector<ParamGroup<float>> make_param_groups(const NamedVars<float>&, double, DecayRule);
template std::vector<ParamGroup<double>> make_param_groups(const NamedVars<double>&, double, DecayRule);

}  // namespace tf::optim
