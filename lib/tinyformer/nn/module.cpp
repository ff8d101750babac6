#include "tinyformer/nn/module.hpp"

namespace tf::nn {

template <class S>
NamedParams<S> Module<S>::named_parameters() const {
  NamedParams<S> out;
  collect("", out);
  return out;
}

template <class S>
void Module<S>::collect(const std::string& prefix, NamedParams<S>& out) const {
  for (const auto& [name, p] : params_) out.emplace_back(prefix + name, p);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

template <class S>
std::vector<Var<S>> Module<S>::parameters() const {
  std::vector<Var<S>> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

template <class S>
std::size_t Module<S>::num_parameters() const {
  std::size_t n = 0;
  for (auto& [name, p] : named_parameters()) n += p.numel();
  return n;
}

template <class S>
void Module<S>::zero_grad() {
  for (auto& [name, p] : named_parameters()) p.zero_grad();
}

template <class S>
void Module<S>::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

template <class S>
Var<S>& Module<S>::register_parameter(const std::string& name, Array<S> value) {
  params_.emplace_back(name, Var<S>(std::move(value), true));
  return params_.back().second;
}

template <class S>
void Module<S>::register_module(const std::string& name, Module<S>& child) {
  children_.emplace_back(name, &child);
}

template class Module<float>;
template class Module<double>;

}  // namespace tf::nn
