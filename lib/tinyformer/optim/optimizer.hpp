#pragma once
// Optimizers, PyTorch style: parameter groups with their own weight decay, step(), zero_grad(), one learning
// rate the schedule sets with set_lr(), and the per-parameter state as named tensors for checkpoints.
// The update formulas are exactly those of torch 1.13's single-tensor implementations (torch.optim.SGD,
// Adam, AdamW with foreach=False), computed in the parameter's scalar type S with the hyper-parameters
// rounded to S, as torch does for float32 tensors; each formula is written out above its kernel in
// sgd.cpp / adam.cpp. A parameter that has no gradient is skipped by step() and gets no state (as in PyTorch).
//
// Checkpoint state: state_tensors() names each tensor "<kind>.<parameter name>":
//   SGD with momentum > 0   momentum_buffer.<p>                       (shape of p)
//   Adam, AdamW             step.<p> (shape [], float like torch's state['step']), exp_avg.<p>, exp_avg_sq.<p>
// A parameter that has never been stepped has no state tensors. load_state() accepts exactly such a set.
#include <cstddef>
#include <cstdint>
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
  // unknown or duplicate names, wrong shapes, a parameter with only part of its state, bad "step" values,
  // a negative step_count, or step_count > 0 with no state at all for an optimizer that keeps state.
  void load_state(const NamedArrays<S>& tensors, std::int64_t step_count);

  // One kind of per-parameter state.
  struct StateKind {
    const char* name;  // "exp_avg": the tensor is named "exp_avg.<parameter name>"
    bool scalar;       // shape [] (a counter) instead of the parameter's shape
  };

 protected:
  // Validates the groups (defined leaf Vars, unique names and Vars, weight_decay >= 0) and lr.
  Optimizer(std::vector<ParamGroup<S>> groups, double lr, const char* name, std::vector<StateKind> kinds);

  // Updates one parameter in place. `state` holds one array per kind (zeros on the parameter's first step,
  // when `first` is true; scalars have shape []). `grad` has the parameter's shape.
  virtual void update(Array<S>& param, const Array<S>& grad, double weight_decay, std::vector<Array<S>>& state,
                      bool first) = 0;

 private:
  std::vector<ParamGroup<S>> groups_;
  double lr_;
  const char* name_;
  std::vector<StateKind> kinds_;
  std::vector<std::vector<Array<S>>> state_;  // per parameter in group order; empty until its first step
  std::int64_t step_count_ = 0;
};

// ---- SGD ----
struct SgdOptions {
  double momentum = 0.0;   // >= 0
  double dampening = 0.0;  // momentum buffer update: buf = momentum*buf + (1 - dampening)*g
  bool nesterov = false;   // needs momentum > 0 and dampening == 0
};

// torch.optim.SGD. State: momentum_buffer (only when momentum > 0).
template <class S>
class SGD : public Optimizer<S> {
 public:
  SGD(std::vector<ParamGroup<S>> groups, double lr, SgdOptions options = {});
  SGD(NamedVars<S> params, double lr, SgdOptions options = {}, double weight_decay = 0.0);
  const SgdOptions& options() const { return options_; }

 protected:
  void update(Array<S>& param, const Array<S>& grad, double weight_decay, std::vector<Array<S>>& state,
              bool first) override;

 private:
  SgdOptions options_;
};

// ---- Adam / AdamW ----
struct AdamOptions {
  double beta1 = 0.9;    // in [0, 1)
  double beta2 = 0.999;  // in [0, 1)
  double eps = 1e-8;     // >= 0
};

// torch.optim.Adam: the group's weight decay is L2, added to the gradient. State: step, exp_avg, exp_avg_sq.
template <class S>
class Adam : public Optimizer<S> {
 public:
  Adam(std::vector<ParamGroup<S>> groups, double lr = 1e-3, AdamOptions options = {});
  Adam(NamedVars<S> params, double lr = 1e-3, AdamOptions options = {}, double weight_decay = 0.0);
  const AdamOptions& options() const { return options_; }

