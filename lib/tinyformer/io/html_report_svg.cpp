// The HTML report's line charts as inline SVG (see html_report_parts.hpp), and its text helpers.
//   x pixel = left + (step - axis.min) / (axis.max - axis.min) * plot width        (axis shared by every chart)
//   y pixel = top + (hi - f(value)) / (hi - lo) * plot height, f = log10 on a log axis, identity otherwise
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "tinyformer/io/html_report_parts.hpp"

namespace tf::io::report {

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string short_number(double v) { return fmt::format("{:.4g}", v); }

namespace {

constexpr double kPlotL = 62, kPlotR = 14, kPlotT = 30, kPlotB = 40;
constexpr std::size_t kDottedSeries = 60;  // series with at most this many points mark every point

// Where values land in the plot area.
struct ChartScale {
  double xmin = 0, xmax = 1, lo = 0, hi = 1;
  bool log_y = false;
  double pw = kChartWidth - kPlotL - kPlotR, ph = kChartHeight - kPlotT - kPlotB;

  double px(double x) const { return kPlotL + (x - xmin) / (xmax - xmin) * pw; }
  double py(double y) const { return kPlotT + (hi - (log_y ? std::log10(y) : y)) / (hi - lo) * ph; }
  bool plottable(double x, double y) const { return std::isfinite(x) && std::isfinite(y) && (!log_y || y > 0); }
};

// The scale of the finite points on `axis`, or nullopt when there is none.
std::optional<ChartScale> chart_scale(const std::vector<Series>& series, const StepAxis& axis, bool allow_log) {
  const double inf = std::numeric_limits<double>::infinity();
  double ymin = inf, ymax = -inf;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y)) ymin = std::min(ymin, y), ymax = std::max(ymax, y);
  if (!(ymin <= ymax)) return std::nullopt;
  ChartScale c;
  c.log_y = allow_log && ymin > 0 && ymax / ymin > 10.0;
  c.xmin = axis.min, c.xmax = axis.max;
  if (!(c.xmin < c.xmax)) c.xmin -= 1, c.xmax += 1;
  c.lo = c.log_y ? std::log10(ymin) : ymin, c.hi = c.log_y ? std::log10(ymax) : ymax;
  if (c.lo == c.hi) {
    const double pad = c.lo == 0 ? 1.0 : std::abs(c.lo) * 0.1;
    c.lo -= pad, c.hi += pad;
  }
  const double pad = (c.hi - c.lo) * 0.05;
  c.lo -= pad, c.hi += pad;
  return c;
}

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

// y ticks: decades on a log axis spanning two or more; otherwise round values.
std::vector<double> y_ticks(const ChartScale& c) {
  std::vector<double> ticks;
  if (c.log_y && std::floor(c.hi) - std::ceil(c.lo) >= 1.0) {
    for (double e = std::ceil(c.lo); e <= c.hi; e += 1.0) ticks.push_back(std::pow(10.0, e));
  } else if (c.log_y) {
    for (const double t : nice_ticks(std::pow(10.0, c.lo), std::pow(10.0, c.hi)))
      if (t > 0) ticks.push_back(t);
  } else {
    ticks = nice_ticks(c.lo, c.hi);
  }
  return ticks;
}

// Grid lines, tick labels (x ticks as text.xtick), the plot frame and the x axis title.
std::string axes_svg(const ChartScale& c, const std::string& x_title = "step") {
  std::string svg;
  for (const double t : y_ticks(c)) {
    const double y = c.py(t);
    svg +=
        fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>"
                    "<text x=\"{3:.1f}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\" fill=\"#555\">{5}</text>",
                    kPlotL, y, kPlotL + c.pw, kPlotL - 5, y + 4, short_number(t));
  }
  for (const double t : nice_ticks(c.xmin, c.xmax)) {
    const double x = c.px(t);
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#eee\"/>"
                       "<text class=\"xtick\" x=\"{0:.1f}\" y=\"{3:.1f}\" font-size=\"11\" text-anchor=\"middle\" "
                       "fill=\"#555\">{4}</text>",
                       x, kPlotT, kPlotT + c.ph, kPlotT + c.ph + 15, short_number(t));
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>"
                     "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#555\">{}{}</text>",
                     kPlotL, kPlotT, c.pw, c.ph, kPlotL + c.pw / 2, kChartHeight - 6, html_escape(x_title),
                     c.log_y ? " (log-scale y)" : "");
  return svg;
}

