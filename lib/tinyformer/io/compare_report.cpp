// The comparison page: charts of every run's metrics on shared axes, and the config keys that differ.
#include "tinyformer/io/compare_report.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/html_report_parts.hpp"

namespace tf::io {

namespace {

using report::html_escape;
using report::Series;
using report::StepAxis;

// Tableau's ten colours: runs past ten repeat them.
const char* run_color(std::size_t i) {
  static const char* const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                       "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colors[i % 10];
}

StepAxis shared_axis(const CompareData& data) {
  StepAxis axis{1e300, -1e300};
  for (const auto& run : data.runs)
    for (const auto& m : run.metrics) {
      axis.min = std::min(axis.min, static_cast<double>(m.step));
      axis.max = std::max(axis.max, static_cast<double>(m.step));
    }
  if (axis.min > axis.max) axis = {0, 1};
  return axis;
}

// One chart with a series per run of value(row); "" when no run has a value.
std::string chart(const CompareData& data, const StepAxis& axis, const std::string& id, const std::string& title,
                  const std::function<std::optional<double>(const MetricsRow&)>& value, bool allow_log) {
  std::vector<Series> series;
  bool any = false;
  for (std::size_t i = 0; i < data.runs.size(); ++i) {
    Series s{data.runs[i].name, run_color(i), {}};
    for (const auto& m : data.runs[i].metrics)
      if (const auto v = value(m)) s.points.emplace_back(static_cast<double>(m.step), *v);
    any = any || !s.points.empty();
    series.push_back(std::move(s));
  }
  return any ? report::svg_line_chart(id, title, series, axis, allow_log) : "";
}

std::string charts_html(const CompareData& data) {
  const StepAxis axis = shared_axis(data);
  std::string html;
  html += chart(
      data, axis, "chart-train-loss", "Train loss",
      [](const MetricsRow& m) { return std::optional<double>(m.train_loss); }, true);
  html += chart(
      data, axis, "chart-val-loss", "Validation loss", [](const MetricsRow& m) { return m.val_loss; }, true);
  html += chart(
      data, axis, "chart-accuracy", "Accuracy", [](const MetricsRow& m) { return m.accuracy; }, false);
  html += chart(
      data, axis, "chart-lr", "Learning rate", [](const MetricsRow& m) { return std::optional<double>(m.lr); }, false);
  return html.empty() ? "" : "<h2>Training curves</h2>\n<div class=\"charts\">" + html + "</div>\n";
}

std::string differences_html(const CompareData& data) {
  std::string html = "<h2>Config differences</h2>\n";
  if (data.differences.empty()) return html + "<p class=\"summary\">The runs' configs are the same.</p>\n";
  html += "<table id=\"config-differences\" class=\"scores\"><tr><th>key</th>";
  for (std::size_t i = 0; i < data.runs.size(); ++i)
    html += fmt::format("<th style=\"color:{}\">{}</th>", run_color(i), html_escape(data.runs[i].name));
  html += "</tr>\n";
  for (const auto& d : data.differences) {
    html += "<tr><th>" + html_escape(d.key) + "</th>";
    for (const auto& v : d.values) html += "<td>" + html_escape(v) + "</td>";
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

}  // namespace

std::string render_compare_report(const CompareData& data) {
  for (const auto& d : data.differences)
    if (d.values.size() != data.runs.size())
      throw std::invalid_argument(fmt::format("compare report: config key {} has {} values for {} runs", d.key,
                                              d.values.size(), data.runs.size()));
  const std::string title = html_escape(data.title.empty() ? std::string("tinyformer runs compared") : data.title);
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + title +
                     "</title>\n<style>\n" + report::report_style() + "</style>\n</head>\n<body>\n<h1>" + title +
                     "</h1>\n";
  html += "<p class=\"summary\">";
  for (std::size_t i = 0; i < data.runs.size(); ++i)
    html += fmt::format("{}<span style=\"color:{}\">&#9632;</span> {} ({} logged steps)", i ? "; " : "", run_color(i),
                        html_escape(data.runs[i].name), data.runs[i].metrics.size());
  html += "</p>\n" + charts_html(data) + differences_html(data) + "</body>\n</html>\n";
  return html;
}

void write_compare_report(const std::string& path, const CompareData& data) {
  const std::string html = render_compare_report(data);
  write_file_atomic(path, html.data(), html.size());
}

}  // namespace tf::io
