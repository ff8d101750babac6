#include "tinyformer/nn/module.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace tf::nn {

template <class S>
NamedParams<S> Module<S>::named_parameters(bool remove_duplicate) const {
  NamedParams<S> out;
  std::vector<const Node<S>*> seen;
  collect("", out, remove_duplicate ? &seen : nullptr);
  return out;
}

template <class S>
Module<S>& Module<S>::live(const std::string& path, const Child& child) {
  if (child.alive.expired())
    throw std::invalid_argument(fmt::format("Module: the sub-module '{}' was destroyed after register_module; a "
                                            "registered module must live as long as its parent (hold it as a member)",
                                            path));
  return *child.module;
}

template <class S>
void Module<S>::collect(const std::string& prefix, NamedParams<S>& out, std::vector<const Node<S>*>* seen) const {
  for (const auto& [name, p] : params_) {
    if (seen) {
      if (std::find(seen->begin(), seen->end(), &p.node()) != seen->end()) continue;  // shared: its first name only
      seen->push_back(&p.node());
    }
    out.emplace_back(prefix + name, p);
  }
  for (const auto& [name, child] : children_) live(prefix + name, child).collect(prefix + name + ".", out, seen);
}

template <class S>
void Module<S>::set_parameter(const std::string& name, const Var<S>& value) {
  auto own = std::find_if(params_.begin(), params_.end(), [&](const auto& p) { return p.first == name; });
  if (own == params_.end())
    throw std::invalid_argument(fmt::format("set_parameter: this module has no parameter '{}'", name));
  if (!value.defined() || !value.is_leaf() || !value.requires_grad())
    throw std::invalid_argument(
        fmt::format("set_parameter('{}'): the value must be a parameter (a leaf that requires a "
                    "gradient), as another module's weight is",
                    name));
  if (value.shape() != own->second.shape())
    throw std::invalid_argument(fmt::format("set_parameter('{}'): shape {} differs from the parameter's {}", name,
                                            shape_str(value.shape()), shape_str(own->second.shape())));
  own->second = value;
}

template <class S>
bool Module<S>::contains(const Module<S>* other) const {
  if (other == this) return true;
  for (const auto& [name, child] : children_)
    if (!child.alive.expired() && child.module->contains(other)) return true;
  return false;
}

template <class S>
std::vector<std::pair<std::string, Module<S>*>> Module<S>::named_children() const {
  std::vector<std::pair<std::string, Module<S>*>> out;
  for (const auto& [name, child] : children_) out.emplace_back(name, &live(name, child));
  return out;
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
  named_parameters();  // throws when a sub-module at any depth is gone, before anything changes
  training_ = on;
  for (auto& [name, child] : children_) child.module->train(on);
}

namespace {
// A name that a checkpoint can hold: not empty, no '.', (the separator of nested names), not taken yet.
template <class Taken>
void check_name(const std::string& name, const char* what, const Taken& taken) {
  if (name.empty() || name.find('.') != std::string::npos)
    throw std::invalid_argument(fmt::format("{}: name '{}' must be non-empty and hold no '.' (the separator of nested "
                                            "names)",
                                            what, name));
  for (const auto& [other, unused] : taken)
    if (other == name)
      throw std::invalid_argument(fmt::format("{}: name '{}' is already taken in this module", what, name));
}
}  // namespace

template <class S>
Var<S>& Module<S>::register_parameter(const std::string& name, Array<S> value) {
  check_name(name, "register_parameter", params_);
  check_name(name, "register_parameter", children_);
  if (value.size() == 0)
    throw std::invalid_argument(fmt::format("register_parameter: '{}' has shape {}, which holds no elements; every "
                                            "dimension must be at least 1",
                                            name, shape_str(to_shape(value.shape()))));
  params_.emplace_back(name, Var<S>(std::move(value), true));
  return params_.back().second;
}

template <class S>
void Module<S>::register_module(const std::string& name, Module<S>& child) {
  check_name(name, "register_module", params_);
  check_name(name, "register_module", children_);
  if (&child == this) throw std::invalid_argument(fmt::format("register_module: '{}' is this module itself", name));
  if (child.contains(this))
    throw std::invalid_argument(fmt::format("register_module: '{}' contains this module (a cycle)", name));
  children_.emplace_back(name, Child{&child, child.alive_});
}

template class Module<float>;
template class Module<double>;

}  // namespace tf::nn
