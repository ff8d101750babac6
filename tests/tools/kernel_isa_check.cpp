// The portable build's kernels at the ISA level this process runs (ops/kernels/dispatch.hpp), on fixed inputs: GELU
// (also keeping its slope), SiLU and SwiGLU, layer norm and RMSNorm, softmax, log_softmax and cross-entropy's rows,
// and one attention head, each forward and backward, and the whole-array loops (bias rows, column sums, add, Adam),
// in float and double. Prints the level, then one line per output array: its name and its values as hex floats
// (exact), so that scripts/qemu_portable.sh can compare a run under qemu with a native run bit for bit, and levels
// with each other within a tolerance. Built by the portable preset only (lib/CMakeLists.txt), from the kernels and
// what they call.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "tinyformer/ops/kernels/dispatch.hpp"
#include "tinyformer/ops/kernels/dispatched.hpp"

namespace {

template <class S>
std::vector<S> inputs(std::size_t n, unsigned seed) {  // in [-2, 2), from a fixed LCG
  std::vector<S> v(n);
  unsigned x = seed * 2654435761u + 1;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<S>(x >> 8) / static_cast<S>(1u << 24) * 4 - 2;
  }
  return v;
}

template <class S>
void print(const std::string& name, const std::vector<S>& v) {
  std::printf("%s", name.c_str());
  for (S e : v) std::printf(" %a", static_cast<double>(e));
  std::printf("\n");
}

