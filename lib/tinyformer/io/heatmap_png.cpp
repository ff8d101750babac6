#include "tinyformer/io/heatmap_png.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

// stb from Debian's libstb-dev: the implementation is compiled into libstb (link -lstb), so only the
// declarations are included here (no STB_IMAGE_WRITE_IMPLEMENTATION). stb_easy_font is header-only (static).
#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include "tinyformer/io/atomic_file.hpp"

namespace tf::io {

namespace {

// Layout constants (see the header).
constexpr int kMargin = 12;
constexpr int kTitleBand = 32;
constexpr int kCaptionBand = 14;
constexpr int kGap = 16;
constexpr int kCharWidth = 6;    // stb_easy_font advance per character at scale 1
constexpr int kGlyphHeight = 7;  // cap height at scale 1 (descenders go 2 px lower)
constexpr int kMaxLabelChars = 8;
constexpr int kMaxTitleChars = 100;
constexpr int kColorBarWidth = 120;  // "0" + 4 + 100 px ramp + 4 + "1"
constexpr int kMaxSide = 16384;
constexpr long kMinLabelPitch = 8;        // pixels between two labels (a glyph is 7 high)
constexpr long kMaxAnnotatedHeat = 1024;  // a labelled heatmap grows to 8 px per token up to this side
constexpr const char* kOutlineLegend = "expected key";
constexpr int kOutlineLegendWidth = 14 + 12 * kCharWidth;  // a 10 px box, a gap, the legend text

using Rgb = std::array<std::uint8_t, 3>;
// Stands for a space in a label on its way to Canvas::text, which draws it as an open box; never printable (control
// bytes of a label are escaped as "\xNN" before).
constexpr char kVisibleSpace = '\x01';
constexpr Rgb kText = {40, 40, 40};
constexpr Rgb kFrame = {150, 150, 150};
constexpr Rgb kOutline = {255, 127, 14};  // orange: stands out against every blue of the colormap

// Printable ASCII for the bitmap font: see the header for the mapping (titles keep their spaces).
std::string printable_ascii(const std::string& s, std::size_t max_chars, bool show_spaces) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == ' ') {
      out += show_spaces ? kVisibleSpace : ' ';
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c > 32 && c < 127) {
      out += static_cast<char>(c);
    } else if (c < 32 || c == 127) {
      out += fmt::format("\\x{:02X}", c);
    } else if (c >= 0xC0) {  // start of a UTF-8 sequence: one '?' for the whole character
      out += '?';
      while (i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80) ++i;
    } else {
      out += '?';
    }
  }
  if (out.size() > max_chars) out = out.substr(0, max_chars - 1) + '~';
  return out;
}

// A clipped drawing surface on the RGB buffer.
struct Canvas {
  int width;
  int height;
  std::vector<std::uint8_t>& rgb;

