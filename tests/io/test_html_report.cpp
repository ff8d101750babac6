// The HTML report: self-contained (nothing fetched over the network), embeds the snapshot steps, token labels and
// weights in thousandths, escapes user text, replaces its file atomically, and renders in headless Chromium.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <stb/stb_image.h>  // implementation in libstb
#include "support/temp_dir.hpp"

#include "tinyformer/io/html_report.hpp"

using namespace tf;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

// Strongly diagonal causal attention [L,H,T,T]: weight `peak` on key q - h (clamped to 0), the rest spread evenly
// over the other visible keys.
Array<float> diagonal_attention(std::size_t L, std::size_t H, std::size_t T, float peak) {
  Array<float> w = Array<float>::from_shape({L, H, T, T});
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t q = 0; q < T; ++q) {
        const std::size_t target = q >= h ? q - h : 0;
        for (std::size_t k = 0; k < T; ++k)
          w(l, h, q, k) = k > q ? 0.f : (q == 0 ? 1.f : (k == target ? peak : (1.f - peak) / static_cast<float>(q)));
      }
  return w;
}

io::ReportData fake_report(std::size_t T = 8) {
  io::ReportData data;
  data.title = "copy task, 2 layers";
  data.config_yaml = "model:\n  n_layer: 2\n  n_head: 2\n  d_model: 32\ntrain:\n  steps: 600\n  lr: 0.001\n";
  for (long step = 0; step <= 600; step += 10) {
    io::MetricsRow row;
    row.step = step;
    row.train_loss = 3.5 * std::exp(-step / 120.0) + 0.02;
    if (step % 100 == 0) {
      row.val_loss = 3.6 * std::exp(-step / 130.0) + 0.03;
      row.accuracy = 1.0 - std::exp(-step / 150.0);
    }
    row.lr = step < 60 ? 1e-3 * step / 60.0 : 1e-3;
    data.metrics.push_back(row);
  }
  const char* words[] = {"<bos>", "cat", "sat", "on", "the", "mat", "d\xC3\xA9j\xC3\xA0", "."};
  for (long step : {200L, 400L, 600L}) {
    io::AttentionSnapshot snap;
    snap.step = step;
    for (std::size_t t = 0; t < T; ++t) snap.tokens.push_back(words[t % 8]);
    snap.weights = diagonal_attention(2, 2, T, 0.5f + 0.4f * static_cast<float>(step) / 600.f);
    data.attention.push_back(snap);
  }
  return data;
}

// Everything the Heads section and the head view use: 2 layers x 3 heads, T = 12, head h looking at key q - h,
// tokens with special characters, expected keys (previous token from query 6 on), scores per snapshot and per
// logged step (best head L0 H1), gradient norms, entropies, roles and the expected pattern.
io::ReportData heads_report() {
  io::ReportData data;
  data.title = "heads";
  data.expected_pattern = "Each answer query attends to the token before it <q-1>.";
  for (long step = 0; step <= 600; step += 50) {
    io::MetricsRow row;
    row.step = step;
    row.train_loss = 2.0 - static_cast<double>(step) / 400.0;
    row.lr = 1e-3;
    row.grad_norm = 1.0 + static_cast<double>(step) / 300.0;
    const double f = static_cast<double>(step) / 600.0;
    row.attention_entropy = {{1.5 - f, 1.4, 1.3}, {1.2, 1.1 - f / 2, 1.0}};
    row.attention_score = {{0.1, 0.3 + 0.6 * f, 0.2}, {0.3, 0.4, 0.05}};
    data.metrics.push_back(row);
  }
  const std::vector<std::string> tokens{"a", " ", "b", "\n", "c", "\t", "d", "<e>", "a", "b", "c", "\x01"};
  for (long step : {300L, 600L}) {
    io::AttentionSnapshot snap;
    snap.step = step;
    snap.tokens = tokens;
    snap.weights = diagonal_attention(2, 3, 12, step == 600 ? 0.9f : 0.6f);
    snap.expected.assign(12, -1);
    for (std::size_t q = 6; q < 12; ++q) snap.expected[q] = static_cast<long>(q) - 1;
    snap.scores = {{0.1, step == 600 ? 0.9 : 0.6, 0.2}, {0.3, 0.4, 0.05}};
    data.attention.push_back(snap);
  }
  data.head_roles = {{"self 0.90", "previous_token <0.90>", "diffuse"}, {"first_token 0.41", "diffuse", "diffuse"}};
  return data;
}

