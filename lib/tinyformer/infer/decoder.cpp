// The decoding engine: infer/decoder.hpp says what it computes. Per layer of one token (x [C] the residual stream):
//   h = ln_1(x); qkv = c_attn h [(H + 2 Hkv) D]; q, k turned by position (rope); k, v -> the cache
//   a_h = softmax(scale q_h K^T) V per head over its window; x += c_proj a
//   h = ln_2(x); x += c_proj(act(c_fc h))      (act: gelu, or swiglu of [gate; up])
// then logits = head(ln_f(x)). The products are kernels::matvec / matvec_q8 on packed weights, their rows shared
// out over the thread pool; several tokens at once take tf::gemm on the model's own weights.
#include "tinyformer/infer/decoder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <xsimd/memory/xsimd_aligned_allocator.hpp>

#include "tinyformer/nn/parameter_shapes.hpp"
#include "tinyformer/ops/kernels/attend.hpp"
#include "tinyformer/ops/kernels/gelu.hpp"
#include "tinyformer/ops/kernels/matvec.hpp"
#include "tinyformer/ops/kernels/norms.hpp"
#include "tinyformer/ops/kernels/rotary.hpp"
#include "tinyformer/ops/kernels/silu.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/gemm.hpp"
#include "tinyformer/tensor/huge_pages.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf::infer {

const char* name(DecoderWeights w) { return w == DecoderWeights::q8 ? "q8" : "f32"; }

namespace {

constexpr std::size_t kBlock = 64;            // tokens per GEMM block (a prompt, a recomputed window)
constexpr std::size_t kRowPiece = 16;         // rows of a product are shared out over the threads in multiples of this
constexpr std::size_t kPieceBytes = 1 << 15;  // at least this many weight bytes per thread's piece
constexpr std::size_t kPiecesPerThread = 4;   // a product's pieces per thread (parallel_for_balanced)
constexpr float kNormEpsF = static_cast<float>(kNormEps);  // ops.hpp: nn::Norm's
constexpr double kRopeBase = 10000.0;                      // as nn::CausalSelfAttention
using kernels::kMatvecAlign;
using kernels::kQ8Group;

std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

// The packed weights: one block of huge pages (tensor/huge_pages.hpp), as every token streams through all of it.
class Arena {
 public:
  explicit Arena(std::size_t bytes) : buffer_(bytes) {}
  // `count` values more, 64-byte aligned
  template <class T>
  T* take(std::size_t count) {
    used_ = round_up(used_, 64);
    T* p = reinterpret_cast<T*>(buffer_.data() + used_);
    used_ += count * sizeof(T);
    if (used_ > buffer_.size()) throw std::logic_error("Decoder: the weight arena is too small");
    return p;
  }

 private:
  HugePageBuffer buffer_;
  std::size_t used_ = 0;
};

// One weight for decoding: y = W x, W [rows, cols] (PyTorch's layout), packed from the model's tensor `full`.
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::size_t ld = 0;              // f32: floats per packed row (cols rounded up to kMatvecAlign); q8: groups
  const float* f = nullptr;        // f32: [rows, ld], zeros past cols
  const std::int8_t* q = nullptr;  // q8: [rows, ld * kQ8Group]
  const float* s = nullptr;        // q8: [rows, ld]
  const float* bias = nullptr;     // [rows], or null
  const float* full = nullptr;     // the model's [rows, cols], for GEMM

  std::size_t packed_bytes(DecoderWeights w) const {
    return w == DecoderWeights::q8 ? rows * ld * (kQ8Group + sizeof(float)) : rows * ld * sizeof(float);
  }
};

struct Layer {
  const float *ln_1_w = nullptr, *ln_1_b = nullptr, *ln_2_w = nullptr, *ln_2_b = nullptr;
  Matrix c_attn, attn_proj, c_fc, mlp_proj;
};

using Buffer = std::vector<float, xsimd::aligned_allocator<float, 64>>;

// A buffer of n floats padded to whole SIMD rows, zero-filled: the kernels read the padding, which stays zero.
Buffer padded(std::size_t n) { return Buffer(round_up(std::max<std::size_t>(n, 1), kMatvecAlign), 0.f); }

}  // namespace

