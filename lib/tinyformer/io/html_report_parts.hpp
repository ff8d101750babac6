#pragma once
// Internal to the HTML report (io/html_report.cpp): text helpers, the inline SVG line charts
// (html_report_svg.cpp) and the page's inline style and script (html_report.css and html_report.js, compiled in at
// build time by cmake/embed_text.cmake).
#include <string>
#include <utility>
#include <vector>

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

// An <svg id="`id`" class="chart"> line chart titled `title` (the legend follows the title when there are two or
// more series). y is log-scaled when `allow_log`, every value is positive and they span more than a factor 10.
// Without any finite point the chart says "no data". Markers: points of a series with at most 60 points are
// dotted (circle.marker, r 2.5); a point without a neighbour on its line gets circle.marker.single (r 4, ringed),
// so a one-point series is visible.
std::string svg_line_chart(const std::string& id, const std::string& title, const std::vector<Series>& series,
                           const StepAxis& axis, bool allow_log);

// The page's <style> body and its one inline <script> body: the bytes of html_report.css and html_report.js (the page
// puts a newline before each). The script reads the JSON in <script id="tf-data"> and draws the attention maps
// (canvas) and the head view (HTML + SVG); it never fetches anything.
const char* report_style();
const char* report_script();

}  // namespace tf::io::report