// The <svg id="`id`" ...>...</svg> of a chart, or "" when the page has none.
std::string chart(const std::string& html, const std::string& id) {
  const std::size_t at = html.find("<svg id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</svg>", at) + 6 - at);
}

}  // namespace

TEST_CASE("io: html report embeds every snapshot step, the token labels and weights rounded to 3 decimals", "[io]") {
  io::ReportData data = fake_report();
  // A tiny extra snapshot whose exact JSON we know: weights 0.1234 -> 123, 0.8766 -> 877, 1 -> 1000, 0 -> 0.
  io::AttentionSnapshot tiny;
  tiny.step = 777;
  tiny.tokens = {"x", "y"};
  tiny.weights = Array<float>{{{{1.f, 0.f}, {0.1234f, 0.8766f}}}};
  data.attention.push_back(tiny);
  const std::string html = io::render_html_report(data);

  for (const char* step : {"\"step\":200", "\"step\":400", "\"step\":600", "\"step\":777"}) {
    INFO(step);
    CHECK(count(html, step) == 1);
  }
  CHECK(html.find("{\"shape\":[1,1,2],\"step\":777,\"tokens\":[\"x\",\"y\"],\"w\":[1000,0,123,877]}") !=
        std::string::npos);
  CHECK(html.find("\"tokens\":[\"\\u003cbos>\",\"cat\",\"sat\",\"on\",\"the\",\"mat\",\"d\xC3\xA9j\xC3\xA0\",\".\"]") !=
        std::string::npos);
  // the slider covers the 4 snapshots and starts at the last one
  CHECK(html.find("<input type=\"range\" id=\"snapshot\" min=\"0\" max=\"3\" step=\"1\" value=\"3\">") !=
        std::string::npos);
  // weights are written as integers (no long float expansions such as 0.30000001)
  CHECK(html.find("0.3000") == std::string::npos);
  // the size stays small: 3 snapshots of [2,2,8,8] plus the tiny one
  CHECK(html.size() < 40000);
}

TEST_CASE("io: html report loads nothing over the network", "[io]") {
  const std::string html = io::render_html_report(fake_report());
  CHECK(html.find("://") == std::string::npos);  // no URL of any kind
  const std::regex external(R"((src|href)\s*=\s*["']?\s*(https?:)?//)", std::regex::icase);
  CHECK_FALSE(std::regex_search(html, external));
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("<canvas") == std::string::npos);  // canvases are created by the inline script
  CHECK(html.find("getContext(\"2d\")") != std::string::npos);
  // A URL in the config is shown as text, never turned into a reference.
  io::ReportData with_url = fake_report();
  with_url.config_yaml = "data:\n  source: https://example.org/tiny.txt\n";
  const std::string html2 = io::render_html_report(with_url);
  CHECK_FALSE(std::regex_search(html2, external));
  CHECK(html2.find("<pre>data:\n  source: https://example.org/tiny.txt\n</pre>") != std::string::npos);
}

TEST_CASE("io: html report escapes the title, the config and tokens that look like markup", "[io]") {
  io::ReportData data = fake_report();
  data.title = "run <b>1</b> & \"2\"";
  data.config_yaml = "note: '</pre><script>alert(1)</script>'\n";
  data.attention[0].tokens[1] = "</script>";
  const std::string html = io::render_html_report(data);
  CHECK(html.find("<title>run &lt;b&gt;1&lt;/b&gt; &amp; &quot;2&quot;</title>") != std::string::npos);
  CHECK(html.find("<h1>run &lt;b&gt;1&lt;/b&gt; &amp; &quot;2&quot;</h1>") != std::string::npos);
  CHECK(html.find("&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("\"\\u003c/script>\"") != std::string::npos);
  // exactly the page's own two scripts open and close
  CHECK(count(html, "<script") == 2);
  CHECK(count(html, "</script>") == 2);
}