struct Decoder::Impl {
  DecoderOptions options;
  config::ModelConfig cfg;
  nn::NamedParams<float> params;  // the model's weights, kept alive for the GEMMs
  std::size_t V = 0, T = 0, C = 0, H = 0, Hkv = 0, D = 0, L = 0, F = 0, qkv_width = 0, fc_width = 0;
  bool rope = false, layernorm = false, swiglu = false;
  std::size_t cap = 0;  // cached positions per head: rope T + kBlock (a ring), learned T

  std::unique_ptr<Arena> arena;
  std::vector<Layer> layers;
  Matrix head;
  const float *wte = nullptr, *wpe = nullptr, *ln_f_w = nullptr, *ln_f_b = nullptr;
  std::vector<float> zeros;   // the shift of a layer norm without bias
  std::vector<double> theta;  // rope: kRopeBase^(-2i/D), [D/2]

  // what the cache holds: tokens_[0..n) were computed; learned: positions from w0 on are cached (slots 0..)
  std::vector<Index> tokens;
  std::size_t w0 = 0;
  bool logits_valid = false;          // logits belong to `tokens`
  std::vector<float> kcache, vcache;  // keys transposed [L, Hkv, D, cap], values [L, Hkv, cap, D]

  // one token
  Buffer x, h, qkv, att, ff, act;
  std::vector<float> logits, weights, rope_cos, rope_sin;
  std::vector<std::int8_t> xq;
  std::vector<float> xs;
  // a block of tokens
  std::vector<float> X, Hn, QKV, A, FF, ACT;

  Impl(const nn::GPT<float>& model, const DecoderOptions& o);
  void pack_weights();
  void make_buffers();
  const float* param(const std::string& name) const;
  void pack(Matrix& m, const std::string& weight, const std::string& bias);
  std::size_t window_start(std::size_t n) const;
  const std::vector<float>& next_logits(const std::vector<Index>& ids);
  void run(const std::vector<Index>& ids, std::size_t from, std::size_t to);
  void step(Index token, std::size_t p);
  void block(const Index* tokens, std::size_t n, std::size_t p0);
  void compute_logits(const float* x_last);

  std::size_t slot(std::size_t p) const { return rope ? p % cap : p - w0; }
  float* keys(std::size_t l, std::size_t g) { return kcache.data() + (l * Hkv + g) * D * cap; }    // [D, cap]
  float* values(std::size_t l, std::size_t g) { return vcache.data() + (l * Hkv + g) * cap * D; }  // [cap, D]
  void norm(const float* w, const float* b, const float* in, float* out, std::size_t rows) const;
  void matvec(const Matrix& m, const float* in, float* out, bool accumulate);
  void linear_rows(const Matrix& m, std::size_t n, const float* in, float* out, bool accumulate) const;
  void angles(std::size_t p);
  void turn_heads(float* row);
  void store_kv(std::size_t l, const float* row, std::size_t p);
  void attend(std::size_t l, const float* row, std::size_t p, float* out, float* w);
};

Decoder::Impl::Impl(const nn::GPT<float>& model, const DecoderOptions& o) : options(o), cfg(model.config()) {
  params = model.named_parameters();
  V = *cfg.vocab_size;
  T = *cfg.context;
  C = cfg.d_model;
  H = cfg.n_head;
  Hkv = cfg.n_kv_head == 0 ? H : cfg.n_kv_head;
  D = C / H;
  L = cfg.n_layer;
  F = nn::mlp_hidden(cfg);
  qkv_width = nn::qkv_width(cfg);
  fc_width = nn::mlp_fc_width(cfg);
  rope = cfg.position == config::Position::rope;
  layernorm = cfg.norm == config::Norm::layernorm;
  swiglu = cfg.mlp == config::Mlp::swiglu;
  if (options.window_shift == 0) options.window_shift = std::max<std::size_t>(1, T / 4);
  if (options.window_shift > T)
    throw std::invalid_argument(
        fmt::format("Decoder: window_shift {} is more than the context of {} positions", options.window_shift, T));
  cap = rope ? T + kBlock : T;
  pack_weights();
  make_buffers();
}

