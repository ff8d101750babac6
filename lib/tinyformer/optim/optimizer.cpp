// The Optimizer base (groups, step loop, lazily created per-parameter state, checkpoint export/import) and
// the weight-decay grouping rule. The update formulas live in sgd.cpp and adam.cpp.
#include "tinyformer/optim/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>

namespace tf::optim {

namespace {

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

void check_lr(double lr, const char* op) {
  if (!(std::isfinite(lr) && lr >= 0))
    throw std::invalid_argument(fmt::format("{}: lr must be a finite number >= 0, got {}", op, lr));
}

}  // namespace

template <class S>
Optimizer<S>::Optimizer(std::vector<ParamGroup<S>> groups, double lr, const char* name, std::vector<StateKind> kinds)
    : groups_(std::move(groups)), lr_(lr), name_(name), kinds_(std::move(kinds)) {
  check_lr(lr, name_);
  std::map<std::string, std::size_t> names;     // parameter name -> group
  std::map<const Node<S>*, std::string> nodes;  // the same Var under two names
  std::size_t count = 0;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const ParamGroup<S>& g = groups_[gi];
    if (!(std::isfinite(g.weight_decay) && g.weight_decay >= 0))
      throw std::invalid_argument(fmt::format("{}: param_groups[{}].weight_decay must be a finite number >= 0, got {}",
                                              name_, gi, g.weight_decay));
    for (const auto& [pname, p] : g.params) {
      if (pname.empty())
        throw std::invalid_argument(fmt::format("{}: param_groups[{}] has a parameter with an empty name; "
                                                "every parameter needs a unique name (checkpoint state uses it)",
                                                name_, gi));
      if (!p.defined())
        throw std::invalid_argument(fmt::format("{}: parameter '{}' is an undefined Var", name_, pname));
      if (!p.node().is_leaf())
        throw std::invalid_argument(fmt::format("{}: parameter '{}' is the result of op '{}', not a leaf; "
                                                "only leaf values can be optimized",
                                                name_, pname, p.op()));
      if (!names.emplace(pname, gi).second)
        throw std::invalid_argument(fmt::format("{}: the parameter name '{}' appears twice (groups {} and {})", name_,
                                                pname, names[pname], gi));
      const auto [it, fresh] = nodes.emplace(&p.node(), pname);
      if (!fresh)
        throw std::invalid_argument(fmt::format("{}: parameters '{}' and '{}' are the same Var; list it once "
                                                "(it would be updated twice per step)",
                                                name_, it->second, pname));
      ++count;
    }
  }
  if (count == 0) throw std::invalid_argument(fmt::format("{}: got an empty parameter list", name_));
  state_.resize(count);
}

template <class S>
void Optimizer<S>::set_lr(double lr) {
  check_lr(lr, name_);
  lr_ = lr;
}

template <class S>
void Optimizer<S>::step() {
  std::size_t k = 0;
  for (ParamGroup<S>& g : groups_) {
    for (auto& [pname, p] : g.params) {
      std::vector<Array<S>>& st = state_[k++];
      if (!p.has_grad()) continue;  // as in PyTorch: no gradient, no update, no state
      if (p.grad().shape() != p.value().shape())
        throw std::logic_error(fmt::format("{}.step: the gradient of '{}' has shape {} but the parameter {}", name_,
                                           pname, shape_str(to_shape(p.grad().shape())), shape_str(p.shape())));
      const bool first = st.empty();
      if (first) {
        st.reserve(kinds_.size());
        for (const StateKind& kind : kinds_)
          st.push_back(kind.scalar ? Array<S>(xt::zeros<S>(Shape{})) : Array<S>(xt::zeros<S>(p.value().shape())));
      }
      update(p.mutable_value(), p.grad(), g.weight_decay, st, first);
    }
  }
  ++step_count_;
}

template <class S>
void Optimizer<S>::zero_grad() {
  for (ParamGroup<S>& g : groups_)
    for (auto& [pname, p] : g.params) p.zero_grad();
}

template <class S>
NamedArrays<S> Optimizer<S>::state_tensors() const {
  NamedArrays<S> out;
  std::size_t k = 0;
  for (const ParamGroup<S>& g : groups_)
    for (const auto& [pname, p] : g.params) {
      const std::vector<Array<S>>& st = state_[k++];
      for (std::size_t i = 0; i < st.size(); ++i) out.emplace_back(std::string(kinds_[i].name) + "." + pname, st[i]);
    }
  return out;
}

