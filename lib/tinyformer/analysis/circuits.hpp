#pragma once
// When a circuit forms, in numbers: the phase change of an induction head in the held-out loss (Olsson et al. 2022),
// the two marks of grokking in the accuracies (Power et al. 2022), and the Fourier spectrum of a modular task's
// embedding (Nanda et al. 2023). Pure functions of logged numbers and weight arrays; depends on tensor/ only. The
// report (io/html_report) marks what they find, the trainer computes the spectrum, the notebooks call them through
// the Python module.
//
// Phase change. Over evaluations (step, held-out loss), a window [s0, s1] of at most `max_window_fraction` of the
// run's steps (s1 - s0 <= fraction x (last step - first step)) is a phase change when the loss falls in it by at
// least `min_share_of_total` of the run's whole fall (the first evaluation's loss minus the lowest) and by at least
// `min_relative_drop` of its value at s0: loss(s1) <= (1 - min_relative_drop) loss(s0). Of all such windows the one
// with the largest fall loss(s0) - loss(s1) is reported (the earliest on ties), and its step is the first evaluation
// in it whose loss is at most halfway between loss(s0) and loss(s1). Gradual learning (a fall spread over the run:
// the first condition) and small falls (the second) find none.
//
// Grokking. Over evaluations (step, training accuracy, held-out accuracy): memorised is the first step with training
// accuracy >= 0.99 while the held-out accuracy is still <= 0.5; grokked is the first step after it with held-out
// accuracy >= 0.95 (the thresholds, Power et al.'s picture).
//
// Fourier spectrum. For an embedding W [p, C] of the tokens 0..p-1, the share of its squared norm at each frequency
// k = 0 .. p/2: the squared norms of its projections on the unit vectors c_k(x) = cos(2 pi k x / p) and
// s_k(x) = sin(2 pi k x / p) over x (k = 0: the constant), summed over the C columns, divided by the sum over every k.
// These vectors are an orthogonal basis of R^p, so the shares sum to 1; an embedding spread evenly over frequencies
// (a random one) has about 2/p at each k >= 1, a grokked one a few frequencies far above that.
#include <cstddef>
#include <optional>
#include <vector>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::analysis {

// One evaluation's numbers, as a run logs them (NaN or empty where not logged).
struct EvalPoint {
  long step = 0;
  double loss = 0.0;                                // held-out loss
  std::vector<std::vector<double>> score;           // [L][H] the data's in-context (induction) score of each head
  std::vector<std::vector<double>> previous_token;  // [L][H] previous-token score of each head
};

struct PhaseChangeCriteria {
  double max_window_fraction = 0.2;  // the fall happens within at most this share of the run's steps
  double min_share_of_total = 0.5;   // ... is at least this share of the run's whole fall
  double min_relative_drop = 0.5;    // ... and takes away at least this share of the loss at its start
  double head_threshold = 0.4;       // a head has "formed" once its score reaches this (analysis::kPatternThreshold)
};

struct PhaseChange {
  bool found = false;
  std::size_t windows = 0;            // the windows judged (pairs of evaluations close enough); 0: too few evaluations
  long start_step = 0, end_step = 0;  // the window of the fall (found) or of the largest fall allowed (not found)
  long step = 0;                      // the first evaluation in the window at or below the halfway loss
  double loss_before = 0.0, loss_after = 0.0;  // held-out loss at start_step and end_step
  double drop() const { return loss_before - loss_after; }
  // The head of a layer >= 1 with the highest in-context score at the last evaluation, its score at start_step and
  // end_step (NaN without a window); absent for a one-layer model or without scores.
  std::optional<std::size_t> layer, head;
  double score_before = 0.0, score_after = 0.0;
  // The first step at which a layer-0 head's previous-token score reached head_threshold, that head and its score
  // then; absent when none did (or none was logged).
  std::optional<long> previous_token_step;
  std::size_t previous_token_head = 0;
  double previous_token_score = 0.0;
};

// The phase change of evaluations in step order (see above). Points whose loss is not finite are passed over; fewer
// than two finite points find none.
PhaseChange find_phase_change(const std::vector<EvalPoint>& points, const PhaseChangeCriteria& criteria = {});

struct GrokkingMarks {
  std::optional<long> memorised;  // first step: train accuracy >= 0.99, held-out <= 0.5
  std::optional<long> grokked;    // first step after memorised: held-out >= 0.95
  double train_at_memorised = 0.0, held_out_at_memorised = 0.0, held_out_at_grokked = 0.0;
  double best_held_out = 0.0;  // the highest held-out accuracy logged
};

// steps, train and held-out accuracies of the same evaluations, in step order; throws std::invalid_argument when the
// three differ in length. NaN entries are passed over.
GrokkingMarks find_grokking(const std::vector<long>& steps, const std::vector<double>& train_accuracy,
                            const std::vector<double>& held_out_accuracy);

// The share of the squared norm of embedding [p, C] (rows: the tokens 0..p-1) at each frequency k = 0 .. p/2, [p/2 + 1]
// summing to 1 (all zeros for an all-zero embedding). Throws std::invalid_argument unless it is 2-D with p >= 2 rows.
std::vector<double> fourier_spectrum(const Array<float>& embedding);

}  // namespace tf::analysis
