#pragma once
// Export of a checkpoint to llm.c (github.com/karpathy/llm.c): `model.bin` as its train_gpt2.c reads it
// (gpt2_build_from_checkpoint, fill_in_parameter_sizes), and the run's tokens as its token files
// (io/llmc_tokens.hpp). docs/interop.md describes both; tests/llmc/check_llmc.py reads them back.
//   model.bin  a header of 256 int32: magic 20240326, version 3 (float32, padded vocabulary), maxT (model.context),
//              V, L, NH, C, Vp, zeros; then float32 tensors, each layer's stacked, in llm.c's order:
//              wte [Vp,C] (rows V..Vp-1 zero), wpe [maxT,C], ln1w [L,C], ln1b [L,C], qkvw [L,3C,C], qkvb [L,3C],
//              attprojw [L,C,C], attprojb [L,C], ln2w [L,C], ln2b [L,C], fcw [L,4C,C], fcb [L,4C],
//              fcprojw [L,C,4C], fcprojb [L,C], lnfw [C], lnfb [C].
//              llm.c's matrices are (out, in) like tinyformer's (its matmul_forward reads weight[o*C + i]), and qkvw's
//              rows are q, k, v as c_attn's: every tensor is copied as it is. Vp is V rounded up to a multiple of
//              128, as llm.c's train_gpt2.py pads GPT-2's 50257 to 50304 (its loader takes any Vp >= V; only the
//              first V logits enter the softmax).
//   train.bin, val.bin  the training and held-out ids of the run's data (text, or tokens from an llm.c file), when the
//              data can be rebuilt and is a stream of ids.
// Only GPT-2-shaped models: model.norm layernorm, mlp gelu (the tanh approximation, as llm.c's), position learned,
// bias true, tie_weights true, mlp_ratio 4, n_kv_head 0 or n_head.
#include <string>

#include "tinyformer/data/data.hpp"
#include "tinyformer/io/safetensors.hpp"

namespace tf::checkpoint {

// llm.c's padded vocabulary for V ids: V rounded up to a multiple of 128.
std::size_t llmc_padded_vocab(std::size_t V);

// Writes out_dir/model.bin, and out_dir/train.bin and out_dir/val.bin when `tokens` is given (the directory is
// created). Throws std::invalid_argument in one line naming the key when the model is one llm.c cannot train, or
// its vocabulary does not fit token files (more than 65536 ids), before writing anything; std::runtime_error on a
// file that cannot be written.
void export_llmc(const io::SafetensorsFile& file, const std::string& out_dir, const data::TokenStreams* tokens);

}  // namespace tf::checkpoint
