// The report's circuits: a `repeats` run's phase change (the induction head), a `modular` run's memorised and grokked
// marks and its embedding's Fourier spectrum, and any task's direct logit attribution per head; circuits.json, the file
// that carries what the trainer computed at the end of the run. The criteria are analysis/circuits.hpp's.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/analysis/circuits.hpp"
#include "tinyformer/io/html_report_parts.hpp"

namespace tf::io {

namespace {

nlohmann::json step_or_null(const std::optional<long>& step) { return step ? nlohmann::json(*step) : nlohmann::json(); }
nlohmann::json index_or_null(const std::optional<std::size_t>& i) { return i ? nlohmann::json(*i) : nlohmann::json(); }

template <class T>
std::optional<T> optional_of(const nlohmann::json& j, const char* key) {
  return j.contains(key) && !j.at(key).is_null() ? std::optional<T>(j.at(key).get<T>()) : std::nullopt;
}

// Numbers that may be NaN, which JSON writes as null: a value, a list and a list of lists.
double as_number(const nlohmann::json& v) { return v.is_null() ? std::nan("") : v.get<double>(); }
double number_or_nan(const nlohmann::json& j, const char* key) { return as_number(j.at(key)); }
std::vector<double> numbers_of(const nlohmann::json& list) {
  if (!list.is_array()) throw std::invalid_argument("a value has the wrong type (a list of numbers expected)");
  std::vector<double> out;
  for (const auto& v : list) out.push_back(as_number(v));
  return out;
}
HeadTable table_of(const nlohmann::json& rows) {
  if (!rows.is_array()) throw std::invalid_argument("a value has the wrong type (a list of lists expected)");
  HeadTable out;
  for (const auto& row : rows) out.push_back(numbers_of(row));
  return out;
}

nlohmann::json phase_change_json(const analysis::PhaseChange& pc) {
  return {{"found", pc.found},
          {"windows", pc.windows},
          {"step", pc.step},
          {"start_step", pc.start_step},
          {"end_step", pc.end_step},
          {"loss_before", pc.loss_before},
          {"loss_after", pc.loss_after},
          {"layer", index_or_null(pc.layer)},
          {"head", index_or_null(pc.head)},
          {"score_before", pc.score_before},
          {"score_after", pc.score_after},
          {"previous_token_step", step_or_null(pc.previous_token_step)},
          {"previous_token_head", pc.previous_token_head},
          {"previous_token_score", pc.previous_token_score}};
}

analysis::PhaseChange phase_change_from(const nlohmann::json& j) {
  analysis::PhaseChange pc;
  pc.found = j.at("found").get<bool>();
  pc.windows = j.value("windows", std::size_t{0});
  pc.step = j.at("step").get<long>(), pc.start_step = j.at("start_step").get<long>();
  pc.end_step = j.at("end_step").get<long>();
  pc.loss_before = number_or_nan(j, "loss_before"), pc.loss_after = number_or_nan(j, "loss_after");
  pc.layer = optional_of<std::size_t>(j, "layer"), pc.head = optional_of<std::size_t>(j, "head");
  pc.score_before = number_or_nan(j, "score_before"), pc.score_after = number_or_nan(j, "score_after");
  pc.previous_token_step = optional_of<long>(j, "previous_token_step");
  pc.previous_token_head = j.at("previous_token_head").get<std::size_t>();
  pc.previous_token_score = number_or_nan(j, "previous_token_score");
  return pc;
}

nlohmann::json grokking_json(const analysis::GrokkingMarks& g) {
  return {{"memorised", step_or_null(g.memorised)},       {"grokked", step_or_null(g.grokked)},
          {"train_at_memorised", g.train_at_memorised},   {"held_out_at_memorised", g.held_out_at_memorised},
          {"held_out_at_grokked", g.held_out_at_grokked}, {"best_held_out", g.best_held_out}};
}

analysis::GrokkingMarks grokking_from(const nlohmann::json& j) {
  analysis::GrokkingMarks g;
  g.memorised = optional_of<long>(j, "memorised"), g.grokked = optional_of<long>(j, "grokked");
  g.train_at_memorised = number_or_nan(j, "train_at_memorised");
  g.held_out_at_memorised = number_or_nan(j, "held_out_at_memorised");
  g.held_out_at_grokked = number_or_nan(j, "held_out_at_grokked");
  g.best_held_out = number_or_nan(j, "best_held_out");
  return g;
}

}  // namespace

analysis::PhaseChange phase_change_of(const std::vector<MetricsRow>& metrics) {
  std::vector<analysis::EvalPoint> points;
  for (const auto& m : metrics)
    if (m.val_loss)
      points.push_back({m.step, *m.val_loss, m.attention_score.empty() ? m.induction_score : m.attention_score,
                        m.previous_token_score});
  return analysis::find_phase_change(points);
}

analysis::GrokkingMarks grokking_of(const std::vector<MetricsRow>& metrics) {
  std::vector<long> steps;
  std::vector<double> train, held_out;
  for (const auto& m : metrics)
    if (m.accuracy && m.train_accuracy) {
      steps.push_back(m.step);
      train.push_back(*m.train_accuracy);
      held_out.push_back(*m.accuracy);
    }
  return analysis::find_grokking(steps, train, held_out);
}

std::string circuits_json(const CircuitsReport& c) {
  nlohmann::json j = {{"task", c.task}};
  if (c.phase_change) j["phase_change"] = phase_change_json(*c.phase_change);
  if (c.grokking) j["grokking"] = grokking_json(*c.grokking);
  if (!c.embedding_spectrum.empty()) j["embedding_spectrum"] = c.embedding_spectrum;
  if (c.attribution_positions > 0)
    j["direct_logit_attribution"] = {{"positions", c.attribution_positions},
                                     {"logit", c.attribution_logit},
                                     {"embed", c.attribution_embed},
                                     {"heads", c.attribution_heads},
                                     {"attention_bias", c.attribution_attention_bias},
                                     {"mlp", c.attribution_mlp},
                                     {"final_bias", c.attribution_final_bias}};
  return j.dump(1) + "\n";
}

CircuitsReport circuits_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("not a JSON object");
  CircuitsReport c;
  try {
    c.task = j.value("task", std::string());
    if (j.contains("embedding_spectrum")) c.embedding_spectrum = numbers_of(j.at("embedding_spectrum"));
    if (j.contains("direct_logit_attribution")) {
      const nlohmann::json& a = j.at("direct_logit_attribution");
      c.attribution_positions = a.at("positions").get<std::size_t>();
      c.attribution_logit = number_or_nan(a, "logit");
      c.attribution_embed = number_or_nan(a, "embed");
      c.attribution_heads = table_of(a.at("heads"));
      c.attribution_attention_bias = numbers_of(a.at("attention_bias"));
      c.attribution_mlp = numbers_of(a.at("mlp"));
      c.attribution_final_bias = number_or_nan(a, "final_bias");
    }
    if (j.contains("phase_change")) c.phase_change = phase_change_from(j.at("phase_change"));
    if (j.contains("grokking")) c.grokking = grokking_from(j.at("grokking"));
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("a value is missing or has the wrong type ({})", e.what()));
  }
  return c;
}

