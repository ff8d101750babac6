// Attention grid PNGs: the file is a PNG with the documented size, decodes (stb_image) to exactly the rendered
// pixels, weight 0 is white and weight 1 dark blue at the documented cell positions, labels appear where they fit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>

#include <stb/stb_image.h>  // implementation in libstb
#include "support/temp_dir.hpp"

#include "tinyformer/io/heatmap_png.hpp"

using namespace tf;
namespace fs = std::filesystem;

namespace {

std::uint32_t big_endian_u32(const std::string& b, std::size_t at) {
  return (std::uint32_t(std::uint8_t(b[at])) << 24) | (std::uint32_t(std::uint8_t(b[at + 1])) << 16) |
         (std::uint32_t(std::uint8_t(b[at + 2])) << 8) | std::uint32_t(std::uint8_t(b[at + 3]));
}

// Attention-like weights [L,H,T,T]: causal rows, uniform over the visible keys.
Array<float> causal_uniform(std::size_t L, std::size_t H, std::size_t T) {
  Array<float> w = Array<float>::from_shape({L, H, T, T});
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t q = 0; q < T; ++q)
        for (std::size_t k = 0; k < T; ++k) w(l, h, q, k) = k <= q ? 1.f / static_cast<float>(q + 1) : 0.f;
  return w;
}

std::vector<std::string> labels(std::size_t T) {
  const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "tokenize", " "};  // longest: 8 characters
  std::vector<std::string> out;
  for (std::size_t t = 0; t < T; ++t) out.push_back(words[t % 8]);
  return out;
}

}  // namespace

