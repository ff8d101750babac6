#include "tinyformer/nn/hooks.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace tf::nn {

std::vector<std::string> hook_names(const config::ModelConfig& cfg) {
  std::vector<std::string> names{"hook_embed"};
  if (cfg.position == config::Position::learned) names.emplace_back("hook_pos_embed");
  const bool norms = cfg.norm != config::Norm::none;
  std::vector<const char*> block{"hook_resid_pre"};
  if (norms) block.insert(block.end(), {"ln1.hook_scale", "ln1.hook_normalized"});
  block.insert(block.end(), {"attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_attn_scores", "attn.hook_pattern",
                             "attn.hook_z", "hook_attn_out"});
  if (cfg.mlp != config::Mlp::none) {  // attention-only blocks have no resid_mid, MLP and mlp_out
    block.push_back("hook_resid_mid");
    if (norms) block.insert(block.end(), {"ln2.hook_scale", "ln2.hook_normalized"});
    block.push_back("mlp.hook_pre");
    if (cfg.mlp == config::Mlp::swiglu) block.push_back("mlp.hook_pre_linear");
    block.insert(block.end(), {"mlp.hook_post", "hook_mlp_out"});
  }
  block.push_back("hook_resid_post");
  for (std::size_t l = 0; l < cfg.n_layer; ++l)
    for (const char* name : block) names.push_back(fmt::format("blocks.{}.{}", l, name));
  if (norms) names.insert(names.end(), {"ln_final.hook_scale", "ln_final.hook_normalized"});
  return names;
}

template <class S>
Hooks<S>& Hooks<S>::add(std::string name, Fn fn) {
  if (!fn) throw std::invalid_argument(fmt::format("Hooks::add: the function for '{}' is empty", name));
  fns_.emplace_back(std::move(name), std::move(fn));
  return *this;
}

template <class S>
Hooks<S>& Hooks<S>::add_backward(std::string name, GradFn fn) {
  if (!fn) throw std::invalid_argument(fmt::format("Hooks::add_backward: the function for '{}' is empty", name));
  grad_fns_.emplace_back(std::move(name), std::move(fn));
  return *this;
}

template <class S>
Hooks<S>& Hooks<S>::cache_into(ActivationCache<S>& cache) {
  cache_ = &cache;
  cache_names_.reset();
  return *this;
}

template <class S>
Hooks<S>& Hooks<S>::cache_into(ActivationCache<S>& cache, std::vector<std::string> names) {
  cache_ = &cache;
  cache_names_ = std::move(names);
  return *this;
}

template <class S>
bool Hooks<S>::caches(const std::string& name) const {
  return cache_ != nullptr &&
         (!cache_names_ || std::find(cache_names_->begin(), cache_names_->end(), name) != cache_names_->end());
}

template <class S>
bool Hooks<S>::hooks_under(const std::string& prefix) const {
  const auto under = [&](const std::string& name) { return name.compare(0, prefix.size(), prefix) == 0; };
  if (cache_ != nullptr && (!cache_names_ || std::any_of(cache_names_->begin(), cache_names_->end(), under)))
    return true;
  const auto hooked = [&](const auto& f) { return under(f.first); };
  return std::any_of(fns_.begin(), fns_.end(), hooked) || std::any_of(grad_fns_.begin(), grad_fns_.end(), hooked);
}

template <class S>
void Hooks<S>::check_names(const std::vector<std::string>& valid) const {
  std::vector<std::string> named;
  for (const auto& f : fns_) named.push_back(f.first);
  for (const auto& f : grad_fns_) named.push_back(f.first);
  if (cache_names_) named.insert(named.end(), cache_names_->begin(), cache_names_->end());
  for (const auto& name : named)
    if (std::find(valid.begin(), valid.end(), name) == valid.end())
      throw std::invalid_argument(fmt::format("unknown hook name '{}': this model's are {}, ..., {} ({} names; "
                                              "hook_names() lists them)",
                                              name, valid.front(), valid.back(), valid.size()));
}

template <class S>
Var<S> Hooks<S>::apply(const std::string& name, const Var<S>& x) const {
  Var<S> out = x;
  for (const auto& [hooked, fn] : fns_) {
    if (hooked != name) continue;
    Var<S> replaced = fn(out, name);
    if (!replaced.defined() || replaced.shape() != out.shape())
      throw std::invalid_argument(fmt::format("hook {} returned {}, the activation is {}", name,
                                              replaced.defined() ? shape_str(replaced.shape()) : "an undefined Var",
                                              shape_str(out.shape())));
    out = std::move(replaced);
  }
  if (caches(name)) (*cache_)[name] = out.value();
  if (!out.requires_grad() ||
      std::none_of(grad_fns_.begin(), grad_fns_.end(), [&](const auto& f) { return f.first == name; }))
    return out;
  // The hook point's own node: its gradient is the one at this point (the activation's node may be shared, or a leaf
  // that outlives this forward), and the hooks go with this forward's graph.
  Var<S> point = make_result<S>(
      Array<S>(out.value()), {out}, [](Node<S>& self) { accumulate_grad(*self.inputs[0], std::as_const(self.grad)); },
      "hook");
  for (const auto& [hooked, fn] : grad_fns_)
    if (hooked == name) point.register_hook([fn = fn, name](Array<S>& grad) { fn(grad, name); });
  return point;
}

template class Hooks<float>;
template class Hooks<double>;

}  // namespace tf::nn
