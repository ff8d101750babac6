#pragma once
// Internal to the HTML report (io/html_report.cpp): text helpers, the inline SVG line charts
// (html_report_svg.cpp) and the page's inline style and script (html_report.css and html_report.js, compiled in at
// build time by cmake/embed_text.cmake).
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/io/html_report.hpp"

namespace tf::io::report {

// &, <, >, " and ' as entities: safe in element text and in quoted attributes.
std::string html_escape(const std::string& s);
// "1.5", "0.001", "2e+04": short tick and summary numbers.
std::string short_number(double v);

// One line of a chart: (step, value) points; a non-finite value breaks the line.
struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;
};

// The step range shared by every chart of a page, so that their x positions line up.
struct StepAxis {
  double min = 0.0;
  double max = 0.0;
};

// Every chart is kChartWidth x kChartHeight px with the plot area at the same offsets: two charts with the same
// StepAxis put a step at the same x.
inline constexpr double kChartWidth = 420, kChartHeight = 260;

// A moment marked on a chart: a dashed vertical line (line.mark) at `step` labelled at the top (text.mark-label), and
// with `band` a shaded band (rect.mark-band) from band_start to band_end.
struct ChartMark {
  double step = 0.0;
  std::string label;
  std::string color = "#d62728";
  bool band = false;
  double band_start = 0.0, band_end = 0.0;
};

// What a chart may show besides its series: series on a second y axis at the right (linear; its ticks written inside
// the plot's right edge in the first right series' colour, titled `right_title`), and marks.
struct ChartExtras {
  std::vector<Series> right;
  std::string right_title;
  std::vector<ChartMark> marks;
};

// An <svg id="`id`" class="chart"> line chart titled `title` (the legend follows the title when there are two or
// more series). y is log-scaled when `allow_log`, every value is positive and they span more than a factor 10.
// Without any finite point the chart says "no data". Markers: points of a series with at most 60 points are
// dotted (circle.marker, r 2.5); a point without a neighbour on its line gets circle.marker.single (r 4, ringed),
// so a one-point series is visible.
std::string svg_line_chart(const std::string& id, const std::string& title, const std::vector<Series>& series,
                           const StepAxis& axis, bool allow_log, const ChartExtras& extras = {});

// An <svg id="`id`" class="chart"> bar chart of `values` at x = 0, 1, ..., titled `title`, x axis titled `x_title`;
// the `labelled` bars (indices) carry their index above them.
std::string svg_bar_chart(const std::string& id, const std::string& title, const std::string& x_title,
                          const std::vector<double>& values, const std::vector<std::size_t>& labelled);

// The report's circuits (html_report_circuits.cpp, analysis/circuits.hpp): the marks they put on the training curves,
// "phase change" on the loss chart (and on the best head's score chart, with the previous-token head's step) of a
// `repeats` run, "memorised" and "grokked" on the loss and accuracy charts of a
// `modular` run; and their sections (the phase change or grokking in words, the embedding's spectrum, the direct
// logit attribution table).
struct CircuitMarks {
  std::vector<ChartMark> loss, accuracy;
  std::vector<ChartMark>
      scores;  // the best head's score chart: the phase change, and when the previous-token head formed
};
CircuitMarks circuit_marks(const ReportData& data);
std::string circuits_html(const ReportData& data);

// The page's <style> body and its one inline <script> body: the bytes of html_report.css and html_report.js (the page
// puts a newline before each). The script reads the JSON in <script id="tf-data"> and draws the attention maps
// (canvas) and the head view (HTML + SVG); it never fetches anything.
const char* report_style();
const char* report_script();

}  // namespace tf::io::report
