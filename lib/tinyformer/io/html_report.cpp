#include "tinyformer/io/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/heatmap_png.hpp"

namespace tf::io {

namespace {

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// "1.5", "0.001", "2e+04": short tick and summary numbers.
std::string short_number(double v) { return fmt::format("{:.4g}", v); }

std::string hex_color(const std::array<std::uint8_t, 3>& c) { return fmt::format("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]); }

// ---- inline SVG line charts -------------------------------------------------------------------------------

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // (step, value); a non-finite value breaks the line
};

constexpr double kChartW = 420, kChartH = 260;
constexpr double kPlotL = 62, kPlotR = 14, kPlotT = 30, kPlotB = 40;

// About five round tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi) {
  const double raw = (hi - lo) / 5.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9 && ticks.size() < 20; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string svg_chart(const std::string& title, const std::vector<Series>& series, bool allow_log) {
  const double inf = std::numeric_limits<double>::infinity();
  double xmin = inf, xmax = -inf, ymin = inf, ymax = -inf;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y)) {
        xmin = std::min(xmin, x), xmax = std::max(xmax, x);
        ymin = std::min(ymin, y), ymax = std::max(ymax, y);
      }
  std::string svg = fmt::format(
      "<svg width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\">"
      "<text x=\"{3}\" y=\"18\" font-size=\"13\" font-weight=\"bold\" fill=\"#222\">{2}</text>",
      kChartW, kChartH, html_escape(title), kPlotL);
  if (!(xmin <= xmax)) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#888\">no data</text></svg>", kPlotL,
                       kChartH / 2);
    return svg;
  }
  const bool log_y = allow_log && ymin > 0 && ymax / ymin > 10.0;
  if (xmin == xmax) xmin -= 1, xmax += 1;
  double lo = log_y ? std::log10(ymin) : ymin, hi = log_y ? std::log10(ymax) : ymax;
  if (lo == hi) {
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  const double pad = (hi - lo) * 0.05;
  lo -= pad, hi += pad;

  const double pw = kChartW - kPlotL - kPlotR, ph = kChartH - kPlotT - kPlotB;
  auto px = [&](double x) { return kPlotL + (x - xmin) / (xmax - xmin) * pw; };
  auto py = [&](double y) { return kPlotT + (hi - (log_y ? std::log10(y) : y)) / (hi - lo) * ph; };
  auto plottable = [&](double x, double y) { return std::isfinite(x) && std::isfinite(y) && (!log_y || y > 0); };

  // y ticks: decades on a log axis spanning two or more; otherwise round values.
  std::vector<double> yticks;
  if (log_y && std::floor(hi) - std::ceil(lo) >= 1.0) {
    for (double e = std::ceil(lo); e <= hi; e += 1.0) yticks.push_back(std::pow(10.0, e));
  } else if (log_y) {
    for (const double t : nice_ticks(std::pow(10.0, lo), std::pow(10.0, hi)))
      if (t > 0) yticks.push_back(t);
  } else {
    yticks = nice_ticks(lo, hi);
  }
  for (const double t : yticks) {
    const double y = py(t);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\" fill=\"#555\">{5}</text>",
        kPlotL, y, kPlotL + pw, kPlotL - 5, y + 4, short_number(t));
  }
  for (const double t : nice_ticks(xmin, xmax)) {
    const double x = px(t);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#555\">{4}</text>",
        x, kPlotT, kPlotT + ph, kPlotT + ph + 15, short_number(t));
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>"
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#555\">step{}</text>",
      kPlotL, kPlotT, pw, ph, kPlotL + pw / 2, kChartH - 6, log_y ? " (log-scale y)" : "");

  double legend_x = kPlotL + 120;
  for (const auto& s : series) {
    std::vector<std::string> lines(1);
    std::size_t shown = 0;
    for (const auto& [x, y] : s.points) {
      if (!plottable(x, y)) {
        if (!lines.back().empty()) lines.emplace_back();
        continue;
      }
      lines.back() += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      ++shown;
    }
    if (shown == 0) continue;
    for (const auto& pts : lines)
      if (!pts.empty())
        svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" points=\"{}\"/>", s.color, pts);
    if (shown <= 60)  // sparse series (validation): mark the points
      for (const auto& [x, y] : s.points)
        if (plottable(x, y))
          svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>", px(x), py(y), s.color);
    if (series.size() > 1) {  // a legend in the title line; a single series is named by the title
      svg += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"14\" x2=\"{1:.1f}\" y2=\"14\" stroke=\"{2}\" stroke-width=\"2\"/>"
          "<text x=\"{3:.1f}\" y=\"18\" font-size=\"11\" fill=\"#333\">{4}</text>",
          legend_x, legend_x + 18, s.color, legend_x + 23, html_escape(s.name));
      legend_x += 110;
    }
  }
  svg += "</svg>";
  return svg;
}

