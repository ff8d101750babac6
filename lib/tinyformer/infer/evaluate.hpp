#pragma once
// The model on held-out data: mean loss, exact-match accuracy and each head's attention_score (data with an expected
// pattern) or induction_score (data without: text, tokens), in one pass (no grad, eval mode). Collective under MPI:
// every rank calls it, each evaluates its share of every held-out batch, and all get the sums of all.
#include <cstddef>
#include <optional>
#include <vector>

#include "tinyformer/data/data.hpp"
#include "tinyformer/nn/gpt.hpp"

namespace tf::infer {

struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;  // exact-match, for the synthetic tasks
  // Text: bits per byte, sum over the batches of (mean loss in nats x scored targets) / the bytes of text those
  // targets stand for (DataSource::eval_batch_bytes) / ln 2; it compares models with different tokenizers.
  std::optional<double> bpb;
  // [L][H] for data with an expected pattern: the fraction of each head's attention that the answer queries of the
  // held-out batches put on their expected key (analysis::Pattern::expected); empty otherwise.
  std::vector<std::vector<double>> attention_score;
  // [L][H] for data without an expected pattern (text, tokens; not a synthetic task without one, modular): each head's
  // induction score on the held-out batches
  // (analysis::Pattern::induction: the attention that queries whose token occurred before put on the token after
  // that earlier occurrence); empty for data with an expected pattern, or when no query had an earlier occurrence.
  std::vector<std::vector<double>> induction_score;
  // [L][H] each head's previous-token score on the held-out batches (analysis::Pattern::previous_token: the attention
  // of each query q >= 1 on key q-1), the first half of an induction circuit; empty when no query had one (T = 1).
  std::vector<std::vector<double>> previous_token_score;
  // The exact-match accuracy on the whole training set, for a task with a fixed one (modular), when the caller measured
  // it (training_accuracy below; the trainer does at every evaluation).
  std::optional<double> train_accuracy;
};

// Mean loss over the first `max_batches` held-out batches, accuracy and attention_score or induction_score. A held-out
// batch has a training step's global size, N processes x grad_accum K x batch_size B sequences, so every way of making
// up the same global batch sees the same sequences: rank r evaluates rows [r x K x B, (r + 1) x K x B) of each, in
// pieces of B, and the sums are added up over the ranks (in rank order). A batch's loss is the mean over its scored
// targets (with one piece, that piece's mean as it is); the result is the mean over the batches.
EvalResult evaluate(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size, std::size_t max_batches,
                    std::size_t grad_accum = 1);

// The exact-match accuracy on the whole fixed training set of a task that has one (DataSource::training_set:
// modular), in pieces of `batch_size`; nullopt for data without one. No grad, eval mode; every rank computes the same
// (under MPI each evaluates the whole set).
std::optional<double> training_accuracy(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size);

}  // namespace tf::infer