TEST_CASE("io: html report draws loss, accuracy and learning-rate curves as inline SVG", "[io]") {
  const io::ReportData data = fake_report();
  const std::string html = io::render_html_report(data);
  CHECK(count(html, "<svg id=\"chart-") == 3);
  CHECK(html.find("train loss") != std::string::npos);
  CHECK(html.find("val loss") != std::string::npos);
  CHECK(html.find("log-scale y") != std::string::npos);  // 3.52 -> 0.03 spans more than a factor 10
  CHECK(count(html, "<polyline") == 4);                  // train, val, accuracy, lr
  CHECK(count(html, "<circle") == 14);                   // the 7 validation points and 7 accuracy points
  // without accuracy and with a loss that spans less than 10x: no accuracy chart, linear axis
  io::ReportData flat = data;
  for (auto& row : flat.metrics) {
    row.accuracy.reset();
    row.train_loss = 2.0 + 0.001 * static_cast<double>(row.step);
    row.val_loss.reset();
  }
  flat.metrics[3].train_loss = std::nan("");  // a NaN breaks the line into two pieces
  const std::string html2 = io::render_html_report(flat);
  CHECK(count(html2, "<svg id=\"chart-") == 2);
  CHECK(html2.find("log-scale y") == std::string::npos);
  CHECK(count(html2, "<polyline") == 3);  // train (2 pieces), lr
  // no metrics and no snapshots still make a page: a title and no empty panel
  const std::string empty = io::render_html_report(io::ReportData{});
  CHECK(empty.find("<h1>tinyformer report</h1>") != std::string::npos);
  CHECK(empty.find("<h2>") == std::string::npos);
  CHECK(empty.find("No metrics") == std::string::npos);
  CHECK(empty.find("<svg") == std::string::npos);
}

TEST_CASE("io: html report replaces its file atomically and an invalid report leaves the old file", "[io]") {
  test::TempDir dir;
  const fs::path path = dir.path() / "report.html";
  const fs::path old_link = dir.path() / "old-report.html";
  io::ReportData data = fake_report();
  io::write_html_report(path.string(), data);
  const std::string first = read_text(path);
  REQUIRE(first == io::render_html_report(data));

  // A second write goes to a new file renamed over the path: a hard link to the old file keeps the old bytes
  // (writing in place would have changed them) and the path now names a different inode.
  fs::create_hard_link(path, old_link);
  struct stat before {
  }, after{};
  REQUIRE(::stat(path.c_str(), &before) == 0);
  data.title = "second version";
  io::write_html_report(path.string(), data);
  REQUIRE(::stat(path.c_str(), &after) == 0);
  CHECK(before.st_ino != after.st_ino);
  CHECK(read_text(old_link) == first);
  CHECK(read_text(path).find("<h1>second version</h1>") != std::string::npos);

  // An invalid snapshot is reported before anything is written; the file keeps the second version.
  const std::string second = read_text(path);
  data.attention[1].weights = Array<float>::from_shape({2, 2, 8, 7});
  CHECK_THROWS_AS(io::write_html_report(path.string(), data), std::invalid_argument);
  CHECK_THROWS_WITH(io::write_html_report(path.string(), data),
                    Catch::Matchers::Contains("snapshot 1 (step 400)") && Catch::Matchers::Contains("[2, 2, 8, 7]"));
  data.attention[1].weights = diagonal_attention(2, 2, 8, 0.5f);
  data.attention[1].tokens.pop_back();
  CHECK_THROWS_WITH(io::write_html_report(path.string(), data), Catch::Matchers::Contains("7 token labels"));
  CHECK(read_text(path) == second);
  // no temporary files are left behind
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path())) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"old-report.html", "report.html"});

  data.attention[1].tokens.push_back(".");  // valid again: now the missing directory is the error
  const std::string missing = (dir.path() / "no-such-dir" / "r.html").string();
  CHECK_THROWS_AS(io::write_html_report(missing, data), std::runtime_error);
  CHECK_THROWS_WITH(io::write_html_report(missing, data), Catch::Matchers::Contains(missing));
}