std::string charts_html(const std::vector<MetricsRow>& metrics) {
  // Colors chosen away from the blues of the attention maps.
  Series train{"train loss", "#e6550d", {}}, val{"val loss", "#756bb1", {}};
  Series accuracy{"accuracy", "#31a354", {}}, lr{"learning rate", "#636363", {}};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& m : metrics) {
    const double x = static_cast<double>(m.step);
    train.points.emplace_back(x, m.train_loss);
    if (m.val_loss) val.points.emplace_back(x, *m.val_loss);
    accuracy.points.emplace_back(x, m.accuracy ? *m.accuracy : nan);
    lr.points.emplace_back(x, m.lr);
  }
  // A missing accuracy between two present ones should not break the line: keep only the present ones.
  accuracy.points.erase(std::remove_if(accuracy.points.begin(), accuracy.points.end(),
                                       [](const auto& p) { return std::isnan(p.second); }),
                        accuracy.points.end());
  std::string out = "<div class=\"charts\">";
  out += svg_chart("Loss", {train, val}, true);
  if (!accuracy.points.empty()) out += svg_chart("Accuracy", {accuracy}, false);
  out += svg_chart("Learning rate", {lr}, false);
  out += "</div>\n";
  return out;
}

std::string summary_html(const ReportData& data) {
  if (data.metrics.empty()) return "<p class=\"summary\">No metrics were logged.</p>\n";
  const MetricsRow& last = data.metrics.back();
  std::string s = fmt::format("{} logged steps, last step {}: train loss {}", data.metrics.size(), last.step,
                              short_number(last.train_loss));
  std::optional<double> best_val;
  std::optional<long> best_step;
  std::optional<double> last_val;
  for (const auto& m : data.metrics)
    if (m.val_loss && std::isfinite(*m.val_loss)) {
      last_val = m.val_loss;
      if (!best_val || *m.val_loss < *best_val) best_val = m.val_loss, best_step = m.step;
    }
  if (last_val) s += fmt::format(", val loss {} (best {} at step {})", short_number(*last_val), short_number(*best_val), *best_step);
  if (last.accuracy) s += fmt::format(", accuracy {}", short_number(*last.accuracy));
  s += fmt::format(", learning rate {}.", short_number(last.lr));
  return "<p class=\"summary\">" + html_escape(s) + "</p>\n";
}

// ---- attention data --------------------------------------------------------------------------------------

