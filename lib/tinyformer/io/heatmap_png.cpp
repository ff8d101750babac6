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
constexpr int kCharWidth = 6;       // stb_easy_font advance per character at scale 1
constexpr int kGlyphHeight = 7;     // cap height at scale 1 (descenders go 2 px lower)
constexpr int kMaxLabelChars = 8;
constexpr int kMaxTitleChars = 100;
constexpr int kColorBarWidth = 120;  // "0" + 4 + 100 px ramp + 4 + "1"
constexpr int kMaxSide = 16384;

using Rgb = std::array<std::uint8_t, 3>;
constexpr Rgb kText = {40, 40, 40};
constexpr Rgb kFrame = {150, 150, 150};

// Printable ASCII for the bitmap font: see the header for the mapping (titles keep their spaces).
std::string printable_ascii(const std::string& s, std::size_t max_chars, bool show_spaces) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == ' ') {
      out += show_spaces ? '_' : ' ';
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c > 32 && c < 127) {
      out += static_cast<char>(c);
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

  // Text with stb_easy_font: its quads are axis-aligned unit-grid rectangles, filled here at `scale`.
  // vertical = false: left-to-right with the glyph tops at y. vertical = true: rotated 90 degrees
  // counter-clockwise, reading bottom-to-top from (x, y), glyph tops pointing left (x is the glyph top).
  // Pixels outside the clip rectangle are left alone.
  void text(const std::string& s, int x, int y, int scale, bool vertical, Rgb c, int clip_x0, int clip_y0,
            int clip_x1, int clip_y1) {
    if (s.empty()) return;
    std::vector<char> chars(s.begin(), s.end());
    chars.push_back('\0');
    // ~270 bytes per character on average (stb_easy_font docs); 16 bytes per vertex, 4 vertices per quad.
    std::vector<float> vertices(s.size() * 160 + 64);
    const int quads = stb_easy_font_print(0.f, 0.f, chars.data(), nullptr, vertices.data(),
                                          static_cast<int>(vertices.size() * sizeof(float)));
    for (int q = 0; q < quads; ++q) {
      const float* v = &vertices[static_cast<std::size_t>(q) * 16];  // 4 vertices x (x, y, z, rgba)
      float gx0 = v[0], gy0 = v[1], gx1 = v[0], gy1 = v[1];
      for (int k = 1; k < 4; ++k) {
        gx0 = std::min(gx0, v[k * 4]);
        gx1 = std::max(gx1, v[k * 4]);
        gy0 = std::min(gy0, v[k * 4 + 1]);
        gy1 = std::max(gy1, v[k * 4 + 1]);
      }
      const int ax0 = static_cast<int>(std::lround(gx0)) * scale, ax1 = static_cast<int>(std::lround(gx1)) * scale;
      const int ay0 = static_cast<int>(std::lround(gy0)) * scale, ay1 = static_cast<int>(std::lround(gy1)) * scale;
      if (!vertical)
        fill_rect(x + ax0, y + ay0, x + ax1, y + ay1, c, clip_x0, clip_y0, clip_x1, clip_y1);
      else  // glyph (gx, gy) -> image (x + gy, y - gx)
        fill_rect(x + ay0, y - ax1, x + ay1, y - ax0, c, clip_x0, clip_y0, clip_x1, clip_y1);
    }
  }
  void text(const std::string& s, int x, int y, int scale, Rgb c) { text(s, x, y, scale, false, c, 0, 0, width, height); }
};

void append_bytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

}  // namespace

AttentionDims check_attention_weights(const Array<float>& weights, std::size_t n_labels, const std::string& where) {
  const Shape shape = to_shape(weights.shape());
  if (shape.size() != 4 || shape[2] != shape[3] || shape_numel(shape) == 0)
    throw std::invalid_argument(fmt::format(
        "{}: attention weights must be [L,H,T,T] (layers, heads, queries, keys) with L, H, T > 0, got {}", where,
        shape_str(shape)));
  if (n_labels != 0 && n_labels != shape[2])
    throw std::invalid_argument(fmt::format("{}: {} token labels for attention weights {}: give {} labels or none",
                                            where, n_labels, shape_str(shape), shape[2]));
  return AttentionDims{shape[0], shape[1], shape[2]};
}