TEST_CASE("io: html report renders curves and heatmaps in headless Chromium", "[io][browser]") {
  if (!fs::exists("/usr/bin/chromium"))
    FAIL("/usr/bin/chromium is missing: run scripts/install_deps.sh test (it installs chromium for this test)");
  test::TempDir dir;
  const fs::path report = dir.path() / "report.html";
  const fs::path shot = dir.path() / "screenshot.png";
  io::write_html_report(report.string(), fake_report(8));
  const std::string script = std::string(TINYFORMER_SOURCE_DIR) + "/scripts/check_report_renders.sh";
  const std::string command = "bash '" + script + "' '" + report.string() + "' '" + shot.string() + "'";
  INFO(command);
  const int status = std::system(command.c_str());
  REQUIRE(status == 0);

  // The heatmaps are drawn by the page's script, so their dark blues only appear if it ran; the loss chart's
  // orange train curve shows that the SVG rendered. (The charts use no blue.)
  int width = 0, height = 0, channels = 0;
  unsigned char* pixels = stbi_load(shot.string().c_str(), &width, &height, &channels, 3);
  REQUIRE(pixels != nullptr);
  long heatmap_blue = 0, orange = 0;
  for (long i = 0; i < static_cast<long>(width) * height; ++i) {
    const int r = pixels[3 * i], g = pixels[3 * i + 1], b = pixels[3 * i + 2];
    if (b > 90 && b - r > 80) ++heatmap_blue;
    if (r > 200 && g > 60 && g < 120 && b < 60) ++orange;
  }
  stbi_image_free(pixels);
  INFO("screenshot " << width << "x" << height << ": " << heatmap_blue << " heatmap-blue, " << orange << " orange");
  CHECK(width == 1400);
  CHECK(heatmap_blue > 3000);
  CHECK(orange > 100);
}