namespace report {

namespace {

constexpr const char* kPhaseColor = "#d62728";
constexpr const char* kMemorisedColor = "#ff7f0e";
constexpr const char* kGrokkedColor = "#2ca02c";

std::size_t evaluations_with_val_loss(const std::vector<MetricsRow>& metrics) {
  return static_cast<std::size_t>(
      std::count_if(metrics.begin(), metrics.end(), [](const MetricsRow& m) { return m.val_loss.has_value(); }));
}

std::size_t evaluations_with_accuracies(const std::vector<MetricsRow>& metrics) {
  return static_cast<std::size_t>(std::count_if(metrics.begin(), metrics.end(), [](const MetricsRow& m) {
    return m.accuracy.has_value() && m.train_accuracy.has_value();
  }));
}

bool phase_change_run(const ReportData& d) { return d.circuits.task == "repeats"; }
bool grokking_run(const ReportData& d) { return d.circuits.task == "modular"; }

std::string phase_change_html(const ReportData& data) {
  if (evaluations_with_val_loss(data.metrics) < 2) return "";
  const analysis::PhaseChangeCriteria criteria;
  const analysis::PhaseChange pc = phase_change_of(data.metrics);
  std::string html = "<h2>Phase change</h2>\n<p class=\"summary\" id=\"phase-change\">";
  std::string text;
  if (pc.found) {
    text = fmt::format("Phase change at step {}: the held-out loss fell from {:.3f} to {:.3f} ({:.3f} nats, {:.0f}%) "
                       "between steps {} and {}.",
                       pc.step, pc.loss_before, pc.loss_after, pc.drop(), 100 * pc.drop() / pc.loss_before,
                       pc.start_step, pc.end_step);
  } else if (pc.windows == 0) {
    text =
        fmt::format("No phase change can be judged: no two evaluations lie within {:.0f}% of the run's steps (evaluate "
                    "more often, or train longer).",
                    100 * criteria.max_window_fraction);
  } else {
    text = fmt::format("No phase change: within {:.0f}% of the run's steps the held-out loss never fell by half of "
                       "its whole fall and by half of its value (the largest fall in such a window: {:.3f} to {:.3f}, "
                       "steps {} to {}).",
                       100 * criteria.max_window_fraction, pc.loss_before, pc.loss_after, pc.start_step, pc.end_step);
  }
  if (pc.layer && pc.windows > 0)
    text += fmt::format(" The best head of a later layer, L{} H{}, put {:.2f} of its attention on the induction key at "
                        "step {} and {:.2f} at step {}.",
                        *pc.layer, *pc.head, pc.score_before, pc.start_step, pc.score_after, pc.end_step);
  else if (!pc.layer)
    text += " The model has one layer: no later layer can read a previous-token head, so no induction head can form.";
  if (pc.previous_token_step) {
    text +=
        fmt::format(" The layer-0 previous-token head L0 H{} reached {:.2f} (the threshold {:.1f}) at step {}",
                    pc.previous_token_head, pc.previous_token_score, criteria.head_threshold, *pc.previous_token_step);
    text += pc.found ? fmt::format(", {} steps {} the phase change.", std::abs(pc.step - *pc.previous_token_step),
                                   *pc.previous_token_step <= pc.step ? "before" : "after")
                     : ".";
  } else {
    text += fmt::format(" No layer-0 head reached a previous-token score of {:.1f}.", criteria.head_threshold);
  }
  html += html_escape(text) + "</p>\n";
  html +=
      "<p class=\"summary\">A phase change here is a window of at most 20% of the run's steps in which the held-out "
      "loss falls by at least half of the run's whole fall and by at least half of its value at the window's "
      "start; its step is the first evaluation at or below the halfway loss. The band on the loss chart is the "
      "window.</p>\n";
  return html;
}

std::string grokking_html(const ReportData& data) {
  if (evaluations_with_accuracies(data.metrics) == 0) return "";
  const analysis::GrokkingMarks g = grokking_of(data.metrics);
  std::string text;
  if (g.memorised)
    text = fmt::format("Memorised at step {}: training accuracy {:.3f}, held-out accuracy {:.3f}.", *g.memorised,
                       g.train_at_memorised, g.held_out_at_memorised);
  else
    text = "Never memorised: no evaluation had training accuracy >= 0.99 with held-out accuracy <= 0.5.";
  if (g.grokked)
    text += fmt::format(" Grokked at step {}: held-out accuracy {:.3f}, {} steps after memorising.", *g.grokked,
                        g.held_out_at_grokked, *g.grokked - *g.memorised);
  else if (g.memorised)
    text += fmt::format(" Did not grok within the run's {} steps: the best held-out accuracy was {:.3f}.",
                        data.metrics.back().step, g.best_held_out);
  return "<h2>Grokking</h2>\n<p class=\"summary\" id=\"grokking\">" + html_escape(text) +
         "</p>\n<p class=\"summary\">Memorised: the first evaluation with training accuracy &ge; 0.99 while the "
         "held-out accuracy is &le; 0.5. Grokked: the first one after it with held-out accuracy &ge; 0.95. Both are "
         "marked on the loss and accuracy charts; the weight norm is on the accuracy chart's right scale.</p>\n";
}

std::string spectrum_html(const std::vector<double>& spectrum) {
  if (spectrum.empty()) return "";
  std::vector<std::size_t> order(spectrum.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return spectrum[a] > spectrum[b]; });
  const std::size_t top = std::min<std::size_t>(5, order.size());
  order.resize(top);
  double share = 0;
  for (const std::size_t k : order) share += spectrum[k];
  const std::size_t p = 2 * (spectrum.size() - 1) + 1;  // p odd (the task's primes); an even p has the same bars
  std::string keys;
  for (const std::size_t k : order)
    keys += fmt::format("{}{} ({:.1f}%)", keys.empty() ? "" : ", ", k, 100 * spectrum[k]);
  const std::string text = fmt::format(
      "The share of the numbers' embedding (rows 0..p-1 of wte) at each frequency k: its projection on cos(2 pi k x / "
      "p) and sin(2 pi k x / p) over the tokens x. The {} largest, k = {}, hold {:.0f}% of it; an embedding spread "
      "evenly over the frequencies would give each about {:.1f}%.",
      top, keys, 100 * share, 100 * 2.0 / static_cast<double>(p));
  return "<h2>Embedding spectrum</h2>\n<p class=\"summary\" id=\"spectrum\">" + html_escape(text) +
         "</p>\n<div class=\"charts\">" +
         svg_bar_chart("chart-spectrum", "Fourier spectrum of the embedding", "frequency k", spectrum, order) +
         "</div>\n";
}

// A diverging colour for an attribution: red positive, blue negative, white 0, full at |v| = scale.
std::string diverging(double v, double scale) {
  const double t = scale > 0 ? std::clamp(v / scale, -1.0, 1.0) : 0.0;
  const auto mix = [&](int full) { return static_cast<int>(std::lround(255 + (full - 255) * std::abs(t))); };
  return t >= 0 ? fmt::format("#{:02x}{:02x}{:02x}", 255, mix(40), mix(40))
                : fmt::format("#{:02x}{:02x}{:02x}", mix(40), mix(90), 255);
}

std::string attribution_cell(double v, double scale, const std::string& attrs = "") {
  return fmt::format("<td class=\"dla\"{} style=\"background:{};color:{}\">{:+.2f}</td>", attrs, diverging(v, scale),
                     std::abs(v) > 0.6 * scale ? "#fff" : "#222", v);
}

std::string attribution_html(const CircuitsReport& c) {
  if (c.attribution_positions == 0 || c.attribution_heads.empty()) return "";
  double scale = 0;
  for (const auto& row : c.attribution_heads)
    for (const double v : row) scale = std::max(scale, std::abs(v));
  const std::size_t L = c.attribution_heads.size(), H = c.attribution_heads[0].size();
  std::string html =
      "<h2>Direct logit attribution</h2>\n<p class=\"summary\">How much each head writes the correct next "
      "token directly: its output through the final norm (its scale from the real forward) and the "
      "unembedding, as a part of logit[answer] &minus; mean logit, averaged over " +
      std::to_string(c.attribution_positions) +
      " scored positions of the held-out data. Red adds to the answer's logit, blue takes from "
      "it; the parts add up to the logit.</p>\n";
  html += "<table id=\"dla\" class=\"scores\"><caption>Direct logit attribution per head</caption>\n<tr><th></th>";
  for (std::size_t h = 0; h < H; ++h) html += fmt::format("<th scope=\"col\">H{}</th>", h);
  html += "<th scope=\"col\">attention bias</th>";
  if (!c.attribution_mlp.empty()) html += "<th scope=\"col\">MLP</th>";
  html += "</tr>\n";
  for (std::size_t l = 0; l < L; ++l) {
    html += fmt::format("<tr><th scope=\"row\">L{}</th>", l);
    for (std::size_t h = 0; h < H && h < c.attribution_heads[l].size(); ++h)
      html +=
          attribution_cell(c.attribution_heads[l][h], scale, fmt::format(" data-layer=\"{}\" data-head=\"{}\"", l, h));
    if (l < c.attribution_attention_bias.size()) html += attribution_cell(c.attribution_attention_bias[l], scale);
    if (l < c.attribution_mlp.size()) html += attribution_cell(c.attribution_mlp[l], scale);
    html += "</tr>\n";
  }
  html += "</table>\n";
  html += "<p class=\"summary\">" +
          html_escape(fmt::format(
              "Embeddings {:+.2f}, final norm's bias {:+.2f}; all parts {:+.2f}, the logit "
              "difference itself {:+.2f}.",
              c.attribution_embed, c.attribution_final_bias,
              [&] {
                double s = c.attribution_embed + c.attribution_final_bias;
                for (const auto& row : c.attribution_heads) s = std::accumulate(row.begin(), row.end(), s);
                s = std::accumulate(c.attribution_attention_bias.begin(), c.attribution_attention_bias.end(), s);
                return std::accumulate(c.attribution_mlp.begin(), c.attribution_mlp.end(), s);
              }(),
              c.attribution_logit)) +
          "</p>\n";
  return html;
}

}  // namespace