// (parameter, kind) -> index into `tensors`, for the tensors named "<kind>.<parameter>" with the right shape and,
// for counters, a whole number >= 1; a line in `problems` for each tensor that does not fit.
template <class S>
std::map<std::pair<std::size_t, std::size_t>, std::size_t> Optimizer<S>::match_state(
    const NamedArrays<S>& tensors, std::vector<std::string>& problems) const {
  std::map<std::string, std::pair<std::size_t, Var<S>>> params;  // name -> (flat index, Var)
  for (const ParamGroup<S>& g : groups_)
    for (const auto& [pname, p] : g.params) params.emplace(pname, std::make_pair(params.size(), p));
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> found;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const auto& [tname, value] = tensors[t];
    const std::size_t dot = tname.find('.');
    const std::string kind = tname.substr(0, dot);
    const std::string pname = dot == std::string::npos ? std::string() : tname.substr(dot + 1);
    std::size_t ki = 0;
    while (ki < kinds_.size() && kind != kinds_[ki].name) ++ki;
    const auto pit = params.find(pname);
    if (ki == kinds_.size() || pit == params.end()) {
      problems.push_back(fmt::format(
          "unexpected tensor '{}': names are <kind>.<parameter name> with kind one of {}{}", tname, valid_kinds(),
          ki < kinds_.size() ? fmt::format(", and '{}' is no parameter of this optimizer", pname) : std::string()));
      continue;
    }
    if (!found.emplace(std::make_pair(pit->second.first, ki), t).second) {
      problems.push_back(fmt::format("tensor '{}' appears more than once", tname));
      continue;
    }
    const Shape want = kinds_[ki].scalar ? Shape{} : pit->second.second.shape();
    const Shape got = to_shape(value.shape());
    if (got != want) {
      problems.push_back(fmt::format(
          "tensor '{}' has shape {} but needs {}{}", tname, shape_str(got), shape_str(want),
          kinds_[ki].scalar ? " (a scalar counter)" : fmt::format(" (the shape of parameter '{}')", pname)));
    } else if (kinds_[ki].scalar) {
      const double v = static_cast<double>(value());
      if (!(std::isfinite(v) && v >= 1 && v == std::floor(v)))
        problems.push_back(
            fmt::format("tensor '{}' = {} must be a whole number >= 1 (steps taken by '{}')", tname, v, pname));
    } else if (kinds_[ki].non_negative) {
      const auto bad = std::find_if(value.begin(), value.end(), [](S x) { return !(x >= 0); });
      if (bad != value.end())
        problems.push_back(fmt::format("tensor '{}' holds {} at flat index {}, which no {} step produces (it is a "
                                       "running mean of squares, >= 0)",
                                       tname, static_cast<double>(*bad), bad - value.begin(), name_));
    }
  }
  return found;
}

template <class S>
std::string Optimizer<S>::valid_kinds() const {
  if (kinds_.empty()) return "none (this optimizer keeps no state)";
  std::vector<std::string> names;
  for (const StateKind& kind : kinds_) names.push_back(kind.name);
  return join(names, ", ");
}

template <class S>
void Optimizer<S>::load_state(const NamedArrays<S>& tensors, std::int64_t step_count) {
  std::vector<std::string> problems;
  const auto found = match_state(tensors, problems);
  // Each parameter has all of its state (it was stepped) or none (never stepped).
  std::size_t pi = 0;
  for (const ParamGroup<S>& g : groups_)
    for (const auto& [pname, p] : g.params) {
      std::vector<std::string> missing;
      for (std::size_t ki = 0; ki < kinds_.size(); ++ki)
        if (!found.count({pi, ki})) missing.push_back(fmt::format("'{}.{}'", kinds_[ki].name, pname));
      if (!missing.empty() && missing.size() < kinds_.size())
        problems.push_back(
            fmt::format("missing {} (the rest of parameter '{}''s state is present)", join(missing, ", "), pname));
      ++pi;
    }
  if (step_count < 0) problems.push_back(fmt::format("step_count = {} must be >= 0", step_count));
  for (const auto& [key, t] : found)  // a parameter cannot have taken more steps than the optimizer
    if (kinds_[key.second].scalar && static_cast<double>(tensors[t].second()) > static_cast<double>(step_count))
      problems.push_back(fmt::format("tensor '{}' = {} is more than step_count = {}", tensors[t].first,
                                     static_cast<double>(tensors[t].second()), step_count));
  if (step_count > 0 && !kinds_.empty() && found.empty())
    problems.push_back(fmt::format("step_count = {} but no state tensor at all was given (expected {} per stepped "
                                   "parameter; a checkpoint of another optimizer or other settings?)",
                                   step_count, valid_kinds()));
  if (step_count == 0 && !found.empty())
    problems.push_back("step_count = 0 but state tensors were given (state exists only after a step)");
  if (!problems.empty())
    throw std::invalid_argument(fmt::format("the {} state does not fit this optimizer ({} problem{}):\n  {}", name_,
                                            problems.size(), problems.size() == 1 ? "" : "s", join(problems, "\n  ")));
  for (std::size_t i = 0; i < state_.size(); ++i) {
    state_[i].clear();
    if (!found.count({i, 0})) continue;  // all-or-none was checked above
    for (std::size_t ki = 0; ki < kinds_.size(); ++ki) state_[i].push_back(tensors[found.at({i, ki})].second);
  }
  step_count_ = step_count;
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace tf::optim
