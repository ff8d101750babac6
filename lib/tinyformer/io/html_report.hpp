#pragma once
// A training run as one self-contained HTML page: no network, no external scripts, styles or fonts; the only
// script is inline. Every section appears only when it has data (an empty ReportData gives a title and nothing
// else):
//  - a one-line summary and "Training curves" (metrics given): line charts as inline SVG, drawn here. Loss (train,
//    and val where given; log scale when the values are positive and span more than a factor 10), accuracy,
//    learning rate, gradient norm and attention entropy (one line per layer, the mean over its heads), each chart
//    only when some row has its value. All charts share one step axis (the steps of the metrics and snapshots),
//    with the same width and margins, so their x positions line up. A point with no neighbour on its line (a
//    one-point validation series, or a point between gaps) is drawn as a large ringed marker; series of at most 60
//    points also mark every point.
//    With a fixed training set (modular) the accuracy chart holds the training and the held-out accuracy, and the
//    weight norm on a second scale at the right.
//  - The circuits (html_report_circuits.cpp; ReportData::circuits from the run's circuits.json): for a `repeats` run
//    "Phase change" (analysis::find_phase_change on the evaluations: its step, the loss drop, the best later-layer
//    head's score before and after, the step the layer-0 previous-token head formed; or that there was none), its
//    window shaded and its step marked on the loss chart; for a `modular` run "Grokking" (analysis::find_grokking:
//    the memorised and grokked steps, marked on the loss and accuracy charts) and "Embedding spectrum" (a bar chart
//    of the embedding's share at each frequency); for any run with an attribution, "Direct logit attribution" (a
//    layer x head table coloured red for what a head adds to the answer's logit, blue for what it takes).
//  - "Heads" (per-head scores or roles given): the expected pattern in one sentence, a table layer x head of the
//    expected-pattern scores (the latest MetricsRow::attention_score, else the latest AttentionSnapshot::scores; with
//    neither, as for text, the latest MetricsRow::induction_score) with the best head highlighted and each head's
//    role under its score, and (given scores at two steps or more) a chart of the best head's score over the steps,
//    on the same step axis as the loss chart (placed at the same left edge, so it sits right under it).
//  - "Attention maps" (snapshots given): every layer x head as a T x T heatmap with token labels on both axes
//    (every k-th token when rows are too dense for a label each; spaces shown as U+2423, newline "\n", tab "\t",
//    other control characters "\xNN"), the expected key of each query outlined in orange when the snapshot has
//    expected keys, and the head's score in its caption. Drawn by inline JavaScript onto <canvas> from JSON
//    embedded in the page, with a slider (input#snapshot) and a step label to move through the snapshots (it
//    starts at the last one); hovering a cell shows query, key and weight.
//  - "Head view" (snapshots given), in the manner of bertviz: a layer selector (select#hv-layer), one checkbox per
//    head (input#hv-head-<h>.hv-head, each head in its own colour), the tokens as queries on the left
//    (.hv-query[data-index]) and as keys on the right (.hv-key[data-index]). Hovering a query shows its attention to
//    every key as lines (svg#hv-lines line.hv-line[data-head][data-key], opacity = weight) and tints each key in the
//    colour of the head that gives it the most weight; a click pins the query (a second click releases it). The
//    expected key is outlined (.hv-expected) and #hv-readout lists each shown head's strongest key
//    (.hv-read[data-head][data-key][data-weight]). #head-view carries data-layer and data-query (-1: none).
//  - "Config" (config text given) in a <pre>.
// Weights are embedded rounded to 3 decimals, as integers in thousandths ("w":[0,1000,523,...]; NaN as -1),
// so a [2,4,32,32] snapshot costs about 30 KB. The colormap is attention_color (io/heatmap_png.hpp).
#include <optional>
#include <string>
#include <vector>

#include "tinyformer/analysis/circuits.hpp"
#include "tinyformer/tensor/tensor.hpp"

