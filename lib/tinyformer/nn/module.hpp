#pragma once
// Module base, PyTorch style: named parameters (nanoGPT state_dict names), sub-module registration,
// train()/eval(), zero_grad(). Modules own their sub-modules as members and register them by address,
// so a Module is neither copyable nor movable. A registered sub-module that has been destroyed since (a
// std::unique_ptr reset or reassigned, a local that went out of scope) is noticed, not followed: every call that walks
// the sub-modules throws std::invalid_argument naming it.
#include <deque>
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

  // Every parameter of this module and its sub-modules, depth first, named "child.grandchild.param"; a parameter
  // that two modules share (set_parameter) once, under its first name, unless remove_duplicate is false (torch's
  // named_parameters(); checkpoints, as torch's state_dict(), hold every name). std::invalid_argument when a
  // registered sub-module no longer exists (as train, zero_grad, parameters, ...).
  NamedParams<S> named_parameters(bool remove_duplicate = true) const;
  std::vector<Var<S>> parameters() const;
  std::size_t num_parameters() const;  // element count
  // The direct sub-modules in the order registered, by name (torch's named_children()): the tree that Python's
  // named_modules() walks. std::invalid_argument when one no longer exists.
  std::vector<std::pair<std::string, Module<S>*>> named_children() const;
  void zero_grad();
  // Replaces this module's own parameter `name` by `value`, which it then shares (weight tying:
  // lm_head.set_parameter("weight", wte.weight()), nanoGPT's `lm_head.weight = wte.weight`). std::invalid_argument,
  // with nothing changed, for a name this module has no parameter of, and for a value that is not a leaf requiring a
  // gradient (a parameter) or whose shape differs.
  void set_parameter(const std::string& name, const Var<S>& value);

  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }

 protected:
  // Returns where the module keeps the new parameter: the reference stays valid whatever is registered later, and
  // always holds the parameter, also after set_parameter replaced it (a module reads its parameters through it).
  Var<S>& register_parameter(const std::string& name, Array<S> value);
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
  // seen: the nodes listed so far, or null to list every name.
  void collect(const std::string& prefix, NamedParams<S>& out, std::vector<const Node<S>*>* seen) const;
  bool contains(const Module<S>* other) const;  // other is this module or one below it

  std::deque<std::pair<std::string, Var<S>>> params_;  // a deque: references to its elements stay valid
  std::vector<std::pair<std::string, Child>> children_;
  std::shared_ptr<const void> alive_ = std::make_shared<char>(0);  // expires with this module
  bool training_ = true;
};

extern template class Module<float>;
extern template class Module<double>;

}  // namespace tf::nn
