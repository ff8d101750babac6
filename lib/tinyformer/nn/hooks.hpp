#pragma once
// Hook points in the GPT's forward, under TransformerLens' names, so that an activation can be read (a cache of every
// activation by name) or replaced (zero a head's z, patch the residual stream from another prompt) without a second
// copy of the model's maths. With n_layer L, in the order the forward reaches them:
//   hook_embed                     [B,T,C]    token embeddings (wte)
//   hook_pos_embed                 [1,T,C]    learned position embeddings (wpe; absent with model.position: rope);
//                                             TransformerLens repeats them over the batch, here they broadcast
//   blocks.{l}.hook_resid_pre      [B,T,C]    the block's input
//   blocks.{l}.ln1.hook_scale      [B,T,1]    the norm's divisor sqrt(mean(x^2) + eps), x centred for layernorm
//   blocks.{l}.ln1.hook_normalized [B,T,C]    the norm's output, attention's input   (both absent with model.norm:
//                                             none; likewise ln2 before the MLP and ln_final before the unembedding)
//   blocks.{l}.attn.hook_q         [B,T,H,D]  before the rotation of model.position: rope
//   blocks.{l}.attn.hook_k/hook_v  [B,T,Hkv,D] (Hkv = n_kv_head, or H)
//   blocks.{l}.attn.hook_attn_scores [B,H,T,T] q k^T / sqrt(D), -inf above the diagonal
//   blocks.{l}.attn.hook_pattern   [B,H,T,T]  softmax of the scores, before dropout (batch, head, query, key)
//   blocks.{l}.attn.hook_z         [B,T,H,D]  the heads' outputs before c_proj
//   blocks.{l}.hook_attn_out       [B,T,C]    attention's output (c_proj, dropout)
//   blocks.{l}.hook_resid_mid      [B,T,C]    resid_pre + attn_out      (absent with model.mlp: none)
//   blocks.{l}.ln2.hook_scale, ln2.hook_normalized
//   blocks.{l}.mlp.hook_pre        [B,T,F]    c_fc's output, before the activation (swiglu: the gate half)
//   blocks.{l}.mlp.hook_pre_linear [B,T,F]    swiglu only: the up half of c_fc's output
//   blocks.{l}.mlp.hook_post       [B,T,F]    the neurons: the activation, c_proj's input (F = the MLP's width)
//   blocks.{l}.hook_mlp_out        [B,T,C]                              (absent with model.mlp: none)
//   blocks.{l}.hook_resid_post     [B,T,C]    resid_mid + mlp_out (attention-only: resid_pre + attn_out)
//   ln_final.hook_scale, ln_final.hook_normalized [B,T,C]    ln_f's, before the unembedding
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tinyformer/autograd/variable.hpp"
#include "tinyformer/config/config.hpp"

namespace tf::nn {

// Every activation of a forward by hook name.
template <class S>
using ActivationCache = std::map<std::string, Array<S>>;

// The hook points of a GPT with this model section, in the order the forward reaches them.
std::vector<std::string> hook_names(const config::ModelConfig& cfg);

// Functions on named activations, given to GPT::forward(ids, hooks). A function gets the activation and its name and
// returns what the forward goes on with: the activation itself, or a replacement of the same shape (a new Var, or an
// op of the activation: gradients flow through it). Several functions on one name run in the order added. With a
// cache, each activation is copied into it after its functions have run.
template <class S>
class Hooks {
 public:
  using Fn = std::function<Var<S>(const Var<S>& activation, const std::string& name)>;

  Hooks& add(std::string name, Fn fn);
  // A function on the gradient at `name` in a later backward() through this forward (TransformerLens' dir="bwd"): it
  // gets the gradient of what the backward differentiates with respect to the activation there, and may change it in
  // place or assign one of the same shape, which flows on to the layers before. The hook point is a node of its own
  // (the activation, copied), so the hook sees the gradient at that point alone.
  using GradFn = std::function<void(Array<S>& grad, const std::string& name)>;
  Hooks& add_backward(std::string name, GradFn fn);
  // Every activation into `cache`, or only those `names` (a forward whose names stay outside attention's and the
  // MLP's insides then keeps the fused kernels, and the cache holds no more than asked).
  Hooks& cache_into(ActivationCache<S>& cache);
  Hooks& cache_into(ActivationCache<S>& cache, std::vector<std::string> names);

  // Whether a forward must expose the insides of the attention whose hook names start with `prefix` ("blocks.0.attn."):
  // with a cache, or a function (on the activation or its gradient) on such a name.
  bool hooks_under(const std::string& prefix) const;
  // std::invalid_argument naming the first hooked name that is not in `valid` (GPT::forward checks this).
  void check_names(const std::vector<std::string>& valid) const;

  // What the modules call at each hook point: x through the functions on `name`, then into the cache, then (with a
  // function on its gradient, and x requiring grad) through a node that runs those. A result of another shape is a
  // std::invalid_argument naming the hook and both shapes.
  Var<S> apply(const std::string& name, const Var<S>& x) const;

 private:
  bool caches(const std::string& name) const;

  std::vector<std::pair<std::string, Fn>> fns_;
  std::vector<std::pair<std::string, GradFn>> grad_fns_;
  ActivationCache<S>* cache_ = nullptr;
  std::optional<std::vector<std::string>> cache_names_;  // none: every name
};

// What a module's forward is given: the model's hooks (none: the plain forward, unchanged) and the prefix of its hook
// names ("blocks.0.").
template <class S>
struct HookScope {
  const Hooks<S>* hooks = nullptr;
  std::string prefix;

  explicit operator bool() const { return hooks != nullptr; }
  // The name is built only when there are hooks: the plain forward allocates nothing here.
  Var<S> operator()(std::string_view name, const Var<S>& x) const {
    return hooks ? hooks->apply(prefix + std::string(name), x) : x;
  }
  // Whether the activations inside `part` ("attn.": q, k, v, scores, pattern, z; "mlp.": pre, post) are needed as
  // tensors: the module runs its composed forward then instead of the fused one.
  bool needs_parts(std::string_view part) const { return hooks && hooks->hooks_under(prefix + std::string(part)); }
};

extern template class Hooks<float>;
extern template class Hooks<double>;

}  // namespace tf::nn