template <class S>
void check(const char* type) {
  namespace k = tf::kernels;
  const std::string t = type;
  const std::size_t n = 1000;  // not a multiple of any SIMD width: the scalar tail runs too
  const auto x = inputs<S>(n, 1), g = inputs<S>(n, 2);
  std::vector<S> out(n);
  k::gelu_forward<S>(n, x.data(), out.data());
  print(t + " gelu", out);
  k::gelu_backward<S>(n, x.data(), g.data(), out.data(), false);
  print(t + " gelu'", out);
  std::vector<S> slope = x;
  k::gelu_forward_slope<S>(n, slope.data(), out.data());
  print(t + " gelu with slope", out);
  print(t + " gelu slope", slope);
  k::gelu_backward_slope<S>(n, slope.data(), g.data(), out.data());
  print(t + " gelu' from slope", out);
  k::silu_forward<S>(n, x.data(), out.data());
  print(t + " silu", out);
  k::silu_backward<S>(n, x.data(), g.data(), out.data(), false);
  print(t + " silu'", out);
  const std::size_t R = 10, H = 50;  // [R, 2H] -> [R, H]
  std::vector<S> half(R * H), full(R * 2 * H);
  k::swiglu_forward<S>(R, H, x.data(), half.data());
  print(t + " swiglu", half);
  k::swiglu_backward<S>(R, H, x.data(), g.data(), full.data(), false);
  print(t + " swiglu'", full);
  // rows: R 13 of C 75 (the norms, softmax, log_softmax), N 13 of V 75 (cross-entropy)
  const std::size_t rows = 13, C = 75;
  const auto w = inputs<S>(C, 5), b = inputs<S>(C, 6);
  std::vector<S> y(rows * C), dx(rows * C), mean(rows), rstd(rows), dw(C), db(C);
  k::layer_norm_forward<S>(rows, C, x.data(), w.data(), b.data(), S(1e-5), y.data(), mean.data(), rstd.data());
  print(t + " layer_norm", y);
  print(t + " layer_norm rstd", rstd);
  k::layer_norm_backward<S>(rows, C, x.data(), w.data(), g.data(), mean.data(), rstd.data(), dx.data(), false,
                            dw.data(), db.data());
  print(t + " layer_norm dx", dx);
  print(t + " layer_norm dweight", dw);
  print(t + " layer_norm dbias", db);
  k::rms_norm_forward<S>(rows, C, x.data(), w.data(), S(1e-5), y.data(), rstd.data());
  print(t + " rms_norm", y);
  k::rms_norm_backward<S>(rows, C, x.data(), w.data(), g.data(), rstd.data(), dx.data(), true, dw.data());
  print(t + " rms_norm dx added to layer_norm's", dx);
  print(t + " rms_norm dweight", dw);
  std::vector<S> logits(x.begin(), x.begin() + rows * C);  // scaled up to [-8, 8)
  for (auto& e : logits) e *= S(4);
  k::log_softmax_forward<S>(rows, C, logits.data(), y.data());
  print(t + " log_softmax", y);
  k::log_softmax_backward<S>(rows, C, y.data(), g.data(), dx.data());
  print(t + " log_softmax dx", dx);
  logits[C + 3] = -std::numeric_limits<S>::infinity();  // a masked entry for softmax and cross-entropy: weight 0
  k::softmax_forward<S>(rows, C, logits.data(), y.data());
  print(t + " softmax", y);
  k::softmax_backward<S>(rows, C, y.data(), g.data(), dx.data());
  print(t + " softmax dx", dx);
  std::vector<std::int32_t> targets(rows);
  for (std::size_t r = 0; r < rows; ++r) targets[r] = static_cast<std::int32_t>(r * 5 % C);
  targets[2] = -100;  // ignored
  const double loss = k::cross_entropy_forward<S>(rows, C, logits.data(), targets.data(), -100, y.data());
  print(t + " cross_entropy loss", std::vector<double>{loss});
  print(t + " cross_entropy probs", y);
  k::cross_entropy_backward<S>(rows, C, y.data(), targets.data(), -100, S(1) / S(12), dx.data());
  print(t + " cross_entropy dx", dx);
  // one head: T 37, D 16, q k v side by side in rows of 3D
  const std::size_t T = 37, D = 16, ld = 3 * D;
  const auto qkv = inputs<S>(T * ld, 3), dy = inputs<S>(T * D, 4);
  std::vector<S> scratch(k::attention_head::scratch_size<S>(T, D)), p(T * T), dq(T * ld), dk(T * ld), dv(T * ld);
  y.assign(T * D, S(0));
  const S scale = S(0.25);
  k::attention_head::forward<S>(qkv.data(), qkv.data() + D, qkv.data() + 2 * D, ld, T, D, scale, nullptr, S(1),
                                p.data(), nullptr, y.data(), D, scratch.data());
  std::vector<S> shown(p);
  k::attention_head::zero_above_diagonal<S>(shown.data(), T);
  print(t + " attention p", shown);
  print(t + " attention y", y);
  k::attention_head::backward<S>(qkv.data(), qkv.data() + D, qkv.data() + 2 * D, ld, p.data(), nullptr, nullptr, S(1),
                                 dy.data(), D, T, D, scale, dq.data(), dk.data(), dv.data(), scratch.data());
  print(t + " attention dq", dq);
  print(t + " attention dk", dk);
  print(t + " attention dv", dv);
  // again with dropout's mask, P not kept: the backward computes it again
  std::vector<std::uint8_t> keep(T * T);
  for (std::size_t i = 0; i < keep.size(); ++i) keep[i] = i % 7 != 3 ? 1 : 0;
  k::attention_head::forward<S>(qkv.data(), qkv.data() + D, qkv.data() + 2 * D, ld, T, D, scale, keep.data(), S(1.25),
                                nullptr, nullptr, y.data(), D, scratch.data());
  print(t + " attention y with dropout", y);
  k::attention_head::backward<S>(qkv.data(), qkv.data() + D, qkv.data() + 2 * D, ld, nullptr, nullptr, keep.data(),
                                 S(1.25), dy.data(), D, T, D, scale, dq.data(), dk.data(), dv.data(), scratch.data());
  print(t + " attention dq with dropout", dq);
  print(t + " attention dk with dropout", dk);
  print(t + " attention dv with dropout", dv);
  // whole arrays: a bias in every row, column sums (fresh and added), a sum, two Adam steps (AdamW's, then Adam's L2)
  std::vector<S> filled(rows * C), sums(b), added(n), p1(x), m1(n, S(0)), v1(n, S(0));
  k::fill_rows<S>(rows, C, b.data(), filled.data());
  print(t + " fill_rows", filled);
  k::add_column_sums<S>(rows, C, x.data(), false, sums.data());
  k::add_column_sums<S>(rows, C, g.data(), true, sums.data());
  print(t + " add_column_sums", sums);
  k::add_arrays<S>(n, x.data(), g.data(), added.data());
  print(t + " add_arrays", added);
  tf::kernels::AdamStep<S> step{S(0.9),   S(0.1), S(0.999), S(0.001), S(1e-8), S(-0.01),
                                S(0.001), S(0.1), S(0.999), false,    true};
  k::adam_update<S>(n, step, g.data(), p1.data(), m1.data(), v1.data());
  step.l2 = true;
  step.decoupled = false;
  k::adam_update<S>(n, step, x.data(), p1.data(), m1.data(), v1.data());
  print(t + " adam p", p1);
  print(t + " adam m", m1);
  print(t + " adam v", v1);
}

}  // namespace

int main() {
  try {
    std::printf("level %s\n", tf::kernels::kernel_isa());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_isa_check: %s\n", e.what());
    return 2;
  }
  check<float>("float");
  check<double>("double");
  return 0;
}