// One series: a polyline per unbroken run of plottable points, and its markers.
std::string series_svg(const Series& s, const ChartScale& c) {
  std::vector<std::vector<std::pair<double, double>>> runs(1);
  std::size_t shown = 0;
  for (const auto& [x, y] : s.points) {
    if (!c.plottable(x, y)) {
      if (!runs.back().empty()) runs.emplace_back();
      continue;
    }
    runs.back().emplace_back(c.px(x), c.py(y));
    ++shown;
  }
  std::string svg;
  for (const auto& run : runs) {
    if (run.size() >= 2) {
      std::string pts;
      for (const auto& [x, y] : run) pts += fmt::format("{:.1f},{:.1f} ", x, y);
      svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" points=\"{}\"/>", s.color, pts);
    }
    for (const auto& [x, y] : run) {
      if (run.size() == 1)  // no line through it: a marker large enough to see on its own
        svg += fmt::format("<circle class=\"marker single\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" "
                           "stroke=\"#fff\" stroke-width=\"1.5\"/>",
                           x, y, s.color);
      else if (shown <= kDottedSeries)
        svg +=
            fmt::format("<circle class=\"marker\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>", x, y, s.color);
    }
  }
  return svg;
}

// The legend in the title line, after the title: a short line in each series' colour and its name.
std::string legend_svg(const std::string& title, const std::vector<Series>& series) {
  std::string svg;
  double x = kPlotL + std::max(110.0, 8.0 * static_cast<double>(title.size()) + 16.0);
  for (const auto& s : series) {
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"14\" x2=\"{1:.1f}\" y2=\"14\" stroke=\"{2}\" stroke-width=\"2\"/>"
                       "<text x=\"{3:.1f}\" y=\"18\" font-size=\"11\" fill=\"#333\">{4}</text>",
                       x, x + 18, s.color, x + 23, html_escape(s.name));
    x += 23 + 6.5 * static_cast<double>(s.name.size()) + 14;
  }
  return svg;
}

}  // namespace

namespace {

// The marks: shaded bands first (under the lines), then dashed lines with their labels, labels staggered in height
// so that marks close together stay readable.
std::string marks_svg(const std::vector<ChartMark>& marks, const ChartScale& c) {
  std::string svg;
  const auto clamp_x = [&](double step) { return std::clamp(c.px(step), kPlotL, kPlotL + c.pw); };
  for (const auto& m : marks)
    if (m.band && m.band_start < m.band_end)
      svg += fmt::format("<rect class=\"mark-band\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                         "fill=\"{}\" fill-opacity=\"0.12\"/>",
                         clamp_x(m.band_start), kPlotT, clamp_x(m.band_end) - clamp_x(m.band_start), c.ph, m.color);
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const ChartMark& m = marks[i];
    const double x = clamp_x(m.step), y = kPlotT + 14 + 13 * static_cast<double>(i % 3);
    const bool right_half = x > kPlotL + c.pw * 0.6;
    svg += fmt::format(
        "<line class=\"mark\" data-step=\"{}\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>"
        "<text class=\"mark-label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" font-weight=\"bold\" "
        "text-anchor=\"{}\" fill=\"{}\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">{}</text>",
        m.step, x, kPlotT, x, kPlotT + c.ph, m.color, right_half ? x - 3 : x + 3, y, right_half ? "end" : "start",
        m.color, html_escape(m.label));
  }
  return svg;
}

