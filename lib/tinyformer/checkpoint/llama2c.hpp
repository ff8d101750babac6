#pragma once
// Export of a checkpoint to llama2.c (github.com/karpathy/llama2.c): `model.bin` in the format its run.c reads (the
// version-0 "legacy" layout: a header of 7 int32 and the float32 weights in its order) and `tokenizer.bin` in its
// tokenizer format. docs/formats.md describes both; tests/llama2c/read_llama2c.py reads them back.
//   model.bin      int32 dim C, hidden_dim F, n_layers L, n_heads H, n_kv_heads H, vocab_size V (negative when the
//                  classifier is not tied to the embedding), seq_len T; then float32:
//                  token_embedding [V,C], rms_att [L,C], wq [L,C,C], wk [L,C,C], wv [L,C,C], wo [L,C,C],
//                  rms_ffn [L,C], w1 [L,F,C], w2 [L,C,F], w3 [L,F,C], rms_final [C], cos [T,D/2], sin [T,D/2],
//                  then wcls [V,C] when untied.
//                  tinyformer's RoPE rotates the halves (i, i + D/2) of a head, run.c the pairs (2i, 2i + 1): the
//                  rows of wq and wk are permuted within each head (row 2i <- i, row 2i + 1 <- i + D/2).
//   tokenizer.bin  int32 max_token_length; then per id: float32 score, int32 length, the piece's bytes (U+2581
//                  written as a space).
//   model_q80.bin  (export_llama2c_q8) the version-2 file llama2.c's runq.c reads: a 256-byte header (uint32 magic
//                  0x616b3432 "ak42", int32 version 2, int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads,
//                  vocab_size, seq_len, uint8 shared_classifier, int32 group_size GS, zeros), float32 rms_att [L,C],
//                  rms_ffn [L,C], rms_final [C], then each weight quantised as runq.c expects (int8 values, then a
//                  float32 scale per GS values: s = max|w| / 127, q = round(w / s)): token_embedding, wq, wk, wv, wo,
//                  w1, w2, w3 (one tensor per layer each), wcls when untied. GS is the largest of 64, 32, 16, ... that
//                  divides both dim and hidden_dim (runq.c drops a partial group).
// Only models run.c computes: model.norm rmsnorm, model.mlp swiglu, model.position rope, model.bias false, with a
// data.tokenizer bpe vocabulary (run.c's encoder merges pieces by score, which reproduces BPE, not unigram).
#include <string>

#include "tinyformer/io/safetensors.hpp"

namespace tf::checkpoint {

// Writes out_dir/model.bin and out_dir/tokenizer.bin (the directory is created). Throws std::invalid_argument in
// one line naming the option when the checkpoint's model or tokenizer is one run.c cannot run, before writing
// anything; std::runtime_error on a file that cannot be written.
void export_llama2c(const io::SafetensorsFile& file, const std::string& out_dir);
// The same checks; writes out_dir/model_q80.bin (runq.c's int8 file) and out_dir/tokenizer.bin.
void export_llama2c_q8(const io::SafetensorsFile& file, const std::string& out_dir);

}  // namespace tf::checkpoint
