// The report's circuits: a `repeats` run's phase change in words and as a band and a mark on the loss chart (and its
// absence said for a run without one); a `modular` run's memorised and grokked marks on the loss and accuracy charts
// with the training accuracy and the weight norm, its embedding's spectrum; the direct logit attribution table; and
// circuits.json read back as written.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "tinyformer/io/html_report.hpp"

using namespace tf;

namespace {

std::size_t occurrences(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

// Evaluations every 50 steps to 1000 of a 2-layer, 2-head model on `repeats`; the loss falls from 4 to 0.3 between
// steps 500 and 550 when `sudden` (to 0.4), and only from 4 to 3.6 otherwise; L0 H1's previous-token score rises at
// 300.
io::ReportData repeats_report(bool sudden) {
  io::ReportData d;
  d.circuits.task = "repeats";
  for (long s = 0; s <= 1000; s += 50) {
    io::MetricsRow m;
    m.step = s;
    m.train_loss = sudden ? (s < 550 ? 4.0 : 0.4) : 4.0 - 0.4 * double(s) / 1000;
    m.val_loss = m.train_loss;
    m.attention_score = {{0.05, 0.05}, {0.05, sudden && s >= 550 ? 0.93 : 0.06}};
    m.previous_token_score = {{0.1, s >= 300 ? 0.85 : 0.1}, {0.1, 0.1}};
    d.metrics.push_back(m);
  }
  return d;
}

io::ReportData modular_report(bool grokking) {
  io::ReportData d;
  d.circuits.task = "modular";
  for (long s = 0; s <= 2000; s += 100) {
    io::MetricsRow m;
    m.step = s;
    m.train_loss = 1.0;
    m.val_loss = 2.0;
    m.train_accuracy = s >= 300 ? 1.0 : 0.1;
    m.accuracy = grokking && s >= 1500 ? 0.99 : 0.02;
    m.weight_norm = 40.0 - double(s) / 100;
    d.metrics.push_back(m);
  }
  d.circuits.embedding_spectrum.assign(57, 0.001);
  d.circuits.embedding_spectrum[14] = 0.4;
  d.circuits.embedding_spectrum[35] = 0.3;
  return d;
}

}  // namespace

TEST_CASE("io: a repeats run's report gives the phase change's step, drop and heads, and marks it on the loss chart",
          "[io]") {
  const std::string html = io::render_html_report(repeats_report(true));
  CHECK(html.find("<h2>Phase change</h2>") != std::string::npos);
  CHECK(html.find("Phase change at step 550: the held-out loss fell from 4.000 to 0.400 (3.600 nats, 90%)") !=
        std::string::npos);
  CHECK(html.find("L1 H1, put 0.06 of its attention on the induction key at step") != std::string::npos);
  CHECK(html.find("and 0.93 at step") != std::string::npos);
  CHECK(html.find("L0 H1 reached 0.85 (the threshold 0.4) at step 300, 250 steps before the phase change") !=
        std::string::npos);
  const std::size_t loss_chart = html.find("<svg id=\"chart-loss\"");
  const std::size_t loss_end = html.find("</svg>", loss_chart);
  const std::string loss = html.substr(loss_chart, loss_end - loss_chart);
  CHECK(occurrences(loss, "class=\"mark-band\"") == 1);
  CHECK(loss.find("class=\"mark\" data-step=\"550\"") != std::string::npos);
  CHECK(loss.find("phase change, step 550") != std::string::npos);
  // the best head's score chart: the same band, and the step the previous-token head formed
  const std::size_t scores_chart = html.find("<svg id=\"chart-best-score\"");
  REQUIRE(scores_chart != std::string::npos);
  const std::string scores = html.substr(scores_chart, html.find("</svg>", scores_chart) - scores_chart);
  CHECK(occurrences(scores, "class=\"mark-band\"") == 1);
  CHECK(scores.find("L0 previous-token head, step 300") != std::string::npos);
}

TEST_CASE("io: a repeats run without a sudden fall says there was no phase change and marks none on the loss chart",
          "[io]") {
  const std::string html = io::render_html_report(repeats_report(false));
  CHECK(html.find("No phase change: within 20% of the run&#39;s steps") != std::string::npos);
  const std::size_t loss_chart = html.find("<svg id=\"chart-loss\"");
  const std::string loss = html.substr(loss_chart, html.find("</svg>", loss_chart) - loss_chart);
  CHECK(occurrences(loss, "class=\"mark\"") + occurrences(loss, "class=\"mark-band\"") == 0);
  // the best head's chart still marks when the previous-token head formed
  const std::size_t scores_chart = html.find("<svg id=\"chart-best-score\"");
  REQUIRE(scores_chart != std::string::npos);
  const std::string scores = html.substr(scores_chart, html.find("</svg>", scores_chart) - scores_chart);
  CHECK(scores.find("L0 previous-token head, step 300") != std::string::npos);
  CHECK(occurrences(scores, "class=\"mark-band\"") == 0);
  io::ReportData one = repeats_report(false);  // a one-layer model: no later layer
  for (auto& m : one.metrics) m.attention_score.resize(1), m.previous_token_score.resize(1);
  CHECK(io::render_html_report(one).find("The model has one layer") != std::string::npos);
}

TEST_CASE("io: a modular run's report marks memorised and grokked, with train accuracy and the weight norm", "[io]") {
  const std::string html = io::render_html_report(modular_report(true));
  CHECK(html.find("Memorised at step 300: training accuracy 1.000, held-out accuracy 0.020.") != std::string::npos);
  CHECK(html.find("Grokked at step 1500: held-out accuracy 0.990, 1200 steps after memorising.") != std::string::npos);
  for (const char* chart : {"<svg id=\"chart-loss\"", "<svg id=\"chart-accuracy\""}) {
    const std::size_t at = html.find(chart);
    REQUIRE(at != std::string::npos);
    const std::string svg = html.substr(at, html.find("</svg>", at) - at);
    CHECK(svg.find("memorised, step 300") != std::string::npos);
    CHECK(svg.find("grokked, step 1500") != std::string::npos);
  }
  const std::size_t acc = html.find("<svg id=\"chart-accuracy\"");
  const std::string accuracy = html.substr(acc, html.find("</svg>", acc) - acc);
  CHECK(accuracy.find(">train accuracy<") != std::string::npos);
  CHECK(accuracy.find(">held-out accuracy<") != std::string::npos);
  CHECK(accuracy.find("weight norm (right scale)") != std::string::npos);
  CHECK(occurrences(accuracy, "class=\"right-tick\"") >= 3);
  // the spectrum: bars for k = 0 .. 56, the two key frequencies labelled
  CHECK(html.find("<h2>Embedding spectrum</h2>") != std::string::npos);
  CHECK(occurrences(html, "class=\"bar\"") == 57);
  CHECK(html.find("k = 14 (40.0%), 35 (30.0%)") != std::string::npos);
  // the control: memorised, never grokked
  const std::string control = io::render_html_report(modular_report(false));
  CHECK(control.find("Did not grok within the run&#39;s 2000 steps: the best held-out accuracy was 0.020.") !=
        std::string::npos);
  CHECK(control.find("grokked, step") == std::string::npos);
}

TEST_CASE("io: circuits.json reads back as written, and the attribution table colours each head", "[io]") {
  io::CircuitsReport c;
  c.task = "modular";
  c.embedding_spectrum = {0.1, 0.9};
  c.attribution_positions = 40;
  c.attribution_logit = 5.5;
  c.attribution_embed = 0.5;
  c.attribution_heads = {{1.0, -0.5}, {3.0, 0.25}};
  c.attribution_attention_bias = {0.1, 0.1};
  c.attribution_mlp = {0.5, 0.0};
  c.attribution_final_bias = 0.05;
  const io::CircuitsReport back = io::circuits_from_json(io::circuits_json(c));
  CHECK(back.task == c.task);
  CHECK(back.embedding_spectrum == c.embedding_spectrum);
  CHECK(back.attribution_positions == 40);
  CHECK(back.attribution_heads == c.attribution_heads);
  CHECK(back.attribution_mlp == c.attribution_mlp);
  CHECK(back.attribution_final_bias == c.attribution_final_bias);
  CHECK_THROWS_WITH(io::circuits_from_json("[1, 2]"), Catch::Contains("not a JSON object"));
  CHECK_THROWS_WITH(io::circuits_from_json("{\"embedding_spectrum\": \"x\"}"), Catch::Contains("wrong type"));
  io::ReportData d;
  d.circuits = c;
  const std::string html = io::render_html_report(d);
  CHECK(html.find("<table id=\"dla\"") != std::string::npos);
  CHECK(occurrences(html, "<td class=\"dla\" data-layer=") == 4);
  CHECK(html.find("data-layer=\"1\" data-head=\"0\" style=\"background:#ff2828") != std::string::npos);  // the largest
  CHECK(html.find("averaged over 40 scored positions") != std::string::npos);
  CHECK(html.find("all parts +5.00, the logit difference itself +5.50") != std::string::npos);
}

TEST_CASE("io: a run too short to judge a phase change says so, and circuits.json keeps its NaN as null", "[io]") {
  io::ReportData d = repeats_report(true);
  d.metrics.resize(3);  // steps 0, 50, 100: no two evaluations within 20% of 100 steps
  const std::string html = io::render_html_report(d);
  CHECK(html.find("No phase change can be judged: no two evaluations lie within 20%") != std::string::npos);
  const std::size_t at = html.find("id=\"phase-change\"");
  CHECK(html.substr(at, html.find("</p>", at) - at).find("nan") == std::string::npos);
  io::CircuitsReport c;
  c.task = "repeats";
  c.phase_change = io::phase_change_of(d.metrics);
  CHECK(c.phase_change->windows == 0);
  c.attribution_positions = 1;
  c.attribution_logit = std::nan("");
  c.attribution_heads = {{std::nan(""), 1.0}};
  const io::CircuitsReport back = io::circuits_from_json(io::circuits_json(c));
  REQUIRE(back.phase_change.has_value());
  CHECK(std::isnan(back.phase_change->score_before));
  CHECK(std::isnan(back.attribution_logit));
  CHECK(std::isnan(back.attribution_heads[0][0]));
  CHECK(back.attribution_heads[0][1] == 1.0);
}