TEST_CASE("io: attention grid PNG has the PNG signature and the IHDR size of the documented layout", "[io]") {
  test::TempDir dir;
  const std::size_t L = 2, H = 4, T = 32;
  const fs::path path = dir.path() / "grid.png";
  io::write_attention_grid_png(path.string(), causal_uniform(L, H, T), labels(T), "attention");

  // The layout of heatmap_png.hpp by hand: s = 256/32 = 8 px per token, labels drawn, longest label 8 characters.
  const int s = 8, band = 6 * 8 + 4, heat = s * 32;
  const int block_w = band + heat, block_h = 14 + band + heat;
  const int width = 2 * 12 + 4 * block_w + 3 * 16, height = 2 * 12 + 32 + 2 * block_h + 16;
  REQUIRE(width == 1304);
  REQUIRE(height == 716);
  CHECK(width < 1600);

  const std::string png = test::read_bytes(path.string());
  REQUIRE(png.size() > 33);
  CHECK(png.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  CHECK(big_endian_u32(png, 8) == 13u);  // IHDR data length
  CHECK(png.substr(12, 4) == "IHDR");
  CHECK(big_endian_u32(png, 16) == static_cast<std::uint32_t>(width));
  CHECK(big_endian_u32(png, 20) == static_cast<std::uint32_t>(height));
  CHECK(int(std::uint8_t(png[24])) == 8);  // bit depth
  CHECK(int(std::uint8_t(png[25])) == 2);  // color type RGB
  CHECK(png.substr(png.size() - 8, 4) == "IEND");

  // Without labels the label band goes away; T = 64 without labels keeps 4 px per token, with labels it grows to 8.
  const auto bare = io::render_attention_grid(causal_uniform(L, H, T), {}, "attention");
  CHECK(bare.width == 2 * 12 + 4 * heat + 3 * 16);
  CHECK(bare.height == 2 * 12 + 32 + 2 * (14 + heat) + 16);
  const auto t64_bare = io::render_attention_grid(causal_uniform(1, 1, 64), {}, "attention");
  CHECK(t64_bare.pixels_per_token == 4);
  CHECK(t64_bare.width == std::max(2 * 12 + 256, 2 * 12 + 12 * 9 + 16 + 120));
  const auto t64 = io::render_attention_grid(causal_uniform(1, 1, 64), labels(64), "attention");
  CHECK(t64.pixels_per_token == 8);
  CHECK(t64.labels);
  CHECK(t64.label_every == 1);
  CHECK(t64.width == 2 * 12 + band + 8 * 64);
}

TEST_CASE("io: attention grid PNG decodes to the rendered pixels, weight 0 white and weight 1 dark blue", "[io]") {
  test::TempDir dir;
  const std::size_t L = 2, H = 3, T = 16;
  Array<float> w = causal_uniform(L, H, T);
  // layer 1, head 2, query 5: all weight on key 3; key 4 then has weight 0 (it is visible, so not masked).
  for (std::size_t k = 0; k < T; ++k) w(1, 2, 5, k) = 0.f;
  w(1, 2, 5, 3) = 1.f;
  const auto tokens = labels(T);
  const fs::path path = dir.path() / "grid.png";
  io::write_attention_grid_png(path.string(), w, tokens, "decode me");
  const io::AttentionGridImage img = io::render_attention_grid(w, tokens, "decode me");
  REQUIRE(img.pixels_per_token == 16);  // 256 / 16
  REQUIRE(img.labels);

  int width = 0, height = 0, channels = 0;
  unsigned char* pixels = stbi_load(path.string().c_str(), &width, &height, &channels, 3);
  INFO("stbi_failure_reason: " << (pixels ? "" : stbi_failure_reason()));
  REQUIRE(pixels != nullptr);
  const std::vector<std::uint8_t> decoded(pixels, pixels + static_cast<std::size_t>(width) * height * 3);
  stbi_image_free(pixels);
  REQUIRE(width == img.width);
  REQUIRE(height == img.height);
  CHECK(decoded == img.rgb);  // PNG is lossless

  // Cell (query 5, key k) of layer 1, head 2 is at x = column_x[2] + k*s, y = row_y[1] + 5*s (header layout).
  const int s = img.pixels_per_token;
  const int band = 6 * 8 + 4;
  const int block_w = band + 16 * s, block_h = 14 + band + 16 * s;
  CHECK(img.cell_x(2, 3) == 12 + 2 * (block_w + 16) + band + 3 * s);
  CHECK(img.cell_y(1, 5) == 12 + 32 + 1 * (block_h + 16) + 14 + band + 5 * s);
  auto decoded_at = [&](int x, int y) {
    const std::size_t i = (static_cast<std::size_t>(y) * width + x) * 3;
    return std::array<int, 3>{decoded[i], decoded[i + 1], decoded[i + 2]};
  };
  for (const int dx : {0, s / 2, s - 1})
    for (const int dy : {0, s / 2, s - 1}) {
      const auto one = decoded_at(img.cell_x(2, 3) + dx, img.cell_y(1, 5) + dy);
      INFO("weight 1 pixel: " << one[0] << "," << one[1] << "," << one[2]);
      CHECK(one[0] < 40);
      CHECK(one[1] < 80);
      CHECK(one[2] > 90);
      CHECK(one[2] > one[0] + 60);
      const auto zero = decoded_at(img.cell_x(2, 4) + dx, img.cell_y(1, 5) + dy);
      INFO("weight 0 pixel: " << zero[0] << "," << zero[1] << "," << zero[2]);
      CHECK(std::min({zero[0], zero[1], zero[2]}) >= 250);
    }
  // Query 0 puts weight 1 on key 0 in every causal map; query 0, key 1 is masked (0).
  const auto first = decoded_at(img.cell_x(0, 0) + s / 2, img.cell_y(0, 0) + s / 2);
  CHECK(first[2] > first[0] + 60);
}

TEST_CASE("io: attention grid draws token labels only where they fit", "[io]") {
  const std::size_t T = 32;
  const auto w = causal_uniform(1, 2, T);
  auto dark_pixels = [](const io::AttentionGridImage& img, int x0, int y0, int x1, int y1) {
    int n = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const auto p = img.pixel(x, y);
        if (p[0] < 128 && p[1] < 128 && p[2] < 128) ++n;
      }
    return n;
  };
  const auto with = io::render_attention_grid(w, labels(T), "t");
  REQUIRE(with.labels);
  const int band = 6 * 8 + 4, heat = 8 * static_cast<int>(T);
  // left of head 1's heatmap (query labels) and above it (vertical key labels)
  const int x0 = with.column_x[1], y0 = with.row_y[0];
  CHECK(dark_pixels(with, x0 - band, y0, x0 - 2, y0 + heat) > 200);
  CHECK(dark_pixels(with, x0, y0 - band, x0 + heat, y0 - 2) > 200);
  // the same places hold no text without labels (the band is gone: that area is the gap and caption line)
  const auto without = io::render_attention_grid(w, {}, "t");
  REQUIRE_FALSE(without.labels);
  CHECK(without.column_x[1] == with.column_x[1] - 2 * band);
  CHECK(dark_pixels(without, without.column_x[1] - 14, without.row_y[0], without.column_x[1] - 2,
                    without.row_y[0] + heat) == 0);
}