 protected:
  Adam(std::vector<ParamGroup<S>> groups, double lr, AdamOptions options, bool decoupled, const char* name);
  void update(Array<S>& param, const Array<S>& grad, double weight_decay, std::vector<Array<S>>& state,
              bool first) override;

 private:
  AdamOptions options_;
  bool decoupled_;  // AdamW: p *= 1 - lr*wd before the Adam update, instead of g += wd*p
};

// torch.optim.AdamW: decoupled weight decay (default 0.01 when built from a plain parameter list).
template <class S>
class AdamW : public Adam<S> {
 public:
  AdamW(std::vector<ParamGroup<S>> groups, double lr = 1e-3, AdamOptions options = {});
  AdamW(NamedVars<S> params, double lr = 1e-3, AdamOptions options = {}, double weight_decay = 0.01);
};

// ---- gradient clipping (clip.cpp) ----
// torch.nn.utils.clip_grad_norm_ with the 2-norm:
//   total = sqrt(sum of g^2 over every element of every gradient)   float64, parameters then elements in order
//   coef  = max_norm / (total + 1e-6);  every gradient *= coef (rounded to S) when coef < 1
// (torch multiplies by min(coef, 1): the same result). So gradients change once total > max_norm - 1e-6.
// Parameters without a gradient are skipped and a Var listed twice counts once; with no gradient at all the
// result is 0. A non-finite total (inf/NaN gradients) is returned and the gradients are left as they are,
// so the caller can skip the step or stop (torch would turn them into NaN or 0).
// Throws std::invalid_argument unless max_norm is finite and > 0.
template <class S>
double clip_grad_norm(const std::vector<Var<S>>& params, double max_norm);
// The total above without clipping (for logging when clipping is off); NaN/inf propagate.
template <class S>
double grad_norm(const std::vector<Var<S>>& params);
template <class S>
double grad_norm(const NamedVars<S>& params);
template <class S>
double clip_grad_norm(const NamedVars<S>& params, double max_norm);
// For the message when training meets a NaN or an infinity: the name of the first parameter (in order) whose
// gradient (parameters without one are skipped), or whose value, holds one; "" when there is none.
template <class S>
std::string first_nonfinite_grad(const NamedVars<S>& params);
template <class S>
std::string first_nonfinite_value(const NamedVars<S>& params);

// ---- weight-decay groups for GPT training ----
// Which parameters get weight decay:
//   matrices_no_embeddings (default)  dim() >= 2 and the name contains neither "wte" nor "wpe": the Linear
//                                     weights; biases, LayerNorm gains/biases and the embeddings get none
//   matrices                          dim() >= 2, embeddings included (nanoGPT's configure_optimizers)
//   all                               every parameter
//   none                              no parameter
enum class DecayRule { matrices_no_embeddings, matrices, all, none };

const char* to_string(DecayRule rule);
// "matrices_no_embeddings" | "matrices" | "all" | "none"; throws std::invalid_argument listing these.
DecayRule parse_decay_rule(const std::string& name);
bool gets_weight_decay(const std::string& name, std::size_t dim, DecayRule rule);

// Two groups, always in this order (either may be empty): [0] the parameters `rule` decays, with
// weight_decay; [1] the others, with 0. Order within a group is the input order. A Var listed twice (tied
// weights) is kept once, under its first name. Throws std::invalid_argument if weight_decay < 0.
template <class S>
std::vector<ParamGroup<S>> make_param_groups(const NamedVars<S>& params, double weight_decay,
                                             DecayRule rule = DecayRule::matrices_no_embeddings);

extern template class Optimizer<float>;
extern template class Optimizer<double>;
extern template class SGD<float>;
extern template class SGD<double>;
extern template class Adam<float>;
extern template class Adam<double>;
extern template class AdamW<float>;
extern template class AdamW<double>;

}  // namespace tf::optim