// {"colors": [101 colors for weights 0, 0.01, ..., 1], "nan_color": ..., "snapshots": [{"step", "tokens",
// "shape": [L,H,T], "w": [thousandths, -1 for NaN]}]}, with '<' escaped so that it can sit inside <script>.
std::string attention_json(const std::vector<AttentionSnapshot>& snapshots) {
  nlohmann::json colors = nlohmann::json::array();
  for (int i = 0; i <= 100; ++i) colors.push_back(hex_color(attention_color(static_cast<float>(i) / 100.f)));
  nlohmann::json snaps = nlohmann::json::array();
  for (std::size_t i = 0; i < snapshots.size(); ++i) {
    const AttentionSnapshot& s = snapshots[i];
    const AttentionDims d = check_attention_weights(
        s.weights, s.tokens.size(), fmt::format("write_html_report: attention snapshot {} (step {})", i, s.step));
    std::vector<int> thousandths(s.weights.size());
    const float* w = s.weights.data();
    for (std::size_t k = 0; k < thousandths.size(); ++k)
      thousandths[k] =
          std::isnan(w[k]) ? -1 : static_cast<int>(std::lround(std::clamp(static_cast<double>(w[k]), 0.0, 1.0) * 1000.0));
    snaps.push_back({{"step", s.step},
                     {"tokens", s.tokens},
                     {"shape", {d.layers, d.heads, d.tokens}},
                     {"w", std::move(thousandths)}});
  }
  const nlohmann::json doc = {
      {"colors", std::move(colors)}, {"nan_color", hex_color(attention_color(std::nanf("")))}, {"snapshots", std::move(snaps)}};
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

constexpr const char* kStyle = R"CSS(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;margin:16px 24px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:16px 0 8px}
.summary{color:#555;font-size:13px;margin:0}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.charts svg{border:1px solid #ddd;background:#fff;font-family:inherit}
.controls{display:flex;align-items:center;gap:12px;font-size:14px;margin-bottom:8px}
.controls input{width:380px;accent-color:#555}
.layer{display:flex;flex-wrap:wrap;gap:16px;margin-bottom:10px}
figure{margin:0}
figcaption{font-size:12px;color:#444;margin-bottom:2px}
canvas{display:block}
#tip{position:fixed;pointer-events:none;background:rgba(30,30,30,.92);color:#fff;font:12px monospace;padding:4px 6px;border-radius:3px;display:none;white-space:pre;z-index:10}
pre{background:#f6f8fa;border:1px solid #ddd;padding:8px;font-size:12px;overflow:auto;max-height:420px}
)CSS";

// Draws the selected snapshot: one row of canvases per layer, one canvas per head.
constexpr const char* kScript = R"JS(
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("tf-data").textContent);
  var snaps = data.snapshots;
  var root = document.getElementById("attention");
  var slider = document.getElementById("snapshot");
  var stepLabel = document.getElementById("step-label");
  var tip = document.getElementById("tip");
  if (!snaps.length || !root) return;

  function colorOf(v) { return v < 0 ? data.nan_color : data.colors[Math.round(v / 10)]; }
  function shown(tok) {
    var t = String(tok).replace(/ /g, "\u2423").replace(/\n/g, "\\n").replace(/\t/g, "\\t");
    return t.length > 10 ? t.slice(0, 9) + "\u2026" : t;
  }

  function drawHead(snap, l, h, px, band, font, labels) {
    var T = snap.shape[2], H = snap.shape[1];
    var size = band + px * T + 1;
    var canvas = document.createElement("canvas");
    var dpr = Math.max(2, window.devicePixelRatio || 1);  // drawn at 2x or more: stays sharp when zoomed
    canvas.width = size * dpr;
    canvas.height = size * dpr;
    canvas.style.width = size + "px";
    canvas.style.height = size + "px";
    var ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    var base = (l * H + h) * T * T;
    for (var q = 0; q < T; ++q)
      for (var k = 0; k < T; ++k) {
        ctx.fillStyle = colorOf(snap.w[base + q * T + k]);
        ctx.fillRect(band + k * px, band + q * px, px, px);
      }
    ctx.strokeStyle = "#999";
    ctx.lineWidth = 1;
    ctx.strokeRect(band - 0.5, band - 0.5, px * T + 1, px * T + 1);
    if (labels) {
      ctx.fillStyle = "#333";
      ctx.font = font;
      ctx.textBaseline = "middle";
      for (var t = 0; t < T; ++t) {
        ctx.textAlign = "right";
        ctx.fillText(labels[t], band - 4, band + t * px + px / 2);
        ctx.save();
        ctx.translate(band + t * px + px / 2, band - 4);
        ctx.rotate(-Math.PI / 2);
        ctx.textAlign = "left";
        ctx.fillText(labels[t], 0, 0);
        ctx.restore();
      }
    }
    canvas.addEventListener("mousemove", function (e) {
      var r = canvas.getBoundingClientRect();
      var k = Math.floor((e.clientX - r.left - band) / px), q = Math.floor((e.clientY - r.top - band) / px);
      if (q < 0 || k < 0 || q >= T || k >= T) { tip.style.display = "none"; return; }
      var v = snap.w[base + q * T + k];
      var name = function (i) { return snap.tokens.length ? i + " '" + snap.tokens[i] + "'" : String(i); };
      tip.textContent = "L" + l + " H" + h + "  step " + snap.step + "\nquery " + name(q) + "\nkey   " + name(k) +
                        "\nweight " + (v < 0 ? "NaN" : (v / 1000).toFixed(3));
      tip.style.left = (e.clientX + 14) + "px";
      tip.style.top = (e.clientY + 14) + "px";
      tip.style.display = "block";
    });
    canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    return canvas;
  }

  function render(index) {
    var snap = snaps[index];
    var L = snap.shape[0], H = snap.shape[1], T = snap.shape[2];
    stepLabel.textContent = "step " + snap.step + "  (snapshot " + (index + 1) + " of " + snaps.length + ", " +
                            L + " layers \u00d7 " + H + " heads, T = " + T + ")";
    var px = Math.max(2, Math.min(20, Math.floor(256 / T)));
    var labels = null, band = 0, font = (Math.min(px, 13) - 1) + "px monospace";
    if (snap.tokens.length === T && px >= 8) {
      labels = snap.tokens.map(shown);
      var measure = document.createElement("canvas").getContext("2d");
      measure.font = font;
      var widest = 0;
      labels.forEach(function (s) { widest = Math.max(widest, measure.measureText(s).width); });
      band = Math.ceil(widest) + 8;
    }
    root.textContent = "";
    for (var l = 0; l < L; ++l) {
      var row = document.createElement("div");
      row.className = "layer";
      for (var h = 0; h < H; ++h) {
        var fig = document.createElement("figure");
        var cap = document.createElement("figcaption");
        cap.textContent = "L" + l + " H" + h;
        fig.appendChild(cap);
        fig.appendChild(drawHead(snap, l, h, px, band, font, labels));
        row.appendChild(fig);
      }
      root.appendChild(row);
    }
  }

  slider.addEventListener("input", function () { render(Number(slider.value)); });
  render(Number(slider.value));
})();
)JS";

}  // namespace

