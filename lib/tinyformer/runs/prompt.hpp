#pragma once
// A prompt as a model reads it, the same in every front end (`tinyformer sample`, `attention`, `heads`, Python's
// Model.sample, to_tokens, run_with_cache): the text encoded with the checkpoint's vocabulary, <s> first where the
// vocabulary has one (a SentencePiece vocabulary was trained with <s> before every document, as llama2.c's run.c
// starts a prompt), and at most the model's context: a longer prompt keeps its last `context` tokens (nanoGPT's
// crop) with a warning, or is refused.
#include <cstddef>
#include <string>
#include <vector>

#include "tinyformer/data/vocabulary.hpp"

namespace tf::runs {

struct Prompt {
  std::vector<Index> ids;   // [T] what the model reads, 1 <= T <= context
  std::size_t dropped = 0;  // tokens cut from the front to fit the context
  std::string warning;      // "the prompt has 20 tokens, the context is 16: keeping the last 16", or ""
};

// What happens to a prompt longer than the context.
enum class Overflow { keep_last, refuse };

// `text` encoded for a model of `context` positions. `argument` names the prompt in messages ("--prompt" for the
// CLI, "prompt" for Python). Throws runs::Error (kind value) naming it: an empty prompt, text that is not UTF-8,
// characters or words outside the vocabulary (each with its position), or with Overflow::refuse more tokens than
// the context.
Prompt encode_prompt(const data::Vocabulary& vocab, std::size_t context, const std::string& text,
                     const std::string& argument = "prompt", Overflow overflow = Overflow::keep_last);

// Token ids given directly (no <s> added: they are what the model reads), checked the same way: at least one, each
// in [0, V), at most `context` (or the last `context` kept, with the warning).
Prompt prompt_of_ids(const data::Vocabulary& vocab, std::size_t context, const std::vector<Index>& ids,
                     const std::string& argument = "prompt", Overflow overflow = Overflow::keep_last);

// What the model stops at when it makes it: the vocabulary's <s> (a new document would start), or -1.
Index stop_token(const data::Vocabulary& vocab);

}  // namespace tf::runs
