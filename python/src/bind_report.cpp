// Attention maps for notebooks: the library's HTML report (io/html_report.hpp: the head view, the maps and the score
// table) and its PNG grid (io/heatmap_png.hpp), for tinyformer.AttentionMap and tinyformer.report; a run dir's
// report (io::read_run_report); and the heads' pattern scores of one sequence (analysis::score_heads), which give
// the score table its roles.
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/analysis/head_patterns.hpp"
#include "tinyformer/infer/head_scores.hpp"
#include "tinyformer/io/heatmap_png.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/io/run_report.hpp"

namespace tf::python {

namespace {

// One snapshot of weights [L,H,T,T] for the report.
io::ReportData attention_report(const py::array& weights, const std::vector<std::string>& tokens,
                                const std::string& title, const std::vector<long>& expected,
                                const io::HeadTable& scores, const std::vector<std::vector<std::string>>& roles,
                                const std::string& expected_pattern, long step) {
  io::ReportData report;
  report.title = title;
  report.expected_pattern = expected_pattern;
  report.head_roles = roles;
  io::AttentionSnapshot snap;
  snap.step = step;
  snap.tokens = tokens;
  snap.weights = to_array<float>(weights);
  io::check_attention_weights(snap.weights, tokens.size(), "the attention map");
  snap.expected = expected;
  snap.scores = scores;
  report.attention.push_back(std::move(snap));
  return report;
}

}  // namespace

void bind_report(py::module_& m) {
  m.def(
      "_attention_report_html",
      [](const py::array& weights, const std::vector<std::string>& tokens, const std::string& title,
         const std::vector<long>& expected, const io::HeadTable& scores,
         const std::vector<std::vector<std::string>>& roles, const std::string& expected_pattern, long step) {
        return io::render_html_report(
            attention_report(weights, tokens, title, expected, scores, roles, expected_pattern, step));
      },
      py::arg("weights"), py::arg("tokens"), py::arg("title"), py::arg("expected"), py::arg("scores"), py::arg("roles"),
      py::arg("expected_pattern"), py::arg("step"),
      "The report page (io::render_html_report) of one attention map [L,H,T,T]: score table, maps and head view");
  m.def(
      "_run_report",
      [](const std::string& out) {
        const io::ReportData r = io::read_run_report(out);
        py::dict d;
        d["html"] = io::render_html_report(r);
        d["title"] = r.title;
        d["expected_pattern"] = r.expected_pattern;
        d["roles"] = r.head_roles;
        py::list snapshots;
        for (const auto& s : r.attention) {
          py::dict snap;
          snap["step"] = s.step;
          snap["weights"] = to_numpy_copy(s.weights);
          snap["tokens"] = s.tokens;
          snap["expected"] = s.expected;
          snap["scores"] = s.scores;
          snapshots.append(snap);
        }
        d["snapshots"] = snapshots;
        d["note"] = r.attention_note;
        return d;
      },
      py::arg("out"),
      "A run dir's report (io::read_run_report): its page, as report.html, and its attention snapshots");
  m.def(
      "_html_iframe", [](const std::string& page, int height) { return io::html_iframe(page, height); },
      py::arg("page"), py::arg("height") = 640, "A page as one self-contained <iframe srcdoc> (io::html_iframe)");
  m.def(
      "_attention_png",
      [](const py::array& weights, const std::vector<std::string>& tokens, const std::string& title,
         const std::vector<long>& expected) {
        const Array<float> w = to_array<float>(weights);
        std::string png;
        {
          py::gil_scoped_release release;
          const io::AttentionGridImage image = io::render_attention_grid(w, tokens, title, expected);
          png = io::encode_png_rgb(image.width, image.height, image.rgb);
        }
        return py::bytes(png);
      },
      py::arg("weights"), py::arg("tokens"), py::arg("title"), py::arg("expected"),
      "The PNG bytes of the heatmap grid of weights [L,H,T,T] (io::render_attention_grid, as attention.png)");
  m.def(
      "_score_heads",
      [](const py::array& weights, const py::object& ids, const std::vector<long>& expected) {
        const Array<float> w = to_array<float>(weights);
        const IndexArray x = to_ids(ids);
        py::gil_scoped_release release;
        return infer::heads_json(analysis::score_heads(w, x, expected));
      },
      py::arg("weights"), py::arg("ids"), py::arg("expected"),
      "The heads' pattern scores and verdicts of one sequence (weights [L,H,T,T], ids [T]) as heads --json prints");
}

}  // namespace tf::python
