// The HTML report page: its sections (each only with data), the embedded attention JSON, the per-head score
// table. Charts are in html_report_svg.cpp, style and script in html_report.css and html_report.js.
#include "tinyformer/io/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/heatmap_png.hpp"
#include "tinyformer/io/html_report_parts.hpp"

namespace tf::io {

namespace {

using report::html_escape;
using report::Series;
using report::short_number;
using report::StepAxis;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string hex_color(const std::array<std::uint8_t, 3>& c) {
  return fmt::format("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]);
}

// One colour per head (and per layer in the entropy chart), away from the orange of the expected-key outlines.
const std::vector<std::string>& head_colors() {
  static const std::vector<std::string> colors{"#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                               "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#393b79"};
  return colors;
}

// ---- attention data --------------------------------------------------------------------------------------

// Checks one snapshot against the header's rules; returns its sizes.
AttentionDims check_snapshot(const AttentionSnapshot& s, std::size_t index) {
  const std::string where = fmt::format("write_html_report: attention snapshot {} (step {})", index, s.step);
  const AttentionDims d = check_attention_weights(s.weights, s.tokens.size(), where);
  if (!s.expected.empty() && s.expected.size() != d.tokens)
    throw std::invalid_argument(fmt::format("{}: {} expected keys for T = {}: give one per query (-1 for none) or none",
                                            where, s.expected.size(), d.tokens));
  for (std::size_t q = 0; q < s.expected.size(); ++q)
    if (s.expected[q] < -1 || s.expected[q] >= static_cast<long>(d.tokens))
      throw std::invalid_argument(
          fmt::format("{}: expected key {} of query {} is not in [-1, {})", where, s.expected[q], q, d.tokens));
  bool scores_ok = s.scores.empty() || s.scores.size() == d.layers;
  for (const auto& row : s.scores) scores_ok = scores_ok && row.size() == d.heads;
  if (!scores_ok)
    throw std::invalid_argument(
        fmt::format("{}: scores must be [L][H] = [{}][{}] (one per head) or empty", where, d.layers, d.heads));
  return d;
}

// [L][H] as nested arrays; a non-finite score becomes null.
nlohmann::json table_json(const HeadTable& table) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& row : table) {
    nlohmann::json r = nlohmann::json::array();
    for (const double v : row) r.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json());
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json snapshot_json(const AttentionSnapshot& s, std::size_t index) {
  const AttentionDims d = check_snapshot(s, index);
  std::vector<int> thousandths(s.weights.size());
  const float* w = s.weights.data();
  for (std::size_t k = 0; k < thousandths.size(); ++k)
    thousandths[k] =
        std::isnan(w[k]) ? -1 : static_cast<int>(std::lround(std::clamp(static_cast<double>(w[k]), 0.0, 1.0) * 1000.0));
  nlohmann::json j = {
      {"step", s.step}, {"tokens", s.tokens}, {"shape", {d.layers, d.heads, d.tokens}}, {"w", std::move(thousandths)}};
  if (!s.expected.empty()) j["expected"] = s.expected;
  if (!s.scores.empty()) j["scores"] = table_json(s.scores);
  return j;
}

// {"colors": [101 colors for weights 0, 0.01, ..., 1], "nan_color", "head_colors", "snapshots": [{"step", "tokens",
// "shape": [L,H,T], "w": [thousandths, -1 for NaN], "expected"?: [T], "scores"?: [L][H]}]}, with '<' escaped so that
// it can sit inside <script>.
std::string attention_json(const std::vector<AttentionSnapshot>& snapshots) {
  nlohmann::json colors = nlohmann::json::array();
  for (int i = 0; i <= 100; ++i) colors.push_back(hex_color(attention_color(static_cast<float>(i) / 100.f)));
  nlohmann::json snaps = nlohmann::json::array();
  for (std::size_t i = 0; i < snapshots.size(); ++i) snaps.push_back(snapshot_json(snapshots[i], i));
  const nlohmann::json doc = {{"colors", std::move(colors)},
                              {"nan_color", hex_color(attention_color(std::nanf("")))},
                              {"head_colors", head_colors()},
                              {"snapshots", std::move(snaps)}};
  // Invalid UTF-8 in a token becomes U+FFFD instead of failing the report.
  const std::string text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '<')
      out += "\\u003c";  // '<' only occurs inside JSON strings, where this escape is equivalent
    else
      out += c;
  }
  return out;
}

// ---- training curves ---------------------------------------------------------------------------------------

// The steps of the metrics and the snapshots: the x range of every chart.
StepAxis step_axis(const ReportData& data) {
  std::vector<double> steps;
  for (const auto& m : data.metrics) steps.push_back(static_cast<double>(m.step));
  for (const auto& s : data.attention) steps.push_back(static_cast<double>(s.step));
  if (steps.empty()) return {};
  const auto [lo, hi] = std::minmax_element(steps.begin(), steps.end());
  return {*lo, *hi};
}

// Mean of the finite values of one layer's row, NaN when there is none.
double finite_mean(const std::vector<double>& row) {
  double sum = 0.0;
  std::size_t n = 0;
  for (const double v : row)
    if (std::isfinite(v)) sum += v, ++n;
  return n ? sum / static_cast<double>(n) : kNaN;
}

// Attention entropy: one series per layer, the mean over its heads; rows without entropy are skipped.
std::vector<Series> entropy_series(const std::vector<MetricsRow>& metrics) {
  std::vector<Series> series;
  for (const auto& m : metrics)
    for (std::size_t l = 0; l < m.attention_entropy.size(); ++l) {
      if (l >= series.size()) series.push_back({fmt::format("L{}", l), head_colors()[l % head_colors().size()], {}});
      series[l].points.emplace_back(static_cast<double>(m.step), finite_mean(m.attention_entropy[l]));
    }
  if (series.size() == 1) series[0].name = "mean over heads";
  return series;
}

std::string charts_html(const ReportData& data, const StepAxis& axis) {
  const std::vector<MetricsRow>& metrics = data.metrics;
  // Colors chosen away from the blues of the attention maps.
  Series train{"train loss", "#e6550d", {}}, val{"val loss", "#756bb1", {}};
  Series bpb{"val bits per byte", "#756bb1", {}};
  Series accuracy{"accuracy", "#31a354", {}}, lr{"learning rate", "#636363", {}}, grad{"gradient norm", "#a63603", {}};
  Series train_accuracy{"train accuracy", "#e6550d", {}}, weight_norm{"weight norm", "#7f7f7f", {}};
  for (const auto& m : metrics) {
    const double x = static_cast<double>(m.step);
    train.points.emplace_back(x, m.train_loss);
    lr.points.emplace_back(x, m.lr);
    // Optional values: a row without one does not break the line, it is left out.
    if (m.val_loss) val.points.emplace_back(x, *m.val_loss);
    if (m.val_bpb) bpb.points.emplace_back(x, *m.val_bpb);
    if (m.accuracy) accuracy.points.emplace_back(x, *m.accuracy);
    if (m.grad_norm) grad.points.emplace_back(x, *m.grad_norm);
    if (m.train_accuracy) train_accuracy.points.emplace_back(x, *m.train_accuracy);
    if (m.weight_norm) weight_norm.points.emplace_back(x, *m.weight_norm);
  }
  const std::vector<Series> entropy = entropy_series(metrics);
  const report::CircuitMarks marks = report::circuit_marks(data);
  std::string out = "<div class=\"charts\">";
  out += report::svg_line_chart("chart-loss", "Loss", {train, val}, axis, true, {{}, "", marks.loss});
  if (!bpb.points.empty()) out += report::svg_line_chart("chart-bpb", "Bits per byte (held out)", {bpb}, axis, false);
  if (!accuracy.points.empty()) {
    // with a fixed training set (modular): its accuracy too, and the weight norm that weight decay shrinks
    std::vector<Series> accuracies{accuracy};
    report::ChartExtras extras{{}, "", marks.accuracy};
    if (!train_accuracy.points.empty()) {
      accuracy.name = "held-out accuracy";
      accuracies = {train_accuracy, accuracy};
      if (!weight_norm.points.empty()) extras.right = {weight_norm}, extras.right_title = "weight norm";
    }
    out += report::svg_line_chart("chart-accuracy", "Accuracy", accuracies, axis, false, extras);
  }
  out += report::svg_line_chart("chart-lr", "Learning rate", {lr}, axis, false);
  if (!grad.points.empty()) out += report::svg_line_chart("chart-grad-norm", "Gradient norm", {grad}, axis, true);
  if (!entropy.empty())
    out += report::svg_line_chart("chart-entropy", "Attention entropy (nats)", entropy, axis, false);
  return out + "</div>\n";
}

std::string summary_html(const std::vector<MetricsRow>& metrics) {
  const MetricsRow& last = metrics.back();
  std::string s = fmt::format("{} logged steps, last step {}: train loss {}", metrics.size(), last.step,
                              short_number(last.train_loss));
  std::optional<double> best_val, last_val;
  std::optional<long> best_step;
  for (const auto& m : metrics)
    if (m.val_loss && std::isfinite(*m.val_loss)) {
      last_val = m.val_loss;
      if (!best_val || *m.val_loss < *best_val) best_val = m.val_loss, best_step = m.step;
    }
  if (last_val)
    s +=
        fmt::format(", val loss {} (best {} at step {})", short_number(*last_val), short_number(*best_val), *best_step);
  if (last.val_bpb) s += fmt::format(", val bits per byte {}", short_number(*last.val_bpb));
  if (last.train_accuracy) s += fmt::format(", train accuracy {}", short_number(*last.train_accuracy));
  if (last.accuracy) s += fmt::format(", accuracy {}", short_number(*last.accuracy));
  if (last.grad_norm) s += fmt::format(", gradient norm {}", short_number(*last.grad_norm));
  s += fmt::format(", learning rate {}.", short_number(last.lr));
  return "<p class=\"summary\">" + html_escape(s) + "</p>\n";
}

// ---- heads -----------------------------------------------------------------------------------------------

// The per-head scores the table shows: the expected-pattern scores of the latest metrics row with them, else of the
// latest snapshot with them; without any (text), the induction scores of the latest metrics row with them.
struct ScoreSource {
  long step = 0;
  HeadTable table;
  bool induction = false;  // the table holds MetricsRow::induction_score
};

std::optional<ScoreSource> latest_scores(const ReportData& data) {
  for (auto m = data.metrics.rbegin(); m != data.metrics.rend(); ++m)
    if (!m->attention_score.empty()) return ScoreSource{m->step, m->attention_score, false};
  for (auto s = data.attention.rbegin(); s != data.attention.rend(); ++s)
    if (!s->scores.empty()) return ScoreSource{s->step, s->scores, false};
  for (auto m = data.metrics.rbegin(); m != data.metrics.rend(); ++m)
    if (!m->induction_score.empty()) return ScoreSource{m->step, m->induction_score, true};
  return std::nullopt;
}

std::string score_name(const ScoreSource& scores) {
  return scores.induction ? "Induction score" : "Expected-pattern score";
}

// The head with the highest finite score (the first one on ties); nullopt when no score is finite.
std::optional<std::pair<std::size_t, std::size_t>> best_of(const HeadTable& table) {
  std::optional<std::pair<std::size_t, std::size_t>> best;
  double best_score = -std::numeric_limits<double>::infinity();
  for (std::size_t l = 0; l < table.size(); ++l)
    for (std::size_t h = 0; h < table[l].size(); ++h)
      if (std::isfinite(table[l][h]) && table[l][h] > best_score) best_score = table[l][h], best = std::make_pair(l, h);
  return best;
}

// One cell of the score table: the score on its colormap colour, and the head's role under it.
std::string score_cell(const ReportData& data, const std::optional<ScoreSource>& scores, std::size_t l, std::size_t h,
                       bool best) {
  std::string cls = best ? "score best" : "score", style, text = "&ndash;";
  if (scores && l < scores->table.size() && h < scores->table[l].size() && std::isfinite(scores->table[l][h])) {
    const double v = scores->table[l][h];
    style = fmt::format(" style=\"background:{};color:{}\"", hex_color(attention_color(static_cast<float>(v))),
                        v > 0.55 ? "#fff" : "#222");
    text = fmt::format("{:.2f}", v);
  }
  if (l < data.head_roles.size() && h < data.head_roles[l].size() && !data.head_roles[l][h].empty())
    text += "<div class=\"role\">" + html_escape(data.head_roles[l][h]) + "</div>";
  return fmt::format("<td class=\"{}\" data-layer=\"{}\" data-head=\"{}\"{}>{}</td>", cls, l, h, style, text);
}

// The layer x head table: scores (with the best head highlighted) and roles.
std::string score_table_html(const ReportData& data, const std::optional<ScoreSource>& scores) {
  const HeadTable empty;
  const HeadTable& table = scores ? scores->table : empty;
  std::size_t L = std::max(table.size(), data.head_roles.size()), H = 0;
  for (const auto& row : table) H = std::max(H, row.size());
  for (const auto& row : data.head_roles) H = std::max(H, row.size());
  const auto best = best_of(table);
  std::string html;
  if (scores && !scores->induction)
    html +=
        "<p class=\"summary\">The expected-pattern score of a head is the fraction of each answer query's attention "
        "that lands on its expected key, averaged over the answer queries (1 = all of it).</p>\n";
  if (scores && scores->induction)
    html += "<p class=\"summary\">The induction score of a head is the fraction of the attention of each query whose "
            "token occurred earlier that lands on the token after that earlier occurrence, averaged over those "
            "queries of the held-out data (1 = all of it).</p>\n";
  html += "<table id=\"head-scores\" class=\"scores\"><caption>";
  html += scores ? fmt::format("{} of each head at step {}", score_name(*scores), scores->step)
                 : std::string("The role of each head");
  html += "</caption>\n<tr><th></th>";
  for (std::size_t h = 0; h < H; ++h) html += fmt::format("<th scope=\"col\">H{}</th>", h);
  html += "</tr>\n";
  for (std::size_t l = 0; l < L; ++l) {
    html += fmt::format("<tr><th scope=\"row\">L{}</th>", l);
    for (std::size_t h = 0; h < H; ++h) html += score_cell(data, scores, l, h, best == std::make_pair(l, h));
    html += "</tr>\n";
  }
  html += "</table>\n";
  if (best)
    html += fmt::format("<p class=\"summary\" id=\"best-head\">Best head: L{} H{}, score {:.3f}.</p>\n", best->first,
                        best->second, table[best->first][best->second]);
  return html;
}

// The score of head (l, h) over the steps: from the metrics rows and the snapshots that have scores (both are
// measured on the held-out data; the snapshots add the early steps before the first evaluation), one point a step.
// Induction scores come from the metrics rows alone.
Series best_head_series(const ReportData& data, std::size_t l, std::size_t h, bool induction) {
  std::map<long, double> by_step;
  auto add = [&](long step, const HeadTable& t) {
    if (l < t.size() && h < t[l].size()) by_step.emplace(step, t[l][h]);
  };
  for (const auto& m : data.metrics) add(m.step, induction ? m.induction_score : m.attention_score);
  if (!induction)
    for (const auto& snap : data.attention) add(snap.step, snap.scores);
  Series s{fmt::format("L{} H{}", l, h), "#1f77b4", {}};
  for (const auto& [step, v] : by_step) s.points.emplace_back(static_cast<double>(step), v);
  return s;
}

std::string heads_html(const ReportData& data, const StepAxis& axis) {
  const std::optional<ScoreSource> scores = latest_scores(data);
  if (!scores && data.head_roles.empty() && data.expected_pattern.empty()) return "";
  std::string html = "<h2>Heads</h2>\n";
  if (!data.expected_pattern.empty())
    html += "<p class=\"pattern\" id=\"expected-pattern\"><b>Expected pattern.</b> " +
            html_escape(data.expected_pattern) + "</p>\n";
  if (scores || !data.head_roles.empty()) html += score_table_html(data, scores);
  const auto best = scores ? best_of(scores->table) : std::nullopt;
  const Series s = best ? best_head_series(data, best->first, best->second, scores->induction) : Series{};
  if (s.points.size() >= 2) {  // a chart over steps needs at least two of them
    html += "<div class=\"charts\">" +
            report::svg_line_chart("chart-best-score", fmt::format("{} of {} (best head)", score_name(*scores), s.name),
                                   {s}, axis, false, {{}, "", report::circuit_marks(data).scores}) +
            "</div>\n";
  }
  return html;
}

// ---- attention maps and head view ------------------------------------------------------------------------

std::string maps_html(const ReportData& data) {
  const std::size_t n = data.attention.size();
  const bool outlines = std::any_of(data.attention.begin(), data.attention.end(),
                                    [](const AttentionSnapshot& s) { return !s.expected.empty(); });
  return fmt::format(
      "<h2>Attention maps</h2>\n<div class=\"controls\"><label for=\"snapshot\">snapshot</label>"
      "<input type=\"range\" id=\"snapshot\" min=\"0\" max=\"{}\" step=\"1\" value=\"{}\">"
      "<span id=\"step-label\">step {}</span></div>\n"
      "<p class=\"summary\">Rows are queries, columns are keys; white = 0, dark blue = 1.{} Hover a cell for its "
      "weight.{}</p>\n<div id=\"attention\"></div>\n<div id=\"tip\"></div>\n",
      n - 1, n - 1, data.attention.back().step,
      outlines ? " An orange box marks the key each answer query is expected to attend to." : "",
      data.attention_note.empty() ? "" : " " + html_escape(data.attention_note));
}

constexpr const char* kHeadViewHtml = R"HTML(<h2>Head view</h2>
<div class="controls"><label for="hv-layer">layer</label><select id="hv-layer"></select><span id="hv-heads"></span></div>
<p class="summary">Hover a query token on the left to see its attention to every key on the right: one colour per
head, line opacity = weight, each key tinted by the head that gives it the most. Click a query to keep it shown;
tick heads to show or hide them. The snapshot slider above chooses the step.</p>
<div id="head-view" data-layer="0" data-query="-1"><div id="hv-queries" class="hv-col"></div><svg id="hv-lines" width="200" height="0"></svg><div id="hv-keys" class="hv-col"></div></div>
<div id="hv-readout"></div>
)HTML";

}  // namespace