TEST_CASE("io: attention_color runs from white at 0 to dark blue at 1, darker as the weight grows", "[io]") {
  CHECK((io::attention_color(0.f) == std::array<std::uint8_t, 3>{255, 255, 255}));
  CHECK((io::attention_color(1.f) == std::array<std::uint8_t, 3>{8, 48, 107}));
  CHECK((io::attention_color(-0.5f) == io::attention_color(0.f)));
  CHECK((io::attention_color(3.f) == io::attention_color(1.f)));
  CHECK((io::attention_color(std::nanf("")) == std::array<std::uint8_t, 3>{220, 40, 40}));
  double previous = 1e9;
  for (int i = 0; i <= 100; ++i) {
    const auto c = io::attention_color(static_cast<float>(i) / 100.f);
    const double luma = 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];
    INFO("weight " << i / 100.0);
    CHECK(luma < previous);
    CHECK(c[2] >= c[0]);  // stays blue
    previous = luma;
  }
}

TEST_CASE("io: attention grid rejects bad shapes and label counts, and names the path on I/O errors", "[io]") {
  using Catch::Matchers::Contains;
  const Array<float> rank3 = Array<float>::from_shape({2, 4, 4});
  CHECK_THROWS_WITH(io::render_attention_grid(rank3, {}, "t"), Contains("[2, 4, 4]") && Contains("[L,H,T,T]"));
  CHECK_THROWS_AS(io::render_attention_grid(rank3, {}, "t"), std::invalid_argument);
  const Array<float> not_square = Array<float>::from_shape({1, 1, 4, 5});
  CHECK_THROWS_AS(io::render_attention_grid(not_square, {}, "t"), std::invalid_argument);
  const Array<float> empty = Array<float>::from_shape({1, 0, 4, 4});
  CHECK_THROWS_AS(io::render_attention_grid(empty, {}, "t"), std::invalid_argument);
  CHECK_THROWS_WITH(io::render_attention_grid(causal_uniform(1, 1, 4), {"a", "b", "c"}, "t"),
                    Contains("3 token labels") && Contains("give 4 labels"));
  CHECK_THROWS_WITH(io::render_attention_grid(causal_uniform(600, 1, 32), {}, "t"), Contains("16384"));  // at 1 px
  const std::string missing = "/nonexistent-tinyformer-dir/grid.png";
  CHECK_THROWS_AS(io::write_attention_grid_png(missing, causal_uniform(1, 1, 4), {}, "t"), std::runtime_error);
  CHECK_THROWS_WITH(io::write_attention_grid_png(missing, causal_uniform(1, 1, 4), {}, "t"), Contains(missing));
}

