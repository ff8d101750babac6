#pragma once
// Module base, PyTorch style: named parameters (nanoGPT state_dict names), sub-module registration,
// train()/eval(), zero_grad(). Modules own their sub-modules as members and register them by address,
// so a Module is neither copyable nor movable.
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/autograd/variable.hpp"

namespace tf::nn {

template <class S>
using NamedParams = std::vector<std::pair<std::string, Var<S>>>;

template <class S>
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter of this module and its sub-modules, depth first, named "child.grandchild.param".
  NamedParams<S> named_parameters() const;
  std::vector<Var<S>> parameters() const;
  std::size_t num_parameters() const;  // element count
  void zero_grad();

  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }

 protected:
  // Returns a handle to the new parameter (a Var shares its node): it stays valid whatever is registered later.
  Var<S> register_parameter(const std::string& name, Array<S> value);
  void register_module(const std::string& name, Module<S>& child);

 private:
  void collect(const std::string& prefix, NamedParams<S>& out) const;

  std::vector<std::pair<std::string, Var<S>>> params_;
  std::vector<std::pair<std::string, Module<S>*>> children_;
  bool training_ = true;
};

extern template class Module<float>;
extern template class Module<double>;

}  // namespace tf::nn
