// The portable build's kernels: tf::kernels' functions call the copy compiled for the ISA level kernel_isa() chose
// (kernels/dispatch.hpp, kernels/isa.hpp). In a native build only kernel_isa() is here.
#include "tinyformer/ops/kernels/dispatch.hpp"

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#ifdef TINYFORMER_PORTABLE_KERNELS
#define TF_KERNEL_NAMESPACE tf::kernels::isa_v2
#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/kernels/gelu.hpp"
#include "tinyformer/ops/kernels/norms.hpp"
#include "tinyformer/ops/kernels/silu.hpp"
#include "tinyformer/ops/kernels/softmax_rows.hpp"
#undef TF_KERNEL_NAMESPACE
#define TF_KERNEL_NAMESPACE tf::kernels::isa_v3
#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/kernels/gelu.hpp"
#include "tinyformer/ops/kernels/norms.hpp"
#include "tinyformer/ops/kernels/silu.hpp"
#include "tinyformer/ops/kernels/softmax_rows.hpp"
#undef TF_KERNEL_NAMESPACE
#define TF_KERNEL_NAMESPACE tf::kernels::isa_v4
#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/kernels/gelu.hpp"
#include "tinyformer/ops/kernels/norms.hpp"
#include "tinyformer/ops/kernels/silu.hpp"
#include "tinyformer/ops/kernels/softmax_rows.hpp"
#undef TF_KERNEL_NAMESPACE
#endif
#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/kernels/gelu.hpp"
#include "tinyformer/ops/kernels/norms.hpp"
#include "tinyformer/ops/kernels/silu.hpp"
#include "tinyformer/ops/kernels/softmax_rows.hpp"