namespace {

// Pixels darker than 128 in every channel (text) in [x0, x1) x [y0, y1).
int dark_in(const io::AttentionGridImage& img, int x0, int y0, int x1, int y1) {
  int n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      const auto p = img.pixel(x, y);
      if (p[0] < 128 && p[1] < 128 && p[2] < 128) ++n;
    }
  return n;
}

bool is_orange(const std::array<std::uint8_t, 3>& p) { return p[0] == 255 && p[1] == 127 && p[2] == 14; }

// Every k-th token must have text in its query-label slot (left of its row) and in its key-label slot (above its
// column); the slot is the k*s pixels centred on the token, as in the header's layout.
void check_labels_at_every_kth_token(const io::AttentionGridImage& img, std::size_t T) {
  const int s = img.pixels_per_token, k = img.label_every;
  const int x0 = img.column_x[0], y0 = img.row_y[0];
  const int band = 6 * 8 + 4;
  int labelled = 0;
  for (std::size_t t = 0; t < T; t += static_cast<std::size_t>(k)) {
    const int at = static_cast<int>(t) * s, lo = at + s / 2 - k * s / 2, hi = lo + k * s;
    INFO("token " << t << " of " << T << ", " << s << " px per token, every " << k << "-th labelled");
    CHECK(dark_in(img, x0 - band, y0 + std::max(lo, 0), x0 - 3, y0 + hi) >= 4);  // '_' (a space) has 4 pixels
    CHECK(dark_in(img, x0 + std::max(lo, 0), y0 - band, x0 + hi, y0 - 3) >= 4);
    ++labelled;
  }
  CHECK(labelled == static_cast<int>((T + static_cast<std::size_t>(k) - 1) / static_cast<std::size_t>(k)));
}

}  // namespace

TEST_CASE("io: attention grid labels every token at T = 36 by growing to 8 px per token", "[io]") {
  const std::size_t T = 36;
  const auto img = io::render_attention_grid(causal_uniform(2, 2, T), labels(T), "t36");
  REQUIRE(img.labels);
  CHECK(img.pixels_per_token == 8);  // 256 / 36 = 7 would have been too small for a label per row
  CHECK(img.label_every == 1);
  const int band = 6 * 8 + 4, block_w = band + 8 * 36, block_h = 14 + band + 8 * 36;
  CHECK(img.width == 2 * 12 + 2 * block_w + 16);
  CHECK(img.height == 2 * 12 + 32 + 2 * block_h + 16);
  check_labels_at_every_kth_token(img, T);
}

TEST_CASE("io: attention grid labels every second token at T = 256 with 4 px per token and ticks", "[io]") {
  const std::size_t T = 256;
  const auto img = io::render_attention_grid(causal_uniform(1, 2, T), labels(T), "t256");
  REQUIRE(img.labels);
  CHECK(img.pixels_per_token == 4);  // 1024 / 256: a heatmap grows to at most 1024 px
  CHECK(img.label_every == 2);
  CHECK(img.width == 2 * 12 + 2 * (52 + 1024) + 16);
  CHECK(img.height <= 2 * 12 + 32 + 14 + 52 + 1024);
  check_labels_at_every_kth_token(img, T);
  // the tick of labelled query 2 sits in the gap at its row's centre; unlabelled query 3 has none
  const int x0 = img.column_x[1], y0 = img.row_y[0];
  CHECK(dark_in(img, x0 - 3, y0 + 2 * 4 + 2, x0 - 1, y0 + 2 * 4 + 3) == 2);
  CHECK(dark_in(img, x0 - 3, y0 + 3 * 4, x0 - 1, y0 + 4 * 4) == 0);
}

TEST_CASE("io: attention grid with many heads lowers the pixels per token to stay within 16384 px", "[io]") {
  const auto img = io::render_attention_grid(causal_uniform(1, 16, 128), labels(128), "many heads");
  CHECK(img.width <= 16384);
  CHECK(img.pixels_per_token == 7);  // 8 would need 24 + 16*(52 + 1024) + 15*16 = 17480 px
  CHECK(img.label_every == 2);
  CHECK(img.width == 2 * 12 + 16 * (52 + 7 * 128) + 15 * 16);
  // without labels or outlines the same weights keep the plain 2 px per token
  CHECK(io::render_attention_grid(causal_uniform(1, 16, 128), {}, "many heads").pixels_per_token == 2);
}