void Decoder::Impl::pack_weights() {
  wte = param("transformer.wte.weight");
  if (!rope) wpe = param("transformer.wpe.weight");
  ln_f_w = param("transformer.ln_f.weight");
  zeros.assign(C, 0.f);
  const bool shifted = layernorm && cfg.bias;  // a layer norm with its bias
  ln_f_b = shifted ? param("transformer.ln_f.bias") : zeros.data();
  layers.resize(L);
  const auto block_name = [](std::size_t l, const char* rest) { return fmt::format("transformer.h.{}.{}", l, rest); };
  // first the shapes, so that the arena is allocated once
  for (std::size_t l = 0; l < L; ++l) {
    Layer& y = layers[l];
    y.ln_1_w = param(block_name(l, "ln_1.weight"));
    y.ln_2_w = param(block_name(l, "ln_2.weight"));
    y.ln_1_b = shifted ? param(block_name(l, "ln_1.bias")) : zeros.data();
    y.ln_2_b = shifted ? param(block_name(l, "ln_2.bias")) : zeros.data();
    y.c_attn.rows = qkv_width, y.c_attn.cols = C;
    y.attn_proj.rows = C, y.attn_proj.cols = C;
    y.c_fc.rows = fc_width, y.c_fc.cols = C;
    y.mlp_proj.rows = C, y.mlp_proj.cols = F;
  }
  head.rows = V, head.cols = C;
  std::size_t bytes = 0;
  const bool q8 = options.weights == DecoderWeights::q8;
  auto plan = [&](Matrix& m) {
    m.ld = q8 ? (m.cols + kQ8Group - 1) / kQ8Group : round_up(m.cols, kMatvecAlign);
    bytes += m.packed_bytes(options.weights) + std::size_t{128};  // and the alignment of its two parts
  };
  for (Layer& y : layers)
    for (Matrix* m : {&y.c_attn, &y.attn_proj, &y.c_fc, &y.mlp_proj}) plan(*m);
  plan(head);
  arena = std::make_unique<Arena>(bytes);
  for (std::size_t l = 0; l < L; ++l) {
    Layer& y = layers[l];
    const bool b = cfg.bias;
    pack(y.c_attn, block_name(l, "attn.c_attn.weight"), b ? block_name(l, "attn.c_attn.bias") : "");
    pack(y.attn_proj, block_name(l, "attn.c_proj.weight"), b ? block_name(l, "attn.c_proj.bias") : "");
    pack(y.c_fc, block_name(l, "mlp.c_fc.weight"), b ? block_name(l, "mlp.c_fc.bias") : "");
    pack(y.mlp_proj, block_name(l, "mlp.c_proj.weight"), b ? block_name(l, "mlp.c_proj.bias") : "");
  }
  pack(head, cfg.tie_weights ? "transformer.wte.weight" : "lm_head.weight", "");
}

void Decoder::Impl::make_buffers() {
  for (std::size_t i = 0; i < D / 2; ++i)
    theta.push_back(std::pow(kRopeBase, -2.0 * static_cast<double>(i) / static_cast<double>(D)));
  tokens.reserve(4 * T + kBlock);  // grown (amortised) only by sequences longer than this
  kcache.assign(L * Hkv * cap * D, 0.f);
  vcache.assign(L * Hkv * cap * D, 0.f);
  x.assign(C, 0.f);
  h = padded(std::max(C, F));
  qkv = padded(qkv_width);
  att = padded(C);
  ff = padded(fc_width);
  act = padded(F);
  logits.assign(V, 0.f);
  weights.assign(H * cap, 0.f);
  rope_cos.assign(D / 2 + 1, 0.f);
  rope_sin.assign(D / 2 + 1, 0.f);
  const std::size_t widest = std::max({C, F, qkv_width});
  xq.assign(round_up(widest, kQ8Group) + 64, 0);
  xs.assign(widest / kQ8Group + 2, 0.f);
  X.assign(kBlock * C, 0.f);
  Hn.assign(kBlock * std::max(C, F), 0.f);
  QKV.assign(kBlock * qkv_width, 0.f);
  A.assign(kBlock * C, 0.f);
  FF.assign(kBlock * fc_width, 0.f);
  ACT.assign(kBlock * F, 0.f);
}

