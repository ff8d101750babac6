// Kept apart from xtensor-blas: <cblas.h> clashes with xflens' CBLAS enums in one TU (as gemm.cpp).
#include "tinyformer/tensor/blas_core.hpp"

#include <dlfcn.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include <cblas.h>

namespace tf::blas {

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
// AMX tiles with BF16 (CPUID leaf 7: EDX bits 24 and 22) that the OS saves and restores (XCR0 bits 17 and 18):
// read from CPUID itself, as GCC and clang do not agree on __builtin_cpu_supports' names for them.
bool amx_with_os_support() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22))) return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE: xgetbv may be used
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & (3u << 17)) == (3u << 17);
}
#endif

}  // namespace

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  f.sse4_2 = __builtin_cpu_supports("sse4.2");
  f.avx = __builtin_cpu_supports("avx");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512cd");
  f.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  f.amx = amx_with_os_support();
  f.amd = __builtin_cpu_is("amd");
#endif
  return f;
}

std::vector<std::string> core_types_for(const CpuFeatures& f) {
  std::vector<std::string> out;
  if (f.avx512) {
    if (f.avx512_bf16 && f.amx) out.emplace_back("SapphireRapids");
    if (f.avx512_bf16) out.emplace_back("Cooperlake");
    out.emplace_back("SkylakeX");
  }
  if (f.avx2 && f.fma) out.emplace_back(f.amd ? "Zen" : "Haswell");
  if (f.avx) out.emplace_back("Sandybridge");
  if (f.sse4_2) out.emplace_back("Nehalem");
  return out;
}

int core_class(const std::string& core) {
  std::string name = core;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::pair<const char*, int> classes[] = {
      {"katmai", 1},        {"coppermine", 1},   {"northwood", 1}, {"prescott", 1},   {"banias", 1},
      {"atom", 1},          {"core2", 1},        {"penryn", 1},    {"dunnington", 1}, {"athlon", 1},
      {"opteron", 1},       {"opteron_sse3", 1}, {"barcelona", 1}, {"nano", 1},       {"bobcat", 1},
      {"nehalem", 2},       {"sandybridge", 3},  {"bulldozer", 3}, {"piledriver", 3}, {"steamroller", 3},
      {"excavator", 3},     {"haswell", 4},      {"zen", 4},       {"skylakex", 5},   {"cooperlake", 6},
      {"sapphirerapids", 7}};
  for (const auto& [n, c] : classes)
    if (name == n) return c;
  return 0;
}

int vector_bits(const std::string& core) {
  const int c = core_class(core);
  return c >= 5 ? 512 : c == 4 ? 256 : c >= 1 ? 128 : 0;
}

namespace {

std::string running_core() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

CoreChoice choose() {
  CoreChoice c;
  c.own = c.running = running_core();
  const std::vector<std::string> candidates = core_types_for(cpu_features());
  c.cpu_best = candidates.empty() ? "" : candidates.front();
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  if (set && *set) {
    c.decided_by = "OPENBLAS_CORETYPE";
    return c;
  }
  if (candidates.empty()) {
    c.decided_by = "openblas (no core type for this CPU beyond its own choice)";
    return c;
  }
  if (core_class(c.own) >= core_class(c.cpu_best)) {
    c.decided_by = "openblas";
    return c;
  }
  // OpenBLAS's own entry points of a DYNAMIC_ARCH build: found at run time, so that another BLAS still links
  using Hook = void (*)();
  auto quit = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  auto stop_threads = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"));
  if (!quit || !init || !stop_threads) {
    c.decided_by = "openblas (this OpenBLAS cannot choose its core type again: no DYNAMIC_ARCH entry points)";
    return c;
  }
  // OpenBLAS starts its worker threads when it loads, and a worker that is still starting reads the core table
  // (gotoblas_dynamic_init, from its first buffer) while quit() below has emptied it: a crash in perhaps one start in
  // a few hundred (seen as SIGSEGV at 0x1090 in gotoblas_dynamic_init on a worker's stack). So the workers are stopped
  // and joined first; OpenBLAS starts them again when a product asks for more than one thread (tinyformer's never do).
  stop_threads();
  // the best core type this OpenBLAS knows: one it does not know falls back to another, seen in its name
  for (const std::string& candidate : candidates) {
    if (core_class(candidate) <= core_class(c.own)) break;
    setenv("OPENBLAS_CORETYPE", candidate.c_str(), 1);
    quit();
    init();
    c.running = running_core();
    if (core_class(c.running) == core_class(candidate)) break;
  }
  unsetenv("OPENBLAS_CORETYPE");
  if (core_class(c.running) <= core_class(c.own)) {  // nothing better: OpenBLAS's own choice again
    quit();
    init();
    c.running = running_core();
    c.decided_by = "openblas (it knows no better core type for this CPU)";
  } else {
    c.decided_by = "tinyformer";
  }
  return c;
}

// Made when the library is loaded, after OpenBLAS (a library it needs) initialised and before any product.
[[maybe_unused]] const CoreChoice& g_loaded_choice = core_choice();

}  // namespace

const CoreChoice& core_choice() {
  static const CoreChoice choice = choose();
  return choice;
}

std::string held_back_note(const CoreChoice& c) {
  if (c.decided_by != "OPENBLAS_CORETYPE" || c.cpu_best.empty() || core_class(c.running) == 0 ||
      core_class(c.running) >= core_class(c.cpu_best))
    return "";
  return "OPENBLAS_CORETYPE holds OpenBLAS at its " + c.running + " kernels (" +
         std::to_string(vector_bits(c.running)) + "-bit) where this CPU can run " + c.cpu_best + " (" +
         std::to_string(vector_bits(c.cpu_best)) +
         "-bit): unset it for those (`tinyformer bench --gemm` measures both)";
}

}  // namespace tf::blas