std::string render_html_report(const ReportData& data) {
  // Built first: it validates the snapshots before anything else is done.
  const std::string json = attention_json(data.attention);
  const std::string title = html_escape(data.title.empty() ? std::string("tinyformer report") : data.title);

  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + title + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  html += "<h1>" + title + "</h1>\n";
  html += summary_html(data);
  html += "<h2>Training curves</h2>\n";
  html += charts_html(data.metrics);
  html += "<h2>Attention</h2>\n";
  if (data.attention.empty()) {
    html += "<p class=\"summary\">No attention snapshots were recorded.</p>\n";
  } else {
    const std::size_t n = data.attention.size();
    html += fmt::format(
        "<div class=\"controls\"><label for=\"snapshot\">snapshot</label>"
        "<input type=\"range\" id=\"snapshot\" min=\"0\" max=\"{}\" step=\"1\" value=\"{}\">"
        "<span id=\"step-label\">step {}</span></div>\n"
        "<p class=\"summary\">Rows are queries, columns are keys; white = 0, dark blue = 1. Hover a cell for its "
        "weight.</p>\n<div id=\"attention\"></div>\n<div id=\"tip\"></div>\n",
        n - 1, n - 1, data.attention.back().step);
  }
  html += "<h2>Config</h2>\n<pre>" + html_escape(data.config_yaml) + "</pre>\n";
  html += "<script type=\"application/json\" id=\"tf-data\">" + json + "</script>\n";
  html += std::string("<script>") + kScript + "</script>\n</body>\n</html>\n";
  return html;
}

void write_html_report(const std::string& path, const ReportData& data) {
  const std::string html = render_html_report(data);
  write_file_atomic(path, html.data(), html.size());
}

}  // namespace tf::io