const float* Decoder::Impl::param(const std::string& name) const {
  for (const auto& [n, v] : params)
    if (n == name) return v.value().data();
  throw std::logic_error(fmt::format("Decoder: the model has no parameter {}", name));
}

void Decoder::Impl::pack(Matrix& m, const std::string& weight, const std::string& bias) {
  m.full = param(weight);
  m.bias = bias.empty() ? nullptr : param(bias);
  if (options.weights == DecoderWeights::q8) {
    std::int8_t* q = arena->take<std::int8_t>(m.rows * m.ld * kQ8Group);
    float* s = arena->take<float>(m.rows * m.ld);
    for (std::size_t r = 0; r < m.rows; ++r)
      kernels::quantize_q8<float>(m.cols, m.full + r * m.cols, q + r * m.ld * kQ8Group, s + r * m.ld);
    m.q = q;
    m.s = s;
  } else {
    float* f = arena->take<float>(m.rows * m.ld);
    for (std::size_t r = 0; r < m.rows; ++r) {
      std::copy_n(m.full + r * m.cols, m.cols, f + r * m.ld);
      std::fill(f + r * m.ld + m.cols, f + (r + 1) * m.ld, 0.f);
    }
    m.f = f;
  }
}

// learned positions: the first cached position of a sequence of n tokens (its last token is the newest query)
std::size_t Decoder::Impl::window_start(std::size_t n) const {
  if (rope || n <= T) return 0;
  const std::size_t s = options.window_shift;
  return (n - T + s - 1) / s * s;
}

void Decoder::Impl::norm(const float* w, const float* b, const float* in, float* out, std::size_t rows) const {
  float mean[kBlock], rstd[kBlock];
  if (layernorm)
    kernels::layer_norm_forward(rows, C, in, w, b, kNormEpsF, out, mean, rstd);
  else
    kernels::rms_norm_forward(rows, C, in, w, kNormEpsF, out, rstd);
}

// out = m in (+ bias) (+ out): the rows shared out over the threads in pieces of whole kRowPiece rows
void Decoder::Impl::matvec(const Matrix& m, const float* in, float* out, bool accumulate) {
  const bool q8 = options.weights == DecoderWeights::q8;
  if (q8) kernels::quantize_q8<float>(m.cols, in, xq.data(), xs.data());
  const std::size_t pieces = (m.rows + kRowPiece - 1) / kRowPiece;
  const std::size_t piece_bytes = kRowPiece * m.packed_bytes(options.weights) / m.rows;
  // with 2 threads or more, up to 4 pieces a thread: a worker the system wakes late leaves its share to the others
  parallel_for_balanced(pieces, std::max<std::size_t>(1, kPieceBytes / piece_bytes), kPiecesPerThread,
                        [&](std::size_t b0, std::size_t b1) {
                          const std::size_t r0 = b0 * kRowPiece, r1 = std::min(m.rows, b1 * kRowPiece);
                          if (q8)
                            kernels::matvec_q8<float>(r0, r1, m.ld, m.q, m.s, xq.data(), xs.data(), m.bias, out,
                                                      accumulate);
                          else
                            kernels::matvec<float>(r0, r1, m.ld, m.f, in, m.bias, out, accumulate);
                        });
}

// out [n, rows] = in [n, cols] m^T (+ bias) (+ out), on the model's float32 weight
void Decoder::Impl::linear_rows(const Matrix& m, std::size_t n, const float* in, float* out, bool accumulate) const {
  gemm<float>(false, true, {n, m.rows, m.cols}, 1.f, in, m.full, accumulate ? 1.f : 0.f, out);
  if (m.bias)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t r = 0; r < m.rows; ++r) out[i * m.rows + r] += m.bias[r];
}

// cos and sin of p theta_i, as the rotary tables of training compute them (double, rounded once)
void Decoder::Impl::angles(std::size_t p) {
  for (std::size_t i = 0; i < D / 2; ++i) {
    const double angle = static_cast<double>(p) * theta[i];
    rope_cos[i] = static_cast<float>(std::cos(angle));
    rope_sin[i] = static_cast<float>(std::sin(angle));
  }
}