namespace tf::io {

// A table of one number per head: [L][H] (layers, heads).
using HeadTable = std::vector<std::vector<double>>;

// One logged step. Non-finite values are left out of the charts; empty tables mean "not logged".
struct MetricsRow {
  long step = 0;
  double train_loss = 0.0;
  std::optional<double> val_loss;
  std::optional<double> val_bpb;   // text: held-out bits per byte
  std::optional<double> accuracy;  // a fraction in [0, 1] or a percentage: plotted as given
  double lr = 0.0;
  std::optional<double> grad_norm;       // gradient norm of the step (plotted as given)
  std::optional<double> train_accuracy;  // on the whole fixed training set (modular), a fraction in [0, 1]
  std::optional<double> weight_norm;     // the 2-norm of all parameters' values
  HeadTable attention_entropy;           // [L][H] mean attention-row entropy in nats, or [[mean]] for one number
  HeadTable attention_score;       // [L][H] expected-pattern score of each head (analysis/head_patterns.hpp), in [0, 1]
  HeadTable induction_score;       // [L][H] induction score of each head (data without an expected pattern), in [0, 1]
  HeadTable previous_token_score;  // [L][H] previous-token score of each head, in [0, 1]
};

// Attention weights of one batch row at one step.
struct AttentionSnapshot {
  long step = 0;
  std::vector<std::string> tokens;  // T labels (UTF-8), or empty
  Array<float> weights;             // [L,H,T,T] (layers, heads, queries, keys)
  std::vector<long> expected;       // [T] the expected key of each query, -1 for none; or empty (no outlines)
  HeadTable scores;                 // [L][H] expected-pattern score of each head at this step, or empty
};

// What a run learnt about its circuits, written at the end of training as <out>/circuits.json (circuits_json) and read
// back for the report (circuits_from_json). The trainer fills it from infer/lens (the attribution) and
// analysis/circuits (the spectrum).
struct CircuitsReport {
  // The run's data.task: "repeats" makes the report look for a phase change in the held-out loss and mark it,
  // "modular" for the two marks of grokking in the accuracies (analysis/circuits.hpp defines both).
  std::string task;
  // modular: the share of the numbers' embedding (wte rows 0..p-1) at each frequency 0..p/2
  // (analysis::fourier_spectrum) at the end of the run; empty otherwise.
  std::vector<double> embedding_spectrum;
  // Direct logit attribution (infer/lens.hpp) of the correct next token, averaged over the scored positions of the
  // first held-out batch: `positions` of them; logit = logit[t] - mean logit, and the parts that add up to it.
  std::size_t attribution_positions = 0;
  double attribution_logit = 0.0, attribution_embed = 0.0, attribution_final_bias = 0.0;
  HeadTable attribution_heads;                     // [L][H]
  std::vector<double> attribution_attention_bias;  // [L]
  std::vector<double> attribution_mlp;             // [L], empty for an attention-only model
  // What the run's evaluations show (phase_change_of, grokking_of below), for scripts and notebooks; the report
  // computes them from the metrics itself.
  std::optional<analysis::PhaseChange> phase_change;  // repeats
  std::optional<analysis::GrokkingMarks> grokking;    // modular
};

// {"task": ..., "embedding_spectrum": [...], "direct_logit_attribution": {"positions", "logit", "embed", "heads",
// "attention_bias", "mlp", "final_bias"}, "phase_change": {"found", "windows", "step", "start_step", "end_step",
// "loss_before", "loss_after", "layer", "head", "score_before", "score_after", "previous_token_step",
// "previous_token_head", "previous_token_score"}, "grokking": {"memorised", "grokked", "train_at_memorised",
// "held_out_at_memorised", "held_out_at_grokked", "best_held_out"}} (each part only when there is one; a step that was
// not reached, and a number that is not finite, is null).
std::string circuits_json(const CircuitsReport& c);
// Its inverse; throws std::invalid_argument naming what is wrong (not JSON, a value of the wrong type) for the caller
// to put the file's path in front.
CircuitsReport circuits_from_json(const std::string& text);

// The phase change and the grokking marks in a run's metrics rows (analysis/circuits.hpp on its evaluations: the
// held-out loss with each head's in-context and previous-token scores; the training and held-out accuracies).
analysis::PhaseChange phase_change_of(const std::vector<MetricsRow>& metrics);
analysis::GrokkingMarks grokking_of(const std::vector<MetricsRow>& metrics);

struct ReportData {
  std::string title;
  std::string config_yaml;
  std::vector<MetricsRow> metrics;           // in step order
  std::vector<AttentionSnapshot> attention;  // in step order; each may have its own L, H, T
  std::string attention_note;                // which snapshots the page leaves out and why (one sentence), or ""
  std::string expected_pattern;              // one sentence: which key each answer query should attend to, or ""
  std::vector<std::vector<std::string>> head_roles;  // [L][H] a short role per head ("previous_token 0.93"), or empty
  CircuitsReport circuits;                           // what circuits.json holds (empty without it)
};

// The most attention weights a report page holds over all its maps (about 64 MB of page). A long logging.probe made
// each snapshot of an 8 x 8-head model 256M weights: a run's report.html took 1.5 GB for 3 snapshots (and reading 100
// of them 100 GB of memory), `tinyformer attention`'s 537 MB and 17 GB of memory for one map of 2048 tokens.
constexpr std::size_t kReportWeights = std::size_t{1} << 24;

// Which of `sizes.size()` maps (sizes: the weights of each) fit `max_weights` together: as many as the largest one
// allows, evenly spaced from the first to the last, the last always (none when the largest alone is over).
std::vector<std::size_t> fitting_snapshots(const std::vector<std::size_t>& sizes, std::size_t max_weights);

// What a page holding `shown` of `total` attention maps says about the rest, the largest of them `largest`: "3 of the
// 9 attention maps are shown, evenly spaced: this page holds at most N weights, and one holds M ([L, H, T, T])" or
// "No attention map is shown: one holds M weights (...), more than the N this page holds", then `where` when given.
std::string left_out_note(std::size_t shown, std::size_t total, std::size_t max_weights, const Shape& largest,
                          const std::string& where);

// The page as a string. It holds the attention maps that fit `max_weights` (fitting_snapshots); when it leaves some
// out and data.attention_note is empty, its own note says how many and why. Throws std::invalid_argument naming the
// snapshot (index and step) when its weights are
// not [L,H,T,T], its token count is neither 0 nor T, its expected keys are neither empty nor T values in [-1, T),
// or its scores are neither empty nor [L][H].
std::string render_html_report(const ReportData& data, std::size_t max_weights = kReportWeights);

// render_html_report, written atomically to `path` (io/atomic_file.hpp): a reader sees the old file or the
// complete new one, and an invalid `data` leaves an existing file untouched. Throws std::invalid_argument
// (inputs) or std::runtime_error (I/O, naming the path).
void write_html_report(const std::string& path, const ReportData& data);

// A page (render_html_report's) as one <iframe srcdoc="..."> element, for a notebook cell (a Python object's
// _repr_html_). The page keeps its own ids, style and script inside the frame, so any number of them live on one
// notebook page without clashing with each other or with the notebook's styles, and nothing is fetched. The frame
// spans the cell's width; its onload sets its height to the page's (and follows later changes where the browser has
// ResizeObserver); without scripts (a sanitizing viewer) it keeps `height` pixels.
std::string html_iframe(const std::string& page, int height = 640);

}  // namespace tf::io