std::vector<std::size_t> fitting_snapshots(const std::vector<std::size_t>& sizes, std::size_t max_weights) {
  const std::size_t n = sizes.size(), largest = n ? *std::max_element(sizes.begin(), sizes.end()) : 0;
  const std::size_t k = largest == 0 ? n : std::min(n, max_weights / largest);
  std::vector<std::size_t> shown;
  for (std::size_t j = 0; j < k; ++j) shown.push_back(k == 1 ? n - 1 : (j * (n - 1) + (k - 1) / 2) / (k - 1));
  return shown;
}

std::string left_out_note(std::size_t shown, std::size_t total, std::size_t max_weights, const Shape& largest,
                          const std::string& where) {
  const std::string end = where.empty() ? "." : "; " + where + ".";
  if (shown == 0)
    return fmt::format("No attention map is shown: one holds {} weights ({}), more than the {} this page holds{}",
                       shape_numel(largest), shape_str(largest), max_weights, end);
  return fmt::format("{} of the {} attention maps are shown, evenly spaced: this page holds at most {} weights, and "
                     "one holds {} ({}){}",
                     shown, total, max_weights, shape_numel(largest), shape_str(largest), end);
}

std::string render_html_report(const ReportData& data, std::size_t max_weights) {
  std::vector<std::size_t> sizes;
  for (const AttentionSnapshot& s : data.attention) sizes.push_back(s.weights.size());
  const std::vector<std::size_t> shown = fitting_snapshots(sizes, max_weights);
  if (shown.size() < data.attention.size()) {  // the page without the maps it cannot hold
    ReportData fitted{data.title,          data.config_yaml,      data.metrics,    {},
                      data.attention_note, data.expected_pattern, data.head_roles, data.circuits};
    for (const std::size_t i : shown) fitted.attention.push_back(data.attention[i]);
    const AttentionSnapshot& big =
        data.attention[static_cast<std::size_t>(std::max_element(sizes.begin(), sizes.end()) - sizes.begin())];
    if (fitted.attention_note.empty())
      fitted.attention_note =
          left_out_note(shown.size(), data.attention.size(), max_weights, to_shape(big.weights.shape()), "");
    return render_html_report(fitted, max_weights);
  }
  // Built first: it validates the snapshots before anything else is done.
  const std::string json = attention_json(data.attention);
  const std::string title = html_escape(data.title.empty() ? std::string("tinyformer report") : data.title);
  const StepAxis axis = step_axis(data);

  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + title + "</title>\n<style>\n" + report::report_style() + "</style>\n</head>\n<body>\n";
  html += "<h1>" + title + "</h1>\n";
  if (!data.metrics.empty())
    html += summary_html(data.metrics) + "<h2>Training curves</h2>\n" + charts_html(data, axis);
  html += report::circuits_html(data);
  html += heads_html(data, axis);
  if (!data.attention.empty())
    html += maps_html(data) + kHeadViewHtml;
  else if (!data.attention_note.empty())
    html += "<h2>Attention maps</h2>\n<p class=\"summary\">" + html_escape(data.attention_note) + "</p>\n";
  if (!data.config_yaml.empty()) html += "<h2>Config</h2>\n<pre>" + html_escape(data.config_yaml) + "</pre>\n";
  html += "<script type=\"application/json\" id=\"tf-data\">" + json + "</script>\n";
  html += std::string("<script>\n") + report::report_script() + "</script>\n</body>\n</html>\n";
  return html;
}

void write_html_report(const std::string& path, const ReportData& data) {
  const std::string html = render_html_report(data);
  write_file_atomic(path, html.data(), html.size());
}

std::string html_iframe(const std::string& page, int height) {
  // The page's body height plus its margins (html_report.css: 16 px) once loaded, and again whenever it changes.
  constexpr const char* fit =
      "var f=this,d=f.contentDocument;if(!d)return;var fit=function(){f.style.height=(d.body.scrollHeight+40)+'px'};"
      "fit();if(window.ResizeObserver)new ResizeObserver(fit).observe(d.body)";
  return fmt::format(
      R"HTML(<iframe style="width:100%;height:{}px;border:0" srcdoc="{}" onload="(function(){{{}}}).call(this)"></iframe>)HTML",
      std::max(height, 1), html_escape(page), fit);
}

}  // namespace tf::io