// the q heads and k heads of one row of qkv turned by the angles of angles()
void Decoder::Impl::turn_heads(float* row) {
  for (std::size_t head_index = 0; head_index < H + Hkv; ++head_index)
    kernels::rotate_half_pairs(row + head_index * D, row + head_index * D, rope_cos.data(), rope_sin.data(), D / 2,
                               false);
}

void Decoder::Impl::store_kv(std::size_t l, const float* row, std::size_t p) {
  const std::size_t s = slot(p);
  for (std::size_t g = 0; g < Hkv; ++g) {
    float* kt = keys(l, g);
    for (std::size_t d = 0; d < D; ++d) kt[d * cap + s] = row[C + g * D + d];
    std::copy_n(row + C + (Hkv + g) * D, D, values(l, g) + s * D);
  }
}

// The heads of one query row (position p) over their windows: out [C]; w [H, cap] scratch.
void Decoder::Impl::attend(std::size_t l, const float* row, std::size_t p, float* out, float* w) {
  const std::size_t lo = rope ? (p + 1 > T ? p + 1 - T : 0) : w0;  // the window's first position
  const std::size_t count = p + 1 - lo, first = slot(lo);
  const std::size_t n1 = std::min(count, cap - first), n2 = count - n1;  // the ring wraps after n1
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  parallel_for(H, 1, [&](std::size_t h0, std::size_t h1) {
    for (std::size_t hh = h0; hh < h1; ++hh) {
      const std::size_t g = hh / (H / Hkv);
      const float* kt = keys(l, g);
      const float* v = values(l, g);
      kernels::attend_query<float>(row + hh * D, D, scale, cap, kt + first, v + first * D, n1, kt, v, n2, w + hh * cap,
                                   out + hh * D);
    }
  });
}

// One token at position p (the decode path).
void Decoder::Impl::step(Index token, std::size_t p) {
  std::copy_n(wte + static_cast<std::size_t>(token) * C, C, x.data());
  if (!rope)
    for (std::size_t c = 0; c < C; ++c) x[c] += wpe[(p - w0) * C + c];
  else
    angles(p);
  for (std::size_t l = 0; l < L; ++l) {
    const Layer& y = layers[l];
    norm(y.ln_1_w, y.ln_1_b, x.data(), h.data(), 1);
    matvec(y.c_attn, h.data(), qkv.data(), false);
    if (rope) turn_heads(qkv.data());
    store_kv(l, qkv.data(), p);
    attend(l, qkv.data(), p, att.data(), weights.data());
    matvec(y.attn_proj, att.data(), x.data(), true);
    norm(y.ln_2_w, y.ln_2_b, x.data(), h.data(), 1);
    matvec(y.c_fc, h.data(), ff.data(), false);
    if (swiglu)
      kernels::swiglu_forward<float>(1, F, ff.data(), act.data());
    else
      kernels::gelu_forward<float>(F, ff.data(), act.data());
    matvec(y.mlp_proj, act.data(), x.data(), true);
  }
}

// n tokens at positions p0 .. p0 + n - 1 at once (GEMM); X holds the last layer's rows.
void Decoder::Impl::block(const Index* ids, std::size_t n, std::size_t p0) {
  for (std::size_t i = 0; i < n; ++i) {
    float* xi = X.data() + i * C;
    std::copy_n(wte + static_cast<std::size_t>(ids[i]) * C, C, xi);
    if (!rope)
      for (std::size_t c = 0; c < C; ++c) xi[c] += wpe[(p0 + i - w0) * C + c];
  }
  for (std::size_t l = 0; l < L; ++l) {
    const Layer& y = layers[l];
    norm(y.ln_1_w, y.ln_1_b, X.data(), Hn.data(), n);
    linear_rows(y.c_attn, n, Hn.data(), QKV.data(), false);
    for (std::size_t i = 0; i < n; ++i) {
      if (rope) {
        angles(p0 + i);
        turn_heads(QKV.data() + i * qkv_width);
      }
      store_kv(l, QKV.data() + i * qkv_width, p0 + i);
    }
    for (std::size_t i = 0; i < n; ++i) attend(l, QKV.data() + i * qkv_width, p0 + i, A.data() + i * C, weights.data());
    linear_rows(y.attn_proj, n, A.data(), X.data(), true);
    norm(y.ln_2_w, y.ln_2_b, X.data(), Hn.data(), n);
    linear_rows(y.c_fc, n, Hn.data(), FF.data(), false);
    if (swiglu)
      kernels::swiglu_forward<float>(n, F, FF.data(), ACT.data());
    else
      kernels::gelu_forward<float>(n * F, FF.data(), ACT.data());
    linear_rows(y.mlp_proj, n, ACT.data(), X.data(), true);
  }
}