TEST_CASE("io: attention grid shows special characters in labels as visible escapes", "[io]") {
  const auto w = causal_uniform(1, 1, 4);
  auto same_image = [&](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    return io::render_attention_grid(w, a, "t").rgb == io::render_attention_grid(w, b, "t").rgb;
  };
  CHECK(same_image({"\n", "\t", "\x01", "\x7f"}, {"\\n", "\\t", "\\x01", "\\x7F"}));
  CHECK(same_image({"d\xC3\xA9j", "\xA9", "abcdefghij", "x"}, {"d?j", "?", "abcdefg~", "x"}));
  // A space is an open box (9 pixels in the cap height), unlike '_' (4 pixels below it) or an unknown character.
  CHECK_FALSE(same_image({" ", "b", "c", "d"}, {"_", "b", "c", "d"}));
  CHECK_FALSE(same_image({" ", "b", "c", "d"}, {"?", "b", "c", "d"}));
  const auto space = io::render_attention_grid(w, {" ", "b", "c", "_"}, "t");
  const int x0 = space.column_x[0], y0 = space.row_y[0], s = space.pixels_per_token;
  const int top = y0 + (s - 7) / 2;                                       // glyph top of query 0's label
  CHECK(dark_in(space, x0 - 10, y0, x0 - 3, top + 4) == 0);               // glyph rows 0-3: empty
  CHECK(dark_in(space, x0 - 10, top + 4, x0 - 3, top + 7) == 2 + 2 + 5);  // two sides and the bottom (rows 4-6)
  CHECK(dark_in(space, x0 - 10, y0, x0 - 3, y0 + s) == 9);
  CHECK(dark_in(space, x0 - 10, y0 + 3 * s, x0 - 3, y0 + 4 * s) == 4);  // query 3's '_' (row 7)
}

TEST_CASE("io: attention grid outlines each query's expected key in orange on every head", "[io]") {
  const std::size_t T = 12;
  std::vector<long> expected(T, -1);
  expected[6] = 2, expected[7] = 1, expected[11] = 11;
  const auto img = io::render_attention_grid(causal_uniform(2, 3, T), {}, "outlined", expected);
  REQUIRE(img.outlines);
  const int s = img.pixels_per_token;
  REQUIRE(s == 21);  // 256 / 12 (already more than 8)
  const int t = std::max(1, s / 8);
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t h = 0; h < 3; ++h)
      for (std::size_t q = 0; q < T; ++q)
        for (std::size_t k = 0; k < T; ++k) {
          const int x = img.cell_x(h, k), y = img.cell_y(l, q);
          const bool want = expected[q] == static_cast<long>(k);
          INFO("layer " << l << " head " << h << " query " << q << " key " << k);
          CHECK(is_orange(img.pixel(x, y)) == want);                  // top-left corner
          CHECK(is_orange(img.pixel(x + s - 1, y + s / 2)) == want);  // right edge
          CHECK(is_orange(img.pixel(x + s / 2, y + s - t)) == want);  // bottom edge
          CHECK_FALSE(is_orange(img.pixel(x + s / 2, y + s / 2)));    // the weight stays visible inside
        }
  // Without expected keys nothing is orange; the legend in the title line says what orange means.
  const auto plain = io::render_attention_grid(causal_uniform(2, 3, T), {}, "outlined");
  CHECK_FALSE(plain.outlines);
  long orange_plain = 0, orange_title = 0;
  for (int y = 0; y < plain.height; ++y)
    for (int x = 0; x < plain.width; ++x) orange_plain += is_orange(plain.pixel(x, y));
  for (int y = 0; y < 12 + 32; ++y)
    for (int x = 0; x < img.width; ++x) orange_title += is_orange(img.pixel(x, y));
  CHECK(orange_plain == 0);
  CHECK(orange_title == 10 * 10 - 6 * 6);  // the legend's 10 px box, 2 px wide
  CHECK(img.width == std::max(2 * 12 + 3 * 12 * 21 + 2 * 16, 2 * 12 + 12 * 8 + 16 + 120 + 16 + 86));
}