  void fill_rect(int x0, int y0, int x1, int y1, Rgb c, int clip_x0, int clip_y0, int clip_x1, int clip_y1) {
    x0 = std::max({x0, clip_x0, 0});
    y0 = std::max({y0, clip_y0, 0});
    x1 = std::min({x1, clip_x1, width});
    y1 = std::min({y1, clip_y1, height});
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        std::uint8_t* p = &rgb[(static_cast<std::size_t>(y) * width + x) * 3];
        p[0] = c[0];
        p[1] = c[1];
        p[2] = c[2];
      }
  }
  void fill_rect(int x0, int y0, int x1, int y1, Rgb c) { fill_rect(x0, y0, x1, y1, c, 0, 0, width, height); }

  // A rectangle outline `thickness` pixels wide, inside [x0, x1) x [y0, y1).
  void outline(int x0, int y0, int x1, int y1, int thickness, Rgb c) {
    fill_rect(x0, y0, x1, y0 + thickness, c);
    fill_rect(x0, y1 - thickness, x1, y1, c);
    fill_rect(x0, y0, x0 + thickness, y1, c);
    fill_rect(x1 - thickness, y0, x1, y1, c);
  }

  // Where and how text is drawn: see text().
  struct TextPlace {
    int x, y, scale;
    bool vertical;
    Rgb color;
    int clip_x0, clip_y0, clip_x1, clip_y1;
  };

  // The glyph-grid rectangle [gx0, gx1) x [gy0, gy1) of text placed by `p`.
  void glyph_rect(const TextPlace& p, int gx0, int gy0, int gx1, int gy1) {
    const int ax0 = gx0 * p.scale, ax1 = gx1 * p.scale, ay0 = gy0 * p.scale, ay1 = gy1 * p.scale;
    if (!p.vertical)
      fill_rect(p.x + ax0, p.y + ay0, p.x + ax1, p.y + ay1, p.color, p.clip_x0, p.clip_y0, p.clip_x1, p.clip_y1);
    else  // glyph (gx, gy) -> image (x + gy, y - gx)
      fill_rect(p.x + ay0, p.y - ax1, p.x + ay1, p.y - ax0, p.color, p.clip_x0, p.clip_y0, p.clip_x1, p.clip_y1);
  }

  // Text with stb_easy_font: its quads are axis-aligned unit-grid rectangles, filled here at `scale`.
  // vertical = false: left-to-right with the glyph tops at y. vertical = true: rotated 90 degrees
  // counter-clockwise, reading bottom-to-top from (x, y), glyph tops pointing left (x is the glyph top).
  // kVisibleSpace is drawn as an open box (U+2423) in a space's advance. Pixels outside the clip rectangle are
  // left alone.
  void text(const std::string& s, int x, int y, int scale, bool vertical, Rgb c, int clip_x0, int clip_y0, int clip_x1,
            int clip_y1) {
    if (s.empty()) return;
    const TextPlace place{x, y, scale, vertical, c, clip_x0, clip_y0, clip_x1, clip_y1};
    std::vector<char> chars;
    for (const char ch : s) chars.push_back(ch == kVisibleSpace ? ' ' : ch);
    chars.push_back('\0');
    // ~270 bytes per character on average (stb_easy_font docs); 16 bytes per vertex, 4 vertices per quad.
    std::vector<float> vertices(s.size() * 160 + 64);
    const int quads = stb_easy_font_print(0.f, 0.f, chars.data(), nullptr, vertices.data(),
                                          static_cast<int>(vertices.size() * sizeof(float)));
    for (int q = 0; q < quads; ++q) {
      const float* v = &vertices[static_cast<std::size_t>(q) * 16];  // 4 vertices x (x, y, z, rgba)
      float gx0 = v[0], gy0 = v[1], gx1 = v[0], gy1 = v[1];
      for (std::size_t k = 1; k < 4; ++k) {
        gx0 = std::min(gx0, v[k * 4]);
        gx1 = std::max(gx1, v[k * 4]);
        gy0 = std::min(gy0, v[k * 4 + 1]);
        gy1 = std::max(gy1, v[k * 4 + 1]);
      }
      glyph_rect(place, static_cast<int>(std::lround(gx0)), static_cast<int>(std::lround(gy0)),
                 static_cast<int>(std::lround(gx1)), static_cast<int>(std::lround(gy1)));
    }
    for (std::size_t i = 0; i < s.size(); ++i)
      if (s[i] == kVisibleSpace) {
        chars[i] = '\0';  // the width of the text before it
        const int ox = stb_easy_font_width(chars.data());
        chars[i] = ' ';
        glyph_rect(place, ox, 6, ox + 5, 7);  // the bottom
        glyph_rect(place, ox, 4, ox + 1, 6);  // and two short sides, within the cap height (rows 0..6)
        glyph_rect(place, ox + 4, 4, ox + 5, 6);
      }
  }
  void text(const std::string& s, int x, int y, int scale, Rgb c) {
    text(s, x, y, scale, false, c, 0, 0, width, height);
  }
};

void append_bytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

}  // namespace