namespace tf::kernels {

namespace {

#ifdef TINYFORMER_PORTABLE_KERNELS
// 2, 3 or 4 (x86-64-vN)
int choose_level() {
  __builtin_cpu_init();
  const int cpu = __builtin_cpu_supports("x86-64-v4") ? 4 : __builtin_cpu_supports("x86-64-v3") ? 3 : 2;
  const char* forced = std::getenv("TINYFORMER_KERNEL_ISA");
  if (!forced || !*forced) return cpu;
  const std::string text = forced;
  int level = 0;
  for (int l : {2, 3, 4})
    if (text == fmt::format("x86-64-v{}", l)) level = l;
  if (level == 0)
    throw std::invalid_argument(
        fmt::format("TINYFORMER_KERNEL_ISA='{}': expected x86-64-v2, x86-64-v3 or x86-64-v4", text));
  if (level > cpu)
    throw std::invalid_argument(fmt::format("TINYFORMER_KERNEL_ISA={}: this CPU runs at most x86-64-v{}", text, cpu));
  return level;
}

int level() {
  static const int chosen = choose_level();
  return chosen;
}
#endif

}  // namespace

const char* kernel_isa() {
#ifdef TINYFORMER_PORTABLE_KERNELS
  static const char* const names[] = {"", "", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
  return names[level()];
#else
  const char* forced = std::getenv("TINYFORMER_KERNEL_ISA");
  if (forced && *forced)
    throw std::invalid_argument(fmt::format("TINYFORMER_KERNEL_ISA={}: this build is native (-march=native), its "
                                            "kernels have one instruction set; the variable applies to a portable "
                                            "build (cmake --preset portable)",
                                            forced));
  return "native";
#endif
}

#ifdef TINYFORMER_PORTABLE_KERNELS

// return isa_vN::call for the chosen level N
#define TF_DISPATCH(call)  \
  switch (level()) {       \
    case 4:                \
      return isa_v4::call; \
    case 3:                \
      return isa_v3::call; \
    default:               \
      return isa_v2::call; \
  }

template <class S>
void gelu_forward(std::size_t n, const S* x, S* out) {
  TF_DISPATCH(gelu_forward(n, x, out))
}
template <class S>
void gelu_backward(std::size_t n, const S* x, const S* g, S* out, bool accumulate) {
  TF_DISPATCH(gelu_backward(n, x, g, out, accumulate))
}
template <class S>
void silu_forward(std::size_t n, const S* x, S* out) {
  TF_DISPATCH(silu_forward(n, x, out))
}
template <class S>
void silu_backward(std::size_t n, const S* x, const S* g, S* out, bool accumulate) {
  TF_DISPATCH(silu_backward(n, x, g, out, accumulate))
}
template <class S>
void swiglu_forward(std::size_t R, std::size_t H, const S* x, S* out) {
  TF_DISPATCH(swiglu_forward(R, H, x, out))
}
template <class S>
void swiglu_backward(std::size_t R, std::size_t H, const S* x, const S* dy, S* dx, bool accumulate) {
  TF_DISPATCH(swiglu_backward(R, H, x, dy, dx, accumulate))
}

template <class S>
void layer_norm_forward(std::size_t R, std::size_t C, const S* x, const S* weight, const S* bias, S eps, S* y, S* mean,
                        S* rstd) {
  TF_DISPATCH(layer_norm_forward(R, C, x, weight, bias, eps, y, mean, rstd))
}
template <class S>
void layer_norm_backward(std::size_t R, std::size_t C, const S* x, const S* weight, const S* dy, const S* mean,
                         const S* rstd, S* dx, S* dweight, S* dbias) {
  TF_DISPATCH(layer_norm_backward(R, C, x, weight, dy, mean, rstd, dx, dweight, dbias))
}
template <class S>
void rms_norm_forward(std::size_t R, std::size_t C, const S* x, const S* weight, S eps, S* y, S* rstd) {
  TF_DISPATCH(rms_norm_forward(R, C, x, weight, eps, y, rstd))
}
template <class S>
void rms_norm_backward(std::size_t R, std::size_t C, const S* x, const S* weight, const S* dy, const S* rstd, S* dx,
                       S* dweight) {
  TF_DISPATCH(rms_norm_backward(R, C, x, weight, dy, rstd, dx, dweight))
}
template <class S>
void softmax_forward(std::size_t R, std::size_t C, const S* x, S* y) {
  TF_DISPATCH(softmax_forward(R, C, x, y))
}
template <class S>
void softmax_backward(std::size_t R, std::size_t C, const S* y, const S* dy, S* dx) {
  TF_DISPATCH(softmax_backward(R, C, y, dy, dx))
}
template <class S>
void log_softmax_forward(std::size_t R, std::size_t C, const S* x, S* y) {
  TF_DISPATCH(log_softmax_forward(R, C, x, y))
}
template <class S>
void log_softmax_backward(std::size_t R, std::size_t C, const S* y, const S* dy, S* dx) {
  TF_DISPATCH(log_softmax_backward(R, C, y, dy, dx))
}
template <class S>
double cross_entropy_forward(std::size_t N, std::size_t V, const S* x, const std::int32_t* targets,
                             std::int32_t ignore_index, S* probs) {
  TF_DISPATCH(cross_entropy_forward(N, V, x, targets, ignore_index, probs))
}
template <class S>
void cross_entropy_backward(std::size_t N, std::size_t V, const S* probs, const std::int32_t* targets,
                            std::int32_t ignore_index, S coef, S* dx) {
  TF_DISPATCH(cross_entropy_backward(N, V, probs, targets, ignore_index, coef, dx))
}

namespace attention_head {

std::size_t scratch_size(std::size_t T, std::size_t D) { TF_DISPATCH(attention_head::scratch_size(T, D)) }
template <class S>
void softmax_row(S* row, std::size_t n, std::size_t T) {
  TF_DISPATCH(attention_head::softmax_row(row, n, T))
}
template <class S>
void scores_softmax(const S* q, const S* k, std::size_t ld, std::size_t T, std::size_t D, S scale, S* p, S* scratch) {
  TF_DISPATCH(attention_head::scores_softmax(q, k, ld, T, D, scale, p, scratch))
}
template <class S>
void weighted_sum(const S* pd, const S* v, std::size_t ld, std::size_t T, std::size_t D, S* y, std::size_t ldy,
                  S* scratch) {
  TF_DISPATCH(attention_head::weighted_sum(pd, v, ld, T, D, y, ldy, scratch))
}
template <class S>
void backward(const S* q, const S* k, const S* v, std::size_t ld, const S* p, const S* pd, bool dropout, S keep_scale,
              const S* dy, std::size_t ldy, std::size_t T, std::size_t D, S scale, S* dq, S* dk, S* dv, S* scratch) {
  TF_DISPATCH(
      attention_head::backward(q, k, v, ld, p, pd, dropout, keep_scale, dy, ldy, T, D, scale, dq, dk, dv, scratch))
}

}  // namespace attention_head

#define TF_INSTANTIATE(S)                                                                                              \
  template void gelu_forward<S>(std::size_t, const S*, S*);                                                            \
  template void gelu_backward<S>(std::size_t, const S*, const S*, S*, bool);                                           \
  template void silu_forward<S>(std::size_t, const S*, S*);                                                            \
  template void silu_backward<S>(std::size_t, const S*, const S*, S*, bool);                                           \
  template void swiglu_forward<S>(std::size_t, std::size_t, const S*, S*);                                             \
  template void swiglu_backward<S>(std::size_t, std::size_t, const S*, const S*, S*, bool);                            \
  template void layer_norm_forward<S>(std::size_t, std::size_t, const S*, const S*, const S*, S, S*, S*, S*);          \
  template void layer_norm_backward<S>(std::size_t, std::size_t, const S*, const S*, const S*, const S*, const S*, S*, \
                                       S*, S*);                                                                        \
  template void rms_norm_forward<S>(std::size_t, std::size_t, const S*, const S*, S, S*, S*);                          \
  template void rms_norm_backward<S>(std::size_t, std::size_t, const S*, const S*, const S*, const S*, S*, S*);        \
  template void softmax_forward<S>(std::size_t, std::size_t, const S*, S*);                                            \
  template void softmax_backward<S>(std::size_t, std::size_t, const S*, const S*, S*);                                 \
  template void log_softmax_forward<S>(std::size_t, std::size_t, const S*, S*);                                        \
  template void log_softmax_backward<S>(std::size_t, std::size_t, const S*, const S*, S*);                             \
  template double cross_entropy_forward<S>(std::size_t, std::size_t, const S*, const std::int32_t*, std::int32_t, S*); \
  template void cross_entropy_backward<S>(std::size_t, std::size_t, const S*, const std::int32_t*, std::int32_t, S,    \
                                          S*);                                                                         \
  template void attention_head::softmax_row<S>(S*, std::size_t, std::size_t);                                          \
  template void attention_head::scores_softmax<S>(const S*, const S*, std::size_t, std::size_t, std::size_t, S, S*,    \
                                                  S*);                                                                 \
  template void attention_head::weighted_sum<S>(const S*, const S*, std::size_t, std::size_t, std::size_t, S*,         \
                                                std::size_t, S*);                                                      \
  template void attention_head::backward<S>(const S*, const S*, const S*, std::size_t, const S*, const S*, bool, S,    \
                                            const S*, std::size_t, std::size_t, std::size_t, S, S*, S*, S*, S*);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE
#undef TF_DISPATCH

#endif  // TINYFORMER_PORTABLE_KERNELS

}  // namespace tf::kernels
