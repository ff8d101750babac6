#pragma once
// The GPT's architecture as data: every parameter's name (nanoGPT's state_dict names) and shape, worked out from the
// model section alone. This is the one description of the architecture: nn::GPT builds exactly these tensors in this
// order (tests/nn/test_parameter_shapes.cpp compares them with named_parameters() for every model option), a
// checkpoint's tensors are checked against them before a model is built, and the memory estimate counts them.
//   transformer.wte.weight [V,C]    transformer.wpe.weight [T,C] (model.position: learned)
//   transformer.h.{l}.ln_1, attn.c_attn [qkv_width,C], attn.c_proj [C,C], ln_2, mlp.c_fc [mlp_fc_width,C],
//   mlp.c_proj [C,F] (ln_2 and the MLP only when model.mlp is not none)
//   transformer.ln_f                lm_head.weight [V,C] (unless model.tie_weights)
// A norm has weight [C], and bias [C] with layernorm and model.bias, and nothing with model.norm none; a Linear has
// bias [out] with model.bias.
#include <cstddef>
#include <string>
#include <vector>

#include "tinyformer/config/config.hpp"
#include "tinyformer/tensor/tensor.hpp"

namespace tf::nn {

struct ParameterShape {
  std::string name;  // "transformer.h.0.attn.c_attn.weight"
  Shape shape;
};

// Whether the blocks have an MLP (and its ln_2): false for model.mlp none, an attention-only model.
bool has_mlp(const config::ModelConfig& cfg);
// F, the MLP's hidden width (c_proj's input): mlp_ratio * C for gelu and relu, swiglu_hidden(C, mlp_ratio) for
// swiglu, 0 without an MLP.
std::size_t mlp_hidden(const config::ModelConfig& cfg);
// c_attn's output width, the q, k and v heads side by side: 3C; with model.n_kv_head (grouped-query attention)
// (n_head + 2 n_kv_head) D: the q heads, then the k heads, then the v heads.
std::size_t qkv_width(const config::ModelConfig& cfg);
// c_fc's output width: F for gelu, 2F for swiglu (the gate and the up projection stacked, gate first).
std::size_t mlp_fc_width(const config::ModelConfig& cfg);

// One block's parameters, named relative to the block ("ln_1.weight", "attn.c_attn.weight", ...).
std::vector<ParameterShape> block_parameter_shapes(const config::ModelConfig& cfg);
// The whole model's, in the order nn::GPT registers them. vocab_size and context must be numbers (not auto):
// std::invalid_argument otherwise.
std::vector<ParameterShape> parameter_shapes(const config::ModelConfig& cfg);
// The number of parameter values, in double so that no size can overflow it: the memory estimate asks it of configs
// far beyond any machine (it does not list the blocks one by one).
double parameter_count(const config::ModelConfig& cfg);

}  // namespace tf::nn
