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
#include "tinyformer/ops/kernels/dispatched.hpp"
#undef TF_KERNEL_NAMESPACE
#define TF_KERNEL_NAMESPACE tf::kernels::isa_v3
#include "tinyformer/ops/kernels/dispatched.hpp"
#undef TF_KERNEL_NAMESPACE
#define TF_KERNEL_NAMESPACE tf::kernels::isa_v4
#include "tinyformer/ops/kernels/dispatched.hpp"
#undef TF_KERNEL_NAMESPACE
#endif
#include "tinyformer/ops/kernels/dispatched.hpp"

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

// tf::kernels' function `name`: a call of isa_vN's for the level N chosen
// NOLINTBEGIN(bugprone-macro-parentheses): result is a type and name a function's name
#define TF_KERNEL_DISPATCH(result, name, parameters, arguments) \
  template <class S>                                            \
  result name parameters {                                      \
    switch (level()) {                                          \
      case 4:                                                   \
        return isa_v4::name<S> arguments;                       \
      case 3:                                                   \
        return isa_v3::name<S> arguments;                       \
      default:                                                  \
        return isa_v2::name<S> arguments;                       \
    }                                                           \
  }
// NOLINTEND(bugprone-macro-parentheses)

// One line a list of kernels/dispatched.hpp.
TF_GELU_KERNELS(TF_KERNEL_DISPATCH, S)
TF_SILU_KERNELS(TF_KERNEL_DISPATCH, S)
TF_NORM_KERNELS(TF_KERNEL_DISPATCH, S)
TF_SOFTMAX_KERNELS(TF_KERNEL_DISPATCH, S)
TF_MATVEC_KERNELS(TF_KERNEL_DISPATCH, S)
TF_ATTEND_KERNELS(TF_KERNEL_DISPATCH, S)
TF_ARRAY_KERNELS(TF_KERNEL_DISPATCH, S)
namespace attention_head {
// isa_vN is here the attention_head of isa_vN
namespace isa_v2 = kernels::isa_v2::attention_head;
namespace isa_v3 = kernels::isa_v3::attention_head;
namespace isa_v4 = kernels::isa_v4::attention_head;
TF_CAUSAL_HEAD_KERNELS(TF_KERNEL_DISPATCH, S)
TF_KERNEL_INSTANTIATE(TF_CAUSAL_HEAD_KERNELS)
}  // namespace attention_head

TF_KERNEL_INSTANTIATE(TF_GELU_KERNELS)
TF_KERNEL_INSTANTIATE(TF_SILU_KERNELS)
TF_KERNEL_INSTANTIATE(TF_NORM_KERNELS)
TF_KERNEL_INSTANTIATE(TF_SOFTMAX_KERNELS)
TF_KERNEL_INSTANTIATE(TF_MATVEC_KERNELS)
TF_KERNEL_INSTANTIATE(TF_ATTEND_KERNELS)
TF_KERNEL_INSTANTIATE(TF_ARRAY_KERNELS)
#undef TF_KERNEL_DISPATCH

#endif  // TINYFORMER_PORTABLE_KERNELS

}  // namespace tf::kernels
