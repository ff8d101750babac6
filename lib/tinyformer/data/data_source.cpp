// make_data_source, rows_of and the accuracy helpers.
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include "tinyformer/data/sources.hpp"
#include "tinyformer/tensor/files.hpp"

namespace tf::data {

Batch rows_of(const Batch& batch, std::size_t first, std::size_t count) {
  return {xt::view(batch.x, xt::range(first, first + count), xt::all()),
          xt::view(batch.y, xt::range(first, first + count), xt::all())};
}

std::string task_symbol(std::size_t i) {
  if (i < 10) return std::string(1, static_cast<char>('0' + i));
  if (i < 36) return std::string(1, static_cast<char>('a' + (i - 10)));
  return std::string(1, static_cast<char>('A' + (i - 36)));
}

void check_batch_size(std::size_t B, const char* who) {
  if (B == 0) throw std::invalid_argument(fmt::format("DataSource::{}: batch size must be >= 1, got 0", who));
}

std::size_t resolve_context(const config::RunConfig& cfg, std::size_t T, const std::string& what) {
  const std::optional<std::size_t>& context = cfg.model.context;
  if (!context || *context == T) return T;
  if (*context < T)
    throw config::error_at(cfg, config::keys::model::context,
                           fmt::format("{0} makes sequences of T = {1} tokens, longer than {2} {3}; set {2} to {1} or "
                                       "auto",
                                       what, T, config::keys::model::context, *context));
  throw config::error_at(
      cfg, config::keys::model::context,
      fmt::format("{0} makes sequences of T = {1} tokens; {2} {3} is larger, so positions {1}..{4} of the positional "
                  "table would never be trained; set {2} to {1} or auto",
                  what, T, config::keys::model::context, *context, *context - 1));
}

std::unique_ptr<DataSource> make_data_source(const config::RunConfig& cfg) {
  config::validate(cfg);
  try {
    switch (cfg.data.task) {
      case config::Task::text:
        return make_text_source(cfg);
      case config::Task::tokens:
        return make_tokens_source(cfg);
      case config::Task::repeats:
        return make_repeats_source(cfg);
      case config::Task::modular:
        return make_modular_source(cfg);
      default:
        return make_task_source(cfg);
    }
  } catch (const FileError& e) {  // the file cannot be read: missing, a directory, a FIFO, ...
    throw FileError(cfg.source.locate(config::keys::data::path), e.what());
  } catch (const std::runtime_error& e) {  // what it holds: empty, not UTF-8, a bad .npy, too short, ...
    throw std::invalid_argument(fmt::format("{}: {}", cfg.source.locate(config::keys::data::path), e.what()));
  }
}

std::vector<long> DataSource::expected_attention(const IndexArray& seq) const {
  if (seq.dimension() != 1)
    throw std::invalid_argument(
        fmt::format("expected_attention needs one sequence [T], got {}", shape_str(to_shape(seq.shape()))));
  return std::vector<long>(seq.size(), -1);
}

std::string DataSource::prompt_mismatch(const std::vector<Index>&) const { return ""; }

Accuracy& Accuracy::operator+=(const Accuracy& o) {
  correct_sequences += o.correct_sequences;
  sequences += o.sequences;
  correct_tokens += o.correct_tokens;
  tokens += o.tokens;
  return *this;
}

Accuracy accuracy_from_predictions(const IndexArray& predictions, const IndexArray& y) {
  if (y.dimension() != 2 || predictions.shape() != y.shape())
    throw std::invalid_argument(fmt::format("accuracy: predictions {} and targets {} must both be [B,T]",
                                            shape_str(to_shape(predictions.shape())), shape_str(to_shape(y.shape()))));
  const std::size_t B = y.shape(0), T = y.shape(1);
  Accuracy acc;
  for (std::size_t b = 0; b < B; ++b) {
    std::size_t scored = 0, right = 0;
    for (std::size_t t = 0; t < T; ++t) {
      if (y(b, t) == kIgnore) continue;
      ++scored;
      if (predictions(b, t) == y(b, t)) ++right;
    }
    acc.tokens += scored;
    acc.correct_tokens += right;
    if (scored) {
      ++acc.sequences;
      if (right == scored) ++acc.correct_sequences;
    }
  }
  return acc;
}

IndexArray argmax_last(const Array<float>& logits) {
  if (logits.dimension() != 3 || logits.shape(2) == 0)
    throw std::invalid_argument(
        fmt::format("argmax_last: logits must be [B,T,V] with V >= 1, got {}", shape_str(to_shape(logits.shape()))));
  const std::size_t B = logits.shape(0), T = logits.shape(1), V = logits.shape(2);
  IndexArray out = IndexArray::from_shape({B, T});
  const float* p = logits.data();
  for (std::size_t r = 0; r < B * T; ++r, p += V) {
    std::size_t best = 0;
    for (std::size_t v = 1; v < V; ++v)
      if (p[v] > p[best]) best = v;  // strict: the first maximum wins
    out.data()[r] = static_cast<Index>(best);
  }
  return out;
}

Accuracy accuracy_from_logits(const Array<float>& logits, const IndexArray& y) {
  return accuracy_from_predictions(argmax_last(logits), y);
}

}  // namespace tf::data