TEST_CASE("io: html report shows each section only when it has data", "[io]") {
  io::ReportData metrics_only = fake_report();
  metrics_only.attention.clear();
  metrics_only.config_yaml.clear();
  const std::string m = io::render_html_report(metrics_only);
  CHECK(m.find("<h2>Training curves</h2>") != std::string::npos);
  CHECK(m.find("class=\"summary\">61 logged steps") != std::string::npos);
  for (const char* absent : {"<h2>Heads", "<h2>Attention maps", "<h2>Head view", "<h2>Config", "chart-grad-norm",
                             "chart-entropy", "chart-best-score", "id=\"head-scores\"", "id=\"snapshot\""}) {
    INFO(absent);
    CHECK(m.find(absent) == std::string::npos);
  }

  io::ReportData snapshots_only = fake_report();
  snapshots_only.metrics.clear();
  const std::string a = io::render_html_report(snapshots_only);
  CHECK(a.find("<h2>Attention maps</h2>") != std::string::npos);
  CHECK(a.find("<h2>Head view</h2>") != std::string::npos);
  CHECK(a.find("<select id=\"hv-layer\">") != std::string::npos);
  CHECK(a.find("<h2>Config</h2>") != std::string::npos);
  CHECK(a.find("<h2>Training curves") == std::string::npos);
  CHECK(a.find("logged steps") == std::string::npos);
  CHECK(a.find("<svg id=\"chart") == std::string::npos);
  CHECK(a.find("orange box") == std::string::npos);  // no snapshot has expected keys

  // One row with a gradient norm or an entropy is enough for its chart; the entropy chart has a line per layer.
  io::ReportData one_each = metrics_only;
  one_each.metrics[5].grad_norm = 2.5;
  one_each.metrics[7].attention_entropy = {{1.0, 2.0}, {0.5, 0.25}};
  one_each.metrics[9].attention_entropy = {{1.5, 2.0}, {0.5, 0.75}};
  const std::string o = io::render_html_report(one_each);
  CHECK(chart(o, "chart-grad-norm").find("class=\"marker single\"") != std::string::npos);
  const std::string entropy = chart(o, "chart-entropy");
  CHECK(count(entropy, "<polyline") == 2);  // L0 (means 1.5, 1.75) and L1 (0.375, 0.625)
  CHECK(entropy.find(">L0</text>") != std::string::npos);
  CHECK(entropy.find(">L1</text>") != std::string::npos);
  CHECK(o.find("gradient norm 2.5") == std::string::npos);  // the summary shows the last row's values only

  // The expected pattern alone makes a Heads section with the sentence and no table.
  io::ReportData pattern_only;
  pattern_only.expected_pattern = "Each query attends to key 0.";
  const std::string p = io::render_html_report(pattern_only);
  CHECK(p.find("<h2>Heads</h2>") != std::string::npos);
  CHECK(p.find("<b>Expected pattern.</b> Each query attends to key 0.") != std::string::npos);
  CHECK(p.find("<table") == std::string::npos);
  // Roles alone make a table of roles without scores, a best head or its chart.
  io::ReportData roles_only;
  roles_only.head_roles = {{"self 0.90", "diffuse"}};
  const std::string r = io::render_html_report(roles_only);
  CHECK(r.find("<caption>The role of each head</caption>") != std::string::npos);
  CHECK(r.find("<td class=\"score\" data-layer=\"0\" data-head=\"1\">&ndash;<div class=\"role\">diffuse</div></td>") !=
        std::string::npos);
  CHECK(r.find("score best") == std::string::npos);
  CHECK(r.find("chart-best-score") == std::string::npos);
}

TEST_CASE("io: html report draws a ringed marker for a one-point series so that it is visible", "[io]") {
  io::ReportData data = fake_report();
  data.attention.clear();
  for (auto& row : data.metrics) row.val_loss.reset();
  data.metrics[30].val_loss = 0.5;  // one validation point among 61 training points
  const std::string loss = chart(io::render_html_report(data), "chart-loss");
  REQUIRE_FALSE(loss.empty());
  CHECK(count(loss, "class=\"marker single\"") == 1);
  CHECK(loss.find("r=\"4\" fill=\"#756bb1\" stroke=\"#fff\"") != std::string::npos);  // the val colour, ringed
  CHECK(count(loss, "<polyline") == 1);                                               // train only: val has no line
  CHECK(loss.find(">val loss</text>") != std::string::npos);                          // and is in the legend

  // A run of one logged step: both losses are single markers.
  io::ReportData one;
  io::MetricsRow row;
  row.step = 10;
  row.train_loss = 2.0;
  row.val_loss = 2.1;
  row.lr = 1e-3;
  one.metrics.push_back(row);
  const std::string single = chart(io::render_html_report(one), "chart-loss");
  CHECK(count(single, "class=\"marker single\"") == 2);
  CHECK(single.find("<polyline") == std::string::npos);
  // A point between two gaps of a long series is marked too; points of unbroken runs of a long series are not.
  io::ReportData gaps = fake_report();
  gaps.attention.clear();
  gaps.metrics[10].train_loss = std::nan("");
  gaps.metrics[12].train_loss = std::nan("");
  const std::string g = chart(io::render_html_report(gaps), "chart-loss");
  CHECK(count(g, "class=\"marker single\" cx") == 1);
  CHECK(count(g, "r=\"4\" fill=\"#e6550d\"") == 1);
}

