#pragma once
// Attention weights as a PNG: one image holding a grid of layers (rows) x heads (columns), each grid cell a
// T x T heatmap (row = query, column = key) from white (weight 0) to dark blue (weight 1), captioned "L0 H1",
// with the token labels along both axes (every k-th one when rows are dense) and optionally the expected key of
// each query outlined. Rendering is our own code (text from
// stb_easy_font); the PNG encoding is stb_image_write (Debian's libstb: the program links -lstb).
//
// Layout, in pixels (all integers; T tokens, L layers, H heads):
//   plain    = clamp(256 / T, 1, 24)            (integer division)
//   s        = pixels per token; a heatmap is s*T wide and high. Without labels and outlines s = plain. With token
//              labels or expected-cell outlines the maps grow so that labels have room: s starts at
//              max(plain, min(8, 1024 / T)) (8 px per token, but a heatmap no larger than 1024 px) and is lowered
//              towards plain until the image fits 16384 px on a side; with many layers or heads s goes on below
//              plain, down to 1
//   k        = labels ? ceil(8 / s) : 0         every k-th token is labelled (k = 1 from 8 px per token on; T = 256
//              gives s = 4 and k = 2); with k > 1 a 2 px tick next to the heatmap marks each labelled row and column
//   band     = labels ? 6 * min(longest label, 8) + 4 : 0   room for the query labels left of a heatmap and the
//                                                          (vertical) key labels above it; 6 px per character
//   block    = band + s*T wide, 14 (caption) + band + s*T high
//   width    = max(2*12 + H*block_w + (H-1)*16, 2*12 + 12*title characters (at most 100) + 16 + 120 [+ 16 + 86])
//              (the title line: the title at twice the font size, a 120 px color bar, and with outlines a legend)
//   height   = 2*12 + 32 (title line) + L*block_h + (L-1)*16
// The heatmap of layer l, head h starts at x = 12 + h*(block_w + 16) + band, y = 12 + 32 + l*(block_h + 16) + 14 +
// band. So T=32, L=2, H=4 with labels of up to 8 characters gives 1304 x 716 with 8 px per token; T=36 gets 8 px per
// token (instead of 7) and every label.
//
// Expected cells: given one key per query (-1 for none, as data::DataSource::expected_attention returns), the cell
// (q, key) of every head's heatmap gets an orange (255, 127, 14) outline max(1, s/8) px wide, drawn inside the cell.
//
// Weights outside [0, 1] are clamped; NaN cells are drawn red so that a broken softmax is visible. Text shows
// printable ASCII: in a label a space is drawn as an open box (U+2423, so that it differs from '_'), a newline as
// "\n", a tab as "\t", another control byte as "\xNN"; a UTF-8 character (or a stray byte >= 0x80) becomes '?';
// labels longer than 8 characters are cut to 7 characters and '~' (titles to 100).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::io {

// Sizes of attention weights [L,H,T,T].
struct AttentionDims {
  std::size_t layers = 0;  // L
  std::size_t heads = 0;   // H
  std::size_t tokens = 0;  // T
};

// Checks that `weights` is [L,H,T,T] with L, H, T > 0 and that `n_labels` is 0 or T. Throws std::invalid_argument
// starting with `where` (e.g. "write_attention_grid_png"), naming the offending shape or count and what is valid.
AttentionDims check_attention_weights(const Array<float>& weights, std::size_t n_labels, const std::string& where);

// The colormap shared by the PNG and the HTML report: white (weight 0) through light blues to dark blue
// (weight 1), ColorBrewer "Blues"-like, monotonically darker. Clamps to [0, 1]; NaN maps to red (220, 40, 40).
std::array<std::uint8_t, 3> attention_color(float weight);

// A rendered RGB image (3 bytes per pixel, rows top to bottom) and where each heatmap is in it.
struct AttentionGridImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  // width * height * 3
  AttentionDims dims;
  int pixels_per_token = 0;   // s
  bool labels = false;        // token labels were drawn
  int label_every = 0;        // k: every k-th token is labelled (0 without labels)
  bool outlines = false;      // expected cells were outlined
  std::vector<int> column_x;  // [H] left edge of the heatmaps of head h
  std::vector<int> row_y;     // [L] top edge of the heatmaps of layer l

  // Top-left pixel of the heatmap cell (query q, key k) of layer l, head h; the cell is s x s pixels.
  int cell_x(std::size_t head, std::size_t key) const;
  int cell_y(std::size_t layer, std::size_t query) const;
  std::array<std::uint8_t, 3> pixel(int x, int y) const;
};

// Renders weights [L,H,T,T] with `tokens` (T labels, or empty), `title` and optionally `expected` (T keys, one per
// query, -1 for none; empty: no outlines) into an image (layout above). Throws std::invalid_argument for a bad
// shape, label count or expected key (not in [-1, T)), or when the image would exceed 16384 pixels on a side.
AttentionGridImage render_attention_grid(const Array<float>& weights, const std::vector<std::string>& tokens,
                                         const std::string& title, const std::vector<long>& expected = {});

// Encodes an RGB image as PNG bytes (stb_image_write). Throws std::runtime_error if encoding fails.
std::string encode_png_rgb(int width, int height, const std::vector<std::uint8_t>& rgb);

// render_attention_grid + encode_png_rgb, written atomically to `path` (io/atomic_file.hpp): a reader sees the
// old file or the complete new one. Maps too large for 16384 pixels a side even at one pixel a token (8 layers x 8
// heads of 2048 tokens) are drawn averaged over f x f tokens, the smallest f that fits, without labels or outlines
// and with "(a cell: the mean of f x f tokens)" after the title. Throws std::invalid_argument (inputs) or
// std::runtime_error (I/O, naming path).
void write_attention_grid_png(const std::string& path, const Array<float>& weights,
                              const std::vector<std::string>& tokens, const std::string& title,
                              const std::vector<long>& expected = {});

}  // namespace tf::io
