#include "tinyformer/runs/prompt.hpp"

#include <fmt/format.h>

#include "tinyformer/runs/errors.hpp"

namespace tf::runs {

namespace {

Prompt fit_to_context(std::vector<Index> ids, std::size_t context, const std::string& argument, Overflow overflow) {
  Prompt p;
  if (ids.size() > context) {
    if (overflow == Overflow::refuse)
      throw Error(ErrorKind::value, fmt::format("{}: {} tokens, more than the model's context of {}; give at most {}",
                                                argument, ids.size(), context, context));
    p.dropped = ids.size() - context;
    p.warning =
        fmt::format("the prompt has {} tokens, the context is {}: keeping the last {}", ids.size(), context, context);
    ids.erase(ids.begin(), ids.begin() + static_cast<long>(p.dropped));
  }
  p.ids = std::move(ids);
  return p;
}

}  // namespace

Index stop_token(const data::Vocabulary& vocab) { return vocab.bos(); }

Prompt encode_prompt(const data::Vocabulary& vocab, std::size_t context, const std::string& text,
                     const std::string& argument, Overflow overflow) {
  if (text.empty()) throw Error(ErrorKind::value, fmt::format("{} is empty; give at least one token", argument));
  std::vector<Index> ids;
  try {
    ids = vocab.encode(text);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::value, user_message(std::invalid_argument(fmt::format("{}: {}", argument, e.what()))));
  }
  if (ids.empty()) throw Error(ErrorKind::value, fmt::format("{} has no tokens; give at least one", argument));
  if (vocab.bos() >= 0) ids.insert(ids.begin(), vocab.bos());
  return fit_to_context(std::move(ids), context, argument, overflow);
}

Prompt prompt_of_ids(const data::Vocabulary& vocab, std::size_t context, const std::vector<Index>& ids,
                     const std::string& argument, Overflow overflow) {
  if (ids.empty()) throw Error(ErrorKind::value, fmt::format("{} has no tokens; give at least one", argument));
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || static_cast<std::size_t>(ids[i]) >= vocab.size())
      throw Error(ErrorKind::value, fmt::format("{}: token id {} at position {} is not in the vocabulary (0 to {})",
                                                argument, ids[i], i, vocab.size() - 1));
  return fit_to_context(ids, context, argument, overflow);
}

}  // namespace tf::runs
