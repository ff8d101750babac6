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

#include "support/temp_dir.hpp"
#include <stb/stb_image.h>  // implementation in libstb

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

  // Without labels the label band goes away; with T = 64 (4 px per token) there is no room for labels.
  const auto bare = io::render_attention_grid(causal_uniform(L, H, T), {}, "attention");
  CHECK(bare.width == 2 * 12 + 4 * heat + 3 * 16);
  CHECK(bare.height == 2 * 12 + 32 + 2 * (14 + heat) + 16);
  const auto t64 = io::render_attention_grid(causal_uniform(1, 1, 64), labels(64), "attention");
  CHECK(t64.pixels_per_token == 4);
  CHECK_FALSE(t64.labels);
  CHECK(t64.width == std::max(2 * 12 + 256, 2 * 12 + 12 * 9 + 16 + 120));
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
  CHECK_THROWS_WITH(io::render_attention_grid(causal_uniform(70, 70, 32), {}, "t"), Contains("16384"));
  const std::string missing = "/nonexistent-tinyformer-dir/grid.png";
  CHECK_THROWS_AS(io::write_attention_grid_png(missing, causal_uniform(1, 1, 4), {}, "t"), std::runtime_error);
  CHECK_THROWS_WITH(io::write_attention_grid_png(missing, causal_uniform(1, 1, 4), {}, "t"), Contains(missing));
}
