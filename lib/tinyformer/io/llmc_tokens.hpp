#pragma once
// llm.c's token files (github.com/karpathy/llm.c: dev/data/data_common.py writes them, llmc/dataloader.h reads them),
// the data its train_gpt2.c trains on:
//   a header of 256 int32: magic 20240520, version 1, the token count N, then zeros;
//   N token ids as uint16 (little-endian), nothing after them.
// docs/interop.md describes how tinyformer reads them (data.task tokens) and writes them (export --format llmc).
#include <cstdint>
#include <string>
#include <vector>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::io {

inline constexpr std::int32_t kLlmcTokensMagic = 20240520;
inline constexpr std::size_t kLlmcTokensHeaderInts = 256;
inline constexpr std::size_t kLlmcMaxVocabulary = 65536;  // ids are uint16

// True when `path` is a regular file that starts with llm.c's token magic (a .npy starts with "\x93NUMPY" instead).
// Throws FileError (tensor/files.hpp) when the file cannot be opened.
bool is_llmc_tokens(const std::string& path);
// The ids of an llm.c token file. std::runtime_error naming the file when its magic, version, count or size is not
// what llm.c's dataloader accepts.
std::vector<Index> read_llmc_tokens(const std::string& path);
// The bytes of an llm.c token file holding `ids`. std::invalid_argument naming `what` and the first id outside
// [0, 65535] (uint16), or when there are 2^31 ids or more (the count is an int32).
std::string llmc_tokens_bytes(const std::vector<Index>& ids, const std::string& what);

}  // namespace tf::io