AttentionDims check_attention_weights(const Array<float>& weights, std::size_t n_labels, const std::string& where) {
  const Shape shape = to_shape(weights.shape());
  if (shape.size() != 4 || shape[2] != shape[3] || shape_numel(shape) == 0)
    throw std::invalid_argument(
        fmt::format("{}: attention weights must be [L,H,T,T] (layers, heads, queries, keys) with L, H, T > 0, got {}",
                    where, shape_str(shape)));
  if (n_labels != 0 && n_labels != shape[2])
    throw std::invalid_argument(fmt::format("{}: {} token labels for attention weights {}: give {} labels or none",
                                            where, n_labels, shape_str(shape), shape[2]));
  return AttentionDims{shape[0], shape[1], shape[2]};
}

std::array<std::uint8_t, 3> attention_color(float weight) {
  // White, then ColorBrewer "Blues" (9 classes) from its 2nd class on, at evenly spaced weights.
  static constexpr Rgb kStops[9] = {{255, 255, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
                                    {66, 146, 198},  {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};
  if (std::isnan(weight)) return {220, 40, 40};
  const float t = std::clamp(weight, 0.f, 1.f) * 8.f;
  const int i = std::min(static_cast<int>(t), 7);
  const float f = t - static_cast<float>(i);
  Rgb c{};
  for (int k = 0; k < 3; ++k)
    c[k] = static_cast<std::uint8_t>(std::lround(kStops[i][k] + f * (kStops[i + 1][k] - kStops[i][k])));
  return c;
}

int AttentionGridImage::cell_x(std::size_t head, std::size_t key) const {
  return column_x.at(head) + static_cast<int>(key) * pixels_per_token;
}

int AttentionGridImage::cell_y(std::size_t layer, std::size_t query) const {
  return row_y.at(layer) + static_cast<int>(query) * pixels_per_token;
}

std::array<std::uint8_t, 3> AttentionGridImage::pixel(int x, int y) const {
  if (x < 0 || y < 0 || x >= width || y >= height)
    throw std::invalid_argument(
        fmt::format("AttentionGridImage::pixel: ({}, {}) is outside the {} x {} image", x, y, width, height));
  const std::uint8_t* p = &rgb[(static_cast<std::size_t>(y) * width + x) * 3];
  return {p[0], p[1], p[2]};
}

namespace {

// Sizes of the image in pixels (see the header's layout).
struct GridLayout {
  long s = 1;            // pixels per token
  long label_every = 0;  // k: every k-th token is labelled (0: no labels)
  long band = 0;         // label band left of and above a heatmap
  long heat = 0;         // s*T
  long block_w = 0, block_h = 0, width = 0, height = 0;
};

GridLayout layout_for(long s, long L, long H, long T, long longest_label, long title_w) {
  GridLayout g;
  g.s = s;
  g.label_every = longest_label > 0 ? (kMinLabelPitch + s - 1) / s : 0;
  g.band = longest_label > 0 ? kCharWidth * longest_label + 4 : 0;
  g.heat = s * T;
  g.block_w = g.band + g.heat;
  g.block_h = kCaptionBand + g.band + g.heat;
  g.width = std::max(2L * kMargin + H * g.block_w + (H - 1) * kGap, title_w);
  g.height = 2 * kMargin + kTitleBand + L * g.block_h + (L - 1) * kGap;
  return g;
}

// Plain maps: s = clamp(256 / T, 1, 24). With labels or outlines the maps grow to at least 8 px per token while a
// heatmap stays within kMaxAnnotatedHeat; the first s from there down to 1 that fits kMaxSide wins (below plain only
// when many layers or heads need it). false (and `g` the layout at 1 px a token) when none fits.
bool fitting_layout(const AttentionDims& d, long longest_label, bool annotated, long title_w, GridLayout& g) {
  const long L = static_cast<long>(d.layers), H = static_cast<long>(d.heads), T = static_cast<long>(d.tokens);
  const long plain = std::clamp(256L / T, 1L, 24L);
  const long wanted = annotated ? std::max(plain, std::min(kMinLabelPitch, kMaxAnnotatedHeat / T)) : plain;
  for (long s = wanted; s >= 1; --s) {
    g = layout_for(s, L, H, T, longest_label, title_w);
    if (g.width <= kMaxSide && g.height <= kMaxSide) return true;
  }
  return false;
}

GridLayout choose_layout(const AttentionDims& d, long longest_label, bool annotated, long title_w) {
  GridLayout g;
  if (fitting_layout(d, longest_label, annotated, title_w, g)) return g;
  const long L = static_cast<long>(d.layers), H = static_cast<long>(d.heads), T = static_cast<long>(d.tokens);
  throw std::invalid_argument(fmt::format(
      "render_attention_grid: attention weights [{}, {}, {}, {}] need a {} x {} image, more than {} pixels on a side; "
      "plot fewer layers or heads",
      L, H, T, T, g.width, g.height, kMaxSide));
}

void check_expected_keys(const std::vector<long>& expected, std::size_t T) {
  if (!expected.empty() && expected.size() != T)
    throw std::invalid_argument(fmt::format("render_attention_grid: {} expected keys for {} tokens: give one per "
                                            "query (-1 for none) or none",
                                            expected.size(), T));
  for (std::size_t q = 0; q < expected.size(); ++q)
    if (expected[q] < -1 || expected[q] >= static_cast<long>(T))
      throw std::invalid_argument(
          fmt::format("render_attention_grid: expected key {} of query {} is not in [-1, {})", expected[q], q, T));
}

// The title line: the title at scale 2, a color bar "0 [ramp] 1", and with outlines a legend for them.
void draw_title_line(Canvas& canvas, const std::string& title_text, bool outlines) {
  canvas.text(title_text, kMargin, kMargin, 2, kText);
  const int bar_x = kMargin + 2 * kCharWidth * static_cast<int>(title_text.size()) + kGap;
  canvas.text("0", bar_x, kMargin + 4, 1, kText);
  for (int i = 0; i < 100; ++i)
    canvas.fill_rect(bar_x + kCharWidth + 4 + i, kMargin + 2, bar_x + kCharWidth + 5 + i, kMargin + 12,
                     attention_color(static_cast<float>(i) / 99.f));
  canvas.text("1", bar_x + kCharWidth + 108, kMargin + 4, 1, kText);
  if (!outlines) return;
  const int x = bar_x + kColorBarWidth + kGap;
  canvas.outline(x, kMargin + 2, x + 10, kMargin + 12, 2, kOutline);
  canvas.text(kOutlineLegend, x + 14, kMargin + 4, 1, kText);
}

// Token labels of one heatmap whose top-left pixel is (x0, y0): queries right-aligned left of their rows, keys
// vertical above their columns, every k-th token, each clipped to its slot of k*s pixels centred on its token.
void draw_labels(Canvas& canvas, const GridLayout& g, const std::vector<std::string>& labels, int x0, int y0) {
  const int s = static_cast<int>(g.s), k = static_cast<int>(g.label_every), band = static_cast<int>(g.band);
  const int text_offset = (s - kGlyphHeight) / 2;  // centres a glyph on an s px row
  for (std::size_t t = 0; t < labels.size(); t += static_cast<std::size_t>(k)) {
    const int at = static_cast<int>(t) * s, slot0 = at + s / 2 - k * s / 2, slot1 = slot0 + k * s;
    const int label_w = kCharWidth * static_cast<int>(labels[t].size());
    canvas.text(labels[t], x0 - 4 - label_w + 1, y0 + at + text_offset, 1, false, kText, x0 - band, y0 + slot0, x0 - 2,
                y0 + slot1);
    canvas.text(labels[t], x0 + at + text_offset, y0 - 4, 1, true, kText, x0 + slot0, y0 - band, x0 + slot1, y0 - 2);
    if (k > 1) {  // thinned: a tick in the gap points at the labelled row and column
      canvas.fill_rect(x0 - 3, y0 + at + s / 2, x0 - 1, y0 + at + s / 2 + 1, kText);
      canvas.fill_rect(x0 + at + s / 2, y0 - 3, x0 + at + s / 2 + 1, y0 - 1, kText);
    }
  }
}

// One head's heatmap (weights `map` [T,T]) at (x0, y0), its frame, and the outlines of the expected cells.
void draw_heatmap(Canvas& canvas, const GridLayout& g, const float* map, long T, const std::vector<long>& expected,
                  int x0, int y0) {
  const int s = static_cast<int>(g.s), heat = static_cast<int>(g.heat);
  canvas.fill_rect(x0 - 1, y0 - 1, x0 + heat + 1, y0 + heat + 1, kFrame);  // frame one pixel outside the heatmap
  for (long q = 0; q < T; ++q)
    for (long k = 0; k < T; ++k) {
      const int cx = x0 + static_cast<int>(k) * s, cy = y0 + static_cast<int>(q) * s;
      canvas.fill_rect(cx, cy, cx + s, cy + s, attention_color(map[q * T + k]));
    }
  const int thickness = std::max(1, s / 8);
  for (std::size_t q = 0; q < expected.size(); ++q)
    if (expected[q] >= 0) {
      const int cx = x0 + static_cast<int>(expected[q]) * s, cy = y0 + static_cast<int>(q) * s;
      canvas.outline(cx, cy, cx + s, cy + s, thickness, kOutline);
    }
}

// What the layout depends on besides the dimensions: the labels and the title as drawn.
struct GridText {
  std::vector<std::string> labels;
  long longest = 0;  // the longest label's characters, at least 1 with labels
  std::string title;
  bool outlines = false;
  long title_w = 0;  // the title line's width
};

GridText grid_text(const std::vector<std::string>& tokens, const std::string& title,
                   const std::vector<long>& expected) {
  GridText t;
  for (const auto& token : tokens) {
    t.labels.push_back(printable_ascii(token, kMaxLabelChars, true));
    t.longest = std::max({t.longest, static_cast<long>(t.labels.back().size()), 1L});
  }
  t.title = printable_ascii(title, kMaxTitleChars, false);
  t.outlines = !expected.empty();
  t.title_w = 2L * kMargin + 2L * kCharWidth * static_cast<long>(t.title.size()) + kGap + kColorBarWidth +
              (t.outlines ? kGap + kOutlineLegendWidth : 0);
  return t;
}

bool fits(const AttentionDims& d, const GridText& t) {
  GridLayout g;
  return fitting_layout(d, t.longest, !t.labels.empty() || t.outlines, t.title_w, g);
}

// weights [L,H,T,T] averaged over blocks of f x f (queries x keys; the last blocks of a row or column may be smaller):
// [L,H,ceil(T/f),ceil(T/f)]. A NaN stays NaN in its block.
Array<float> pooled(const Array<float>& weights, const AttentionDims& d, std::size_t f) {
  const std::size_t T = d.tokens, P = (T + f - 1) / f;
  Array<float> out = Array<float>::from_shape({d.layers, d.heads, P, P});
  for (std::size_t m = 0; m < d.layers * d.heads; ++m) {
    const float* w = weights.data() + m * T * T;
    float* o = out.data() + m * P * P;
    for (std::size_t i = 0; i < P; ++i)
      for (std::size_t j = 0; j < P; ++j) {
        const std::size_t q1 = std::min(T, (i + 1) * f), k1 = std::min(T, (j + 1) * f);
        double sum = 0;
        for (std::size_t q = i * f; q < q1; ++q)
          for (std::size_t k = j * f; k < k1; ++k) sum += w[q * T + k];
        o[i * P + j] = static_cast<float>(sum / static_cast<double>((q1 - i * f) * (k1 - j * f)));
      }
  }
  return out;
}

}  // namespace

AttentionGridImage render_attention_grid(const Array<float>& weights, const std::vector<std::string>& tokens,
                                         const std::string& title, const std::vector<long>& expected) {
  const AttentionDims d = check_attention_weights(weights, tokens.size(), "render_attention_grid");
  check_expected_keys(expected, d.tokens);
  const GridText text = grid_text(tokens, title, expected);
  const std::vector<std::string>& labels = text.labels;
  const std::string& title_text = text.title;
  const bool outlines = text.outlines;
  const GridLayout g = choose_layout(d, text.longest, !labels.empty() || outlines, text.title_w);

  AttentionGridImage img;
  img.width = static_cast<int>(g.width);
  img.height = static_cast<int>(g.height);
  img.rgb.assign(static_cast<std::size_t>(g.width * g.height * 3), 255);
  img.dims = d;
  img.pixels_per_token = static_cast<int>(g.s);
  img.labels = !labels.empty();
  img.label_every = static_cast<int>(g.label_every);
  img.outlines = outlines;
  for (std::size_t h = 0; h < d.heads; ++h)
    img.column_x.push_back(static_cast<int>(kMargin + static_cast<long>(h) * (g.block_w + kGap) + g.band));
  for (std::size_t l = 0; l < d.layers; ++l)
    img.row_y.push_back(
        static_cast<int>(kMargin + kTitleBand + static_cast<long>(l) * (g.block_h + kGap) + kCaptionBand + g.band));
  Canvas canvas{img.width, img.height, img.rgb};
  draw_title_line(canvas, title_text, outlines);

  // weights [L,H,T,T], row-major: element (l, h, q, k) at ((l*H + h)*T + q)*T + k.
  const long T = static_cast<long>(d.tokens);
  for (std::size_t l = 0; l < d.layers; ++l)
    for (std::size_t h = 0; h < d.heads; ++h) {
      const int x0 = img.column_x[h], y0 = img.row_y[l];
      canvas.text(fmt::format("L{} H{}", l, h), x0, y0 - static_cast<int>(g.band) - kCaptionBand + 2, 1, kText);
      draw_heatmap(canvas, g, weights.data() + (l * d.heads + h) * T * T, T, expected, x0, y0);
      if (img.labels) draw_labels(canvas, g, labels, x0, y0);
    }
  return img;
}

std::string encode_png_rgb(int width, int height, const std::vector<std::uint8_t>& rgb) {
  if (width <= 0 || height <= 0 || rgb.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3)
    throw std::invalid_argument(fmt::format("encode_png_rgb: {} bytes do not form a {} x {} RGB image (need {})",
                                            rgb.size(), width, height,
                                            static_cast<std::size_t>(std::max(width, 0)) * std::max(height, 0) * 3));
  std::string png;
  if (stbi_write_png_to_func(append_bytes, &png, width, height, 3, rgb.data(), width * 3) == 0 || png.empty())
    throw std::runtime_error(
        fmt::format("encode_png_rgb: stb_image_write failed to encode a {} x {} image", width, height));
  return png;
}

void write_attention_grid_png(const std::string& path, const Array<float>& weights,
                              const std::vector<std::string>& tokens, const std::string& title,
                              const std::vector<long>& expected) {
  const AttentionDims d = check_attention_weights(weights, tokens.size(), "write_attention_grid_png");
  check_expected_keys(expected, d.tokens);
  std::size_t f = 1;
  std::string pooled_title;
  // (past f = T the grid of layers x heads alone is too large: render_attention_grid says so)
  while (f < d.tokens && !fits({d.layers, d.heads, (d.tokens + f - 1) / f},
                               f == 1 ? grid_text(tokens, title, expected) : grid_text({}, pooled_title, {}))) {
    ++f;
    const std::string note = fmt::format(" (a cell: the mean of {} x {} tokens)", f, f);  // never cut off
    pooled_title = printable_ascii(title, kMaxTitleChars - note.size(), false) + note;
  }
  const AttentionGridImage img = f == 1 ? render_attention_grid(weights, tokens, title, expected)
                                        : render_attention_grid(pooled(weights, d, f), {}, pooled_title, {});
  const std::string png = encode_png_rgb(img.width, img.height, img.rgb);
  write_file_atomic(path, png.data(), png.size());
}

}  // namespace tf::io
