#pragma once
// Optimizers, PyTorch style: parameter groups with their own weight decay, step(), zero_grad(), one learning
// rate the schedule sets with set_lr(), and the per-parameter state as named tensors for checkpoints.
// The subclasses (sgd.hpp, adam.hpp) are exactly torch 1.13's single-tensor implementations (torch.optim.SGD,
// Adam, AdamW with foreach=False), computed in the parameter's scalar type S with the hyper-parameters
// rounded to S, as torch does for float32 tensors; each formula is written out above its kernel in
// sgd.cpp / adam.cpp. Parameter groups for weight decay: param_groups.hpp; clipping: clip.hpp. A parameter that has no
// gradient is skipped by step() and gets no state (as in PyTorch).
//
// Checkpoint state: state_tensors() names each tensor "<kind>.<parameter name>":
//   SGD with momentum > 0   momentum_buffer.<p>                       (shape of p)
//   Adam, AdamW             step.<p> (shape [], float like torch's state['step']), exp_avg.<p>, exp_avg_sq.<p>
// A parameter that has never been stepped has no state tensors. load_state() accepts exactly such a set.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/autograd/variable.hpp"

namespace tf::optim {

// Named parameters ("transformer.h.0.attn.c_attn.weight" -> Var), as nn::Module::named_parameters() returns.
template <class S>
using NamedVars = std::vector<std::pair<std::string, Var<S>>>;
// Named arrays: optimizer state for checkpoints.
template <class S>
using NamedArrays = std::vector<std::pair<std::string, Array<S>>>;

template <class S>
struct ParamGroup {
  NamedVars<S> params;
  double weight_decay = 0.0;  // >= 0; SGD/Adam: L2 added to the gradient; AdamW: decoupled
};

template <class S>
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient (others are skipped), then counts the step.
  void step();
  // Drops the gradient of every parameter (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);  // throws std::invalid_argument unless lr is finite and >= 0
  // step() calls so far (plus the count restored by load_state).
  std::int64_t step_count() const { return step_count_; }
  const std::vector<ParamGroup<S>>& param_groups() const { return groups_; }
  const char* name() const { return name_; }  // "SGD", "Adam", "AdamW"

  // Copies of the state, parameter by parameter in group order, kinds in a fixed order per optimizer.
  NamedArrays<S> state_tensors() const;
  // Replaces the state and the step count (e.g. from a checkpoint written by state_tensors()/step_count()).
  // Validates everything before changing anything; throws std::invalid_argument listing every mismatch:
  // unknown or duplicate names, wrong shapes, a parameter with only part of its state, bad "step" values (or one
  // above step_count), values no optimizer could produce (a negative second moment), a negative step_count, or
  // step_count > 0 with no state at all for an optimizer that keeps state.
  void load_state(const NamedArrays<S>& tensors, std::int64_t step_count);

  // One kind of per-parameter state.
  struct StateKind {
    const char* name;           // "exp_avg": the tensor is named "exp_avg.<parameter name>"
    bool scalar;                // shape [] (a counter) instead of the parameter's shape
    bool non_negative = false;  // every value >= 0 (a running mean of squares): a negative one is no optimizer's
  };

 protected:
  // Validates the groups (defined leaf Vars, unique names and Vars, weight_decay >= 0) and lr.
  Optimizer(std::vector<ParamGroup<S>> groups, double lr, const char* name, std::vector<StateKind> kinds);

  // Updates one parameter in place. `state` holds one array per kind (zeros on the parameter's first step,
  // when `first` is true; scalars have shape []). `grad` has the parameter's shape.
  virtual void update(Array<S>& param, const Array<S>& grad, double weight_decay, std::vector<Array<S>>& state,
                      bool first) = 0;

 private:
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> match_state(const NamedArrays<S>& tensors,
                                                                         std::vector<std::string>& problems) const;
  std::string valid_kinds() const;

  std::vector<ParamGroup<S>> groups_;
  double lr_;
  const char* name_;
  std::vector<StateKind> kinds_;
  std::vector<std::vector<Array<S>>> state_;  // per parameter in group order; empty until its first step
  std::int64_t step_count_ = 0;
};

extern template class Optimizer<float>;
extern template class Optimizer<double>;

}  // namespace tf::optim