std::array<std::uint8_t, 3> attention_color(float weight) {
  // White, then ColorBrewer "Blues" (9 classes) from its 2nd class on, at evenly spaced weights.
  static constexpr Rgb kStops[9] = {{255, 255, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
                                    {66, 146, 198},   {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};
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
    throw std::invalid_argument(fmt::format("AttentionGridImage::pixel: ({}, {}) is outside the {} x {} image", x, y,
                                            width, height));
  const std::uint8_t* p = &rgb[(static_cast<std::size_t>(y) * width + x) * 3];
  return {p[0], p[1], p[2]};
}

AttentionGridImage render_attention_grid(const Array<float>& weights, const std::vector<std::string>& tokens,
                                         const std::string& title) {
  const AttentionDims d = check_attention_weights(weights, tokens.size(), "render_attention_grid");
  const long L = static_cast<long>(d.layers), H = static_cast<long>(d.heads), T = static_cast<long>(d.tokens);

  std::vector<std::string> labels;
  std::size_t longest = 0;
  for (const auto& t : tokens) {
    labels.push_back(printable_ascii(t, kMaxLabelChars, true));
    longest = std::max(longest, labels.back().size());
  }
  const std::string title_text = printable_ascii(title, kMaxTitleChars, false);

  const long s = std::clamp(256L / T, 1L, 24L);
  const bool draw_labels = !labels.empty() && s >= 8;
  const long band = draw_labels ? kCharWidth * static_cast<long>(longest) + 4 : 0;
  const long heat = s * T;
  const long block_w = band + heat, block_h = kCaptionBand + band + heat;
  const long title_w = 2 * kMargin + 2 * kCharWidth * static_cast<long>(title_text.size()) + kGap + kColorBarWidth;
  const long width = std::max(2 * kMargin + H * block_w + (H - 1) * kGap, title_w);
  const long height = 2 * kMargin + kTitleBand + L * block_h + (L - 1) * kGap;
  if (width > kMaxSide || height > kMaxSide)
    throw std::invalid_argument(fmt::format(
        "render_attention_grid: attention weights {} need a {} x {} image, more than {} pixels on a side; "
        "plot fewer layers or heads",
        shape_str(to_shape(weights.shape())), width, height, kMaxSide));

  AttentionGridImage img;
  img.width = static_cast<int>(width);
  img.height = static_cast<int>(height);
  img.rgb.assign(static_cast<std::size_t>(width * height * 3), 255);
  img.dims = d;
  img.pixels_per_token = static_cast<int>(s);
  img.labels = draw_labels;
  for (long h = 0; h < H; ++h) img.column_x.push_back(static_cast<int>(kMargin + h * (block_w + kGap) + band));
  for (long l = 0; l < L; ++l)
    img.row_y.push_back(static_cast<int>(kMargin + kTitleBand + l * (block_h + kGap) + kCaptionBand + band));
  Canvas canvas{img.width, img.height, img.rgb};

  // Title line: the title at scale 2, then a color bar "0 [ramp] 1".
  canvas.text(title_text, kMargin, kMargin, 2, kText);
  const int bar_x = kMargin + 2 * kCharWidth * static_cast<int>(title_text.size()) + kGap;
  canvas.text("0", bar_x, kMargin + 4, 1, kText);
  for (int i = 0; i < 100; ++i)
    canvas.fill_rect(bar_x + kCharWidth + 4 + i, kMargin + 2, bar_x + kCharWidth + 5 + i, kMargin + 12,
                     attention_color(static_cast<float>(i) / 99.f));
  canvas.text("1", bar_x + kCharWidth + 108, kMargin + 4, 1, kText);

  // weights [L,H,T,T], row-major: element (l, h, q, k) at ((l*H + h)*T + q)*T + k.
  const float* w = weights.data();
  const int text_offset = static_cast<int>((s - kGlyphHeight) / 2);  // centers a glyph in an s px row
  for (long l = 0; l < L; ++l)
    for (long h = 0; h < H; ++h) {
      const int x0 = img.column_x[static_cast<std::size_t>(h)], y0 = img.row_y[static_cast<std::size_t>(l)];
      const int block_x = x0 - static_cast<int>(band), block_y = y0 - static_cast<int>(band) - kCaptionBand;
      canvas.text(fmt::format("L{} H{}", l, h), x0, block_y + 2, 1, kText);
      // frame one pixel outside the heatmap
      canvas.fill_rect(x0 - 1, y0 - 1, x0 + static_cast<int>(heat) + 1, y0 + static_cast<int>(heat) + 1, kFrame);
      const float* map = w + (l * H + h) * T * T;
      for (long q = 0; q < T; ++q)
        for (long k = 0; k < T; ++k) {
          const int cx = x0 + static_cast<int>(k * s), cy = y0 + static_cast<int>(q * s);
          canvas.fill_rect(cx, cy, cx + static_cast<int>(s), cy + static_cast<int>(s), attention_color(map[q * T + k]));
        }
      if (!draw_labels) continue;
      for (long t = 0; t < T; ++t) {
        const std::string& label = labels[static_cast<std::size_t>(t)];
        const int row = y0 + static_cast<int>(t * s), col = x0 + static_cast<int>(t * s);
        // query t: right-aligned left of row t, clipped to the row
        const int label_w = kCharWidth * static_cast<int>(label.size());
        canvas.text(label, x0 - 4 - label_w + 1, row + text_offset, 1, false, kText, block_x, row, x0 - 2,
                    row + static_cast<int>(s));
        // key t: vertical above column t, reading upwards from just above the heatmap, clipped to the column
        canvas.text(label, col + text_offset, y0 - 4, 1, true, kText, col, block_y + kCaptionBand, col + static_cast<int>(s),
                    y0 - 2);
      }
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
    throw std::runtime_error(fmt::format("encode_png_rgb: stb_image_write failed to encode a {} x {} image", width, height));
  return png;
}

void write_attention_grid_png(const std::string& path, const Array<float>& weights,
                              const std::vector<std::string>& tokens, const std::string& title) {
  const AttentionGridImage img = render_attention_grid(weights, tokens, title);
  const std::string png = encode_png_rgb(img.width, img.height, img.rgb);
  write_file_atomic(path, png.data(), png.size());
}

}  // namespace tf::io