TEST_CASE("io: html report embeds each snapshot's expected keys and scores and refuses ones that do not fit", "[io]") {
  io::ReportData data = heads_report();
  const std::string html = io::render_html_report(data);
  CHECK(count(html, "\"expected\":[-1,-1,-1,-1,-1,-1,5,6,7,8,9,10]") == 2);
  CHECK(html.find("\"scores\":[[0.1,0.9,0.2],[0.3,0.4,0.05]]") != std::string::npos);
  CHECK(html.find("\"head_colors\":[\"#1f77b4\"") != std::string::npos);
  CHECK(html.find("An orange box marks the key each answer query is expected to attend to.") != std::string::npos);
  // tokens with special characters travel as JSON escapes; the page shows them visibly (the browser test checks)
  CHECK(html.find(
            "\"tokens\":[\"a\",\" \",\"b\",\"\\n\",\"c\",\"\\t\",\"d\",\"\\u003ce>\",\"a\",\"b\",\"c\",\"\\u0001\"]") !=
        std::string::npos);

  using Catch::Matchers::Contains;
  io::ReportData bad = heads_report();
  bad.attention[1].expected.pop_back();
  CHECK_THROWS_WITH(io::render_html_report(bad), Contains("snapshot 1 (step 600)") && Contains("11 expected keys"));
  bad = heads_report();
  bad.attention[0].expected[3] = 12;
  CHECK_THROWS_WITH(io::render_html_report(bad), Contains("expected key 12 of query 3"));
  bad = heads_report();
  bad.attention[0].scores[1].pop_back();
  CHECK_THROWS_WITH(io::render_html_report(bad), Contains("scores must be [L][H] = [2][3]"));
}

TEST_CASE("io: html report's score table highlights the best head and shows roles and the pattern escaped", "[io]") {
  io::ReportData data = heads_report();
  const std::string html = io::render_html_report(data);
  CHECK(html.find("<b>Expected pattern.</b> Each answer query attends to the token before it &lt;q-1&gt;.") !=
        std::string::npos);
  CHECK(html.find("Expected-pattern score of each head at step 600") != std::string::npos);
  CHECK(count(html, "class=\"score best\"") == 1);
  CHECK(html.find("<td class=\"score best\" data-layer=\"0\" data-head=\"1\" style=\"background:") !=
        std::string::npos);
  CHECK(html.find(">0.90<div class=\"role\">previous_token &lt;0.90&gt;</div></td>") != std::string::npos);
  CHECK(html.find("<p class=\"summary\" id=\"best-head\">Best head: L0 H1, score 0.900.</p>") != std::string::npos);
  CHECK(count(html, "<td class=\"score") == 6);

  // Without logged scores the latest snapshot's scores are shown; a NaN score is a dash and never the best.
  for (auto& row : data.metrics) row.attention_score.clear();
  data.attention[1].scores = {{0.1, std::nan(""), 0.2}, {0.3, 0.7, 0.05}};
  const std::string from_snapshot = io::render_html_report(data);
  CHECK(from_snapshot.find("at step 600") != std::string::npos);
  CHECK(from_snapshot.find("<td class=\"score best\" data-layer=\"1\" data-head=\"1\"") != std::string::npos);
  CHECK(from_snapshot.find("data-head=\"1\">&ndash;<div class=\"role\">") != std::string::npos);
  CHECK(from_snapshot.find("\"scores\":[[0.1,null,0.2]") != std::string::npos);
}