// The right axis: the series on their own linear scale, tick values written inside the plot's right edge.
std::string right_axis_svg(const ChartExtras& extras, const StepAxis& axis) {
  const std::optional<ChartScale> right = chart_scale(extras.right, axis, false);
  if (!right) return "";
  const std::string color = extras.right.front().color;
  std::string svg;
  for (const double t : y_ticks(*right))
    svg += fmt::format("<text class=\"right-tick\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\" "
                       "fill=\"{}\">{}</text>",
                       kPlotL + right->pw - 3, right->py(t) + 3, color, short_number(t));
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\" fill=\"{}\" stroke=\"#fff\" "
                     "stroke-width=\"3\" paint-order=\"stroke\">{} (right scale)</text>",
                     kPlotL + right->pw - 3, kPlotT + right->ph - 5, color, html_escape(extras.right_title));
  for (const auto& s : extras.right) svg += series_svg(s, *right);
  return svg;
}

}  // namespace

std::string svg_bar_chart(const std::string& id, const std::string& title, const std::string& x_title,
                          const std::vector<double>& values, const std::vector<std::size_t>& labelled) {
  std::string svg = fmt::format(
      "<svg id=\"{0}\" class=\"chart\" width=\"{1}\" height=\"{2}\" viewBox=\"0 0 {1} {2}\" role=\"img\" "
      "aria-label=\"{3}\"><text x=\"{4}\" y=\"18\" font-size=\"13\" font-weight=\"bold\" fill=\"#222\">{3}</text>",
      html_escape(id), kChartWidth, kChartHeight, html_escape(title), kPlotL);
  double top = 0;
  for (const double v : values)
    if (std::isfinite(v)) top = std::max(top, v);
  if (values.empty() || !(top > 0))
    return svg + fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#888\">no data</text></svg>", kPlotL,
                             kChartHeight / 2);
  ChartScale c;
  c.xmin = -0.5, c.xmax = static_cast<double>(values.size()) - 0.5, c.lo = 0, c.hi = top * 1.12;
  svg += axes_svg(c, x_title);
  const double width = std::max(1.0, c.pw / static_cast<double>(values.size()) * 0.8);
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (!std::isfinite(values[k])) continue;
    const double x = c.px(static_cast<double>(k)), y = c.py(values[k]);
    svg += fmt::format("<rect class=\"bar\" data-index=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                       "height=\"{:.1f}\" fill=\"#3182bd\"/>",
                       k, x - width / 2, y, width, kPlotT + c.ph - y);
  }
  for (const std::size_t k : labelled)
    if (k < values.size())
      svg += fmt::format("<text class=\"bar-label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" "
                         "text-anchor=\"middle\" fill=\"#08519c\">{}</text>",
                         c.px(static_cast<double>(k)), c.py(values[k]) - 3, k);
  return svg + "</svg>";
}

std::string svg_line_chart(const std::string& id, const std::string& title, const std::vector<Series>& series,
                           const StepAxis& axis, bool allow_log, const ChartExtras& extras) {
  std::string svg = fmt::format(
      "<svg id=\"{0}\" class=\"chart\" width=\"{1}\" height=\"{2}\" viewBox=\"0 0 {1} {2}\" role=\"img\" "
      "aria-label=\"{3}\"><text x=\"{4}\" y=\"18\" font-size=\"13\" font-weight=\"bold\" fill=\"#222\">{3}</text>",
      html_escape(id), kChartWidth, kChartHeight, html_escape(title), kPlotL);
  const std::optional<ChartScale> scale = chart_scale(series, axis, allow_log);
  if (!scale)
    return svg + fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#888\">no data</text></svg>", kPlotL,
                             kChartHeight / 2);
  std::vector<Series> drawn;  // the series with a point to show
  for (const auto& s : series)
    if (std::any_of(s.points.begin(), s.points.end(),
                    [&](const auto& p) { return scale->plottable(p.first, p.second); }))
      drawn.push_back(s);
  svg += axes_svg(*scale);
  svg += marks_svg(extras.marks, *scale);
  for (const auto& s : drawn) svg += series_svg(s, *scale);
  if (!extras.right.empty()) {
    svg += right_axis_svg(extras, axis);
    for (const auto& s : extras.right) drawn.push_back(s);
  }
  if (drawn.size() > 1) svg += legend_svg(title, drawn);  // a single series is named by the title
  return svg + "</svg>";
}

}  // namespace tf::io::report