TEST_CASE("io: attention grid refuses expected keys that are not one per query or out of range", "[io]") {
  using Catch::Matchers::Contains;
  const auto w = causal_uniform(1, 1, 4);
  CHECK_THROWS_WITH(io::render_attention_grid(w, {}, "t", {0, 1}), Contains("2 expected keys for 4 tokens"));
  CHECK_THROWS_WITH(io::render_attention_grid(w, {}, "t", {-1, -1, 4, -1}), Contains("expected key 4 of query 2"));
  CHECK_THROWS_AS(io::render_attention_grid(w, {}, "t", {-2, -1, -1, -1}), std::invalid_argument);
}

TEST_CASE("io: attention grid with many heads goes below 256 / T pixels per token when it must", "[io]") {
  // 70 heads of 32 tokens with 16 px gaps: 2 * 12 + 70 * 32 s + 69 * 16 is 19048 px wide at s = 8 (256 / 32), 16808
  // at 7, 14568 at 6
  const auto img = io::render_attention_grid(causal_uniform(2, 70, 32), {}, "t");
  CHECK(img.pixels_per_token == 6);
  CHECK(img.width <= 16384);
}

TEST_CASE("io: an attention grid PNG too large even at 1 px per token is drawn from f x f token means", "[io]") {
  using Catch::Matchers::Contains;
  test::TempDir dir;
  // 40 layers of 420 tokens: 18040 px high at 1 px per token; averaged over 2 x 2 tokens, 210 a side, it fits.
  const std::size_t L = 40, T = 420, P = 210;
  const Array<float> w = causal_uniform(L, 1, T);
  CHECK_THROWS_WITH(io::render_attention_grid(w, {}, "t"), Contains("16384"));
  const fs::path path = dir.path() / "pooled.png";
  io::write_attention_grid_png(path.string(), w, labels(T), "big", std::vector<long>(T, 0));
  Array<float> means = Array<float>::from_shape({L, 1, P, P});
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t i = 0; i < P; ++i)
      for (std::size_t j = 0; j < P; ++j)
        means(l, 0, i, j) = static_cast<float>((static_cast<double>(w(l, 0, 2 * i, 2 * j)) + w(l, 0, 2 * i, 2 * j + 1) +
                                                w(l, 0, 2 * i + 1, 2 * j) + w(l, 0, 2 * i + 1, 2 * j + 1)) /
                                               4.0);
  const auto expected = io::render_attention_grid(means, {}, "big (a cell: the mean of 2 x 2 tokens)");
  CHECK(expected.height <= 16384);
  CHECK(test::read_bytes(path.string()) == io::encode_png_rgb(expected.width, expected.height, expected.rgb));
  // a long title is cut to leave the note whole: 100 characters in all, the title's part ending in ~
  const std::string title(150, 'x');
  io::write_attention_grid_png(path.string(), w, labels(T), title, {});
  const auto cut = io::render_attention_grid(means, {}, std::string(64, 'x') + "~ (a cell: the mean of 2 x 2 tokens)");
  CHECK(test::read_bytes(path.string()) == io::encode_png_rgb(cut.width, cut.height, cut.rgb));
  // a grid of layers too tall even at one token a map is still refused
  CHECK_THROWS_WITH(io::write_attention_grid_png(path.string(), causal_uniform(600, 1, 32), {}, "t"),
                    Contains("16384"));
}