TEST_CASE("io: html report's best-head score chart has the loss chart's step axis and width", "[io]") {
  const io::ReportData data = heads_report();
  const std::string html = io::render_html_report(data);
  const std::string loss = chart(html, "chart-loss"), best = chart(html, "chart-best-score");
  REQUIRE_FALSE(loss.empty());
  REQUIRE_FALSE(best.empty());
  CHECK(best.find("Expected-pattern score of L0 H1 (best head)") != std::string::npos);
  auto x_ticks = [](const std::string& svg) {
    std::vector<std::string> ticks;
    const std::regex tick(R"re(<text class="xtick" x="([0-9.]+)"[^>]*>([^<]*)</text>)re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it)
      ticks.push_back((*it)[1].str() + "@" + (*it)[2].str());
    return ticks;
  };
  const auto loss_ticks = x_ticks(loss);
  CHECK(loss_ticks.size() >= 3);
  CHECK(x_ticks(best) == loss_ticks);  // the same steps at the same x
  CHECK(best.find("width=\"420\" height=\"260\"") != std::string::npos);
  CHECK(loss.find("width=\"420\" height=\"260\"") != std::string::npos);
  // The best head's score at every logged step (13 rows): one line, dotted.
  CHECK(count(best, "<polyline") == 1);
  CHECK(count(best, "class=\"marker\"") == 13);
  // The snapshot steps widen the shared axis: a snapshot at step 900 moves the ticks of both charts alike.
  io::ReportData later = data;
  later.attention[1].step = 900;
  const std::string html2 = io::render_html_report(later);
  CHECK(x_ticks(chart(html2, "chart-best-score")) == x_ticks(chart(html2, "chart-loss")));
  CHECK(x_ticks(chart(html2, "chart-loss")) != loss_ticks);
}

TEST_CASE("io: html report head view responds to hover, click, head toggles and layers in headless Chromium",
          "[io][browser]") {
  if (!fs::exists("/usr/bin/chromium"))
    FAIL("/usr/bin/chromium is missing: run scripts/install_deps.sh test (it installs chromium for this test)");
  test::TempDir dir;
  const fs::path report = dir.path() / "heads report.html";
  io::write_html_report(report.string(), heads_report());
  const std::string script = std::string(TINYFORMER_SOURCE_DIR) + "/scripts/check_report_interactive.sh";
  // Query 9 of the last snapshot: head h's strongest key is 9 - h, the expected key is 8.
  const std::string command = "bash '" + script + "' '" + report.string() + "' --query 9";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
}

TEST_CASE("io: html report of text shows the induction score of each head and the best head's over the steps", "[io]") {
  io::ReportData data = fake_report();
  data.attention.clear();
  for (auto& row : data.metrics)
    if (row.val_loss) row.induction_score = {{0.1, 0.05}, {0.02, 0.1 + 0.8 * static_cast<double>(row.step) / 600}};
  const std::string html = io::render_html_report(data);
  CHECK(html.find("<caption>Induction score of each head at step 600</caption>") != std::string::npos);
  CHECK(html.find("Best head: L1 H1, score 0.900.") != std::string::npos);
  const std::string best = chart(html, "chart-best-score");
  CHECK(best.find("Induction score of L1 H1 (best head)") != std::string::npos);
  CHECK(count(best, "<polyline") == 1);
  // Expected-pattern scores, where there are any, come first.
  data.metrics.back().attention_score = {{0.7, 0.2}, {0.1, 0.3}};
  const std::string expected = io::render_html_report(data);
  CHECK(expected.find("<caption>Expected-pattern score of each head at step 600</caption>") != std::string::npos);
  CHECK(expected.find("Induction score") == std::string::npos);
}

TEST_CASE("io: html_iframe holds the whole page escaped in srcdoc, one element, nothing fetched", "[io]") {
  const std::string page = io::render_html_report(fake_report());
  const std::string frame = io::html_iframe(page, 300);
  CHECK(frame.rfind("<iframe ", 0) == 0);
  CHECK(frame.size() > page.size());
  CHECK(frame.find("</iframe>") == frame.size() - 9);  // one element: the page's own tags are escaped inside it
  CHECK(frame.find("<script") == std::string::npos);
  CHECK(frame.find("://") == std::string::npos);
  CHECK(frame.find("height:300px") != std::string::npos);
  // srcdoc holds the page, unescaped by the browser back to the same bytes
  const auto start = frame.find("srcdoc=\"") + 8;
  std::string srcdoc = frame.substr(start, frame.find('"', start) - start);
  for (const auto& [entity, text] : std::vector<std::pair<std::string, std::string>>{
           {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}}) {
    for (auto at = srcdoc.find(entity); at != std::string::npos; at = srcdoc.find(entity, at + text.size()))
      srcdoc.replace(at, entity.size(), text);
  }
  CHECK(srcdoc == page);
}