CircuitMarks circuit_marks(const ReportData& data) {
  CircuitMarks marks;
  if (phase_change_run(data)) {
    const analysis::PhaseChange pc = phase_change_of(data.metrics);
    if (pc.found) {
      marks.loss.push_back({static_cast<double>(pc.step), fmt::format("phase change, step {}", pc.step), kPhaseColor,
                            true, static_cast<double>(pc.start_step), static_cast<double>(pc.end_step)});
      marks.scores.push_back(marks.loss.back());
    }
    if (pc.previous_token_step)
      marks.scores.push_back({static_cast<double>(*pc.previous_token_step),
                              fmt::format("L0 previous-token head, step {}", *pc.previous_token_step),
                              kMemorisedColor});
  }
  if (grokking_run(data)) {
    const analysis::GrokkingMarks g = grokking_of(data.metrics);
    if (g.memorised) {
      const ChartMark m{static_cast<double>(*g.memorised), fmt::format("memorised, step {}", *g.memorised),
                        kMemorisedColor};
      marks.loss.push_back(m);
      marks.accuracy.push_back(m);
    }
    if (g.grokked) {
      const ChartMark m{static_cast<double>(*g.grokked), fmt::format("grokked, step {}", *g.grokked), kGrokkedColor};
      marks.loss.push_back(m);
      marks.accuracy.push_back(m);
    }
  }
  return marks;
}

std::string circuits_html(const ReportData& data) {
  std::string html;
  if (phase_change_run(data)) html += phase_change_html(data);
  if (grokking_run(data)) html += grokking_html(data);
  html += spectrum_html(data.circuits.embedding_spectrum);
  html += attribution_html(data.circuits);
  return html;
}

}  // namespace report

}  // namespace tf::io
