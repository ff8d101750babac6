#pragma once
// Module base, PyTorch style: named parameters (nanoGPT state_dict names), sub-module registration,
// train()/eval(), zero_grad(). Modules own their sub-modules as members and register them by address,
// so a Module is neither copyable nor movable. A registered sub-module that has been destroyed since (a
// std::unique_ptr reset or reassigned, a local that went out of scope) is noticed, not followed: every call that walks
// the sub-modules throws std::invalid_argument naming it.
#include <memory>
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
  // std::invalid_argument when a registered sub-module no longer exists (as train, zero_grad, parameters, ...).
  NamedParams<S> named_parameters() const;
  std::vector<Var<S>> parameters() const;
  std::size_t num_parameters() const;  // element count
  // The direct sub-modules in the order registered, by name (torch's named_children()): the tree that Python's
  // named_modules() walks. std::invalid_argument when one no longer exists.
  std::vector<std::pair<std::string, Module<S>*>> named_children() const;
  void zero_grad();

  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }

 protected:
  // Returns a handle to the new parameter (a Var shares its node): it stays valid whatever is registered later.
  Var<S> register_parameter(const std::string& name, Array<S> value);
  // Registers `child` by address: it must live as long as this module is used (a member, or a std::unique_ptr member
  // that is not reset). std::invalid_argument for a name as register_parameter's, for this module itself and for a
  // module that contains this one (a cycle).
  void register_module(const std::string& name, Module<S>& child);

 private:
  // A registered sub-module and a token that expires when it is destroyed.
  struct Child {
    Module<S>* module;
    std::weak_ptr<const void> alive;
  };
  // The child, or std::invalid_argument naming it ("prefix" + name) when it has been destroyed.
  static Module<S>& live(const std::string& path, const Child& child);
  void collect(const std::string& prefix, NamedParams<S>& out) const;
  bool contains(const Module<S>* other) const;  // other is this module or one below it

  std::vector<std::pair<std::string, Var<S>>> params_;
  std::vector<std::pair<std::string, Child>> children_;
  std::shared_ptr<const void> alive_ = std::make_shared<char>(0);  // expires with this module
  bool training_ = true;
};

extern template class Module<float>;
extern template class Module<double>;

}  // namespace tf::nn