void Decoder::Impl::compute_logits(const float* x_last) {
  norm(ln_f_w, ln_f_b, x_last, h.data(), 1);
  matvec(head, h.data(), logits.data(), false);
}

// ids[from, to) computed at their positions (the cache holds what comes before from), the logits of the last.
void Decoder::Impl::run(const std::vector<Index>& ids, std::size_t from, std::size_t to) {
  while (from < to) {
    const std::size_t n = std::min(kBlock, to - from);
    if (n == 1) {
      step(ids[from], from);
    } else {
      block(ids.data() + from, n, from);
      std::copy_n(X.data() + (n - 1) * C, C, x.data());
    }
    tokens.insert(tokens.end(), ids.begin() + static_cast<std::ptrdiff_t>(from),
                  ids.begin() + static_cast<std::ptrdiff_t>(from + n));
    from += n;
  }
  compute_logits(x.data());
  logits_valid = true;
}

const std::vector<float>& Decoder::Impl::next_logits(const std::vector<Index>& ids) {
  if (ids.empty()) throw std::invalid_argument("Decoder::next_logits: the sequence is empty; give at least one token");
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || static_cast<std::size_t>(ids[i]) >= V)
      throw std::invalid_argument(fmt::format("Decoder::next_logits: token {} at position {} is not an id of the "
                                              "vocabulary (0 to {})",
                                              ids[i], i, V - 1));
  const std::size_t n = ids.size();
  std::size_t from = 0;  // the cache holds what `ids` needs before this position
  if (rope) {
    while (from < tokens.size() && from < n && tokens[from] == ids[from]) ++from;
  } else {
    // what a window holds depends on its tokens alone: a window other than the cached one starts afresh
    const std::size_t w = window_start(n);
    if (w != w0 || tokens.size() < w0) {
      w0 = w;
      tokens.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(w));
      logits_valid = false;
    }
    from = w0;
    while (from < tokens.size() && from < n && tokens[from] == ids[from]) ++from;
  }
  if (from == n) {
    if (tokens.size() == n && logits_valid) return logits;
    --from;  // computed again for its logits
  }
  // rope: the query at `from` reads positions from - T + 1 .. from - 1, which the ring (cap positions, the newest
  // tokens.size() - 1) must still hold; else everything is computed again
  if (rope && tokens.size() > cap + (from + 1 > T ? from + 1 - T : 0)) from = 0;
  tokens.resize(from);
  logits_valid = false;
  run(ids, from, n);
  return logits;
}

Decoder::Decoder(const nn::GPT<float>& model, const DecoderOptions& options)
    : impl_(std::make_unique<Impl>(model, options)) {}
Decoder::~Decoder() = default;
Decoder::Decoder(Decoder&&) noexcept = default;
Decoder& Decoder::operator=(Decoder&&) noexcept = default;

const std::vector<float>& Decoder::next_logits(const std::vector<Index>& ids) { return impl_->next_logits(ids); }
std::size_t Decoder::vocab_size() const { return impl_->V; }
std::size_t Decoder::context() const { return impl_->T; }
const DecoderOptions& Decoder::options() const { return impl_->options; }

std::size_t Decoder::weight_bytes_per_token() const {
  const Impl& m = *impl_;
  std::size_t bytes = 0;
  for (const Layer& y : m.layers)
    for (const Matrix* w : {&y.c_attn, &y.attn_proj, &y.c_fc, &y.mlp_proj}) bytes += w->packed_bytes(m.options.weights);
  bytes += m.head.packed_bytes(m.options.weights);
  const std::size_t norms = (2 * m.L + 1) * (m.layernorm && m.cfg.bias ? 2 : 1);  // weights, and biases
  return bytes + norms * m.C * sizeof(float);
}

}  // namespace tf::infer
