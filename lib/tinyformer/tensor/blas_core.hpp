#pragma once
// OpenBLAS at its best on the CPU it runs on. OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels from the
// CPU model when it loads, and a model it does not know gets its oldest x86-64 kernels without a word: 0.3.21 runs
// an Emerald Rapids Xeon as "Prescott" (SSE3), a quarter of the SGEMM speed of its "SkylakeX" or "Cooperlake"
// kernels (docs/performance.md, "Round four"). So, when the user has not set OPENBLAS_CORETYPE, the core type OpenBLAS
// chose is compared with the best one this CPU's features allow (CPUID: AVX-512 with BF16 -> Cooperlake, AVX-512 ->
// SkylakeX, AVX2 with FMA -> Haswell or Zen, AVX -> Sandybridge, SSE4.2 -> Nehalem); when OpenBLAS chose a lower class,
// it is made to choose again (its worker threads stopped, gotoblas_dynamic_quit, then gotoblas_dynamic_init with
// OPENBLAS_CORETYPE set to the best core type it knows, the environment restored after). This happens once, when the
// library is loaded: before main() in a program (the app, any program linking libtinyformer), at `import tinyformer`
// in Python. Python's NumPy and PyTorch share the process's one OpenBLAS, so they run the chosen kernels too from then
// on, whichever was imported first. An OPENBLAS_CORETYPE set by the user is always kept. On other CPUs than x86-64, or
// with an OpenBLAS without these entry points, nothing is changed.
#include <string>
#include <vector>

namespace tf::blas {

// The x86-64 features that decide a core type (CPUID, as __builtin_cpu_supports reads them).
struct CpuFeatures {
  bool sse4_2 = false, avx = false, avx2 = false, fma = false;
  bool avx512 = false;  // AVX-512 F, BW, VL, DQ and CD: what OpenBLAS's SkylakeX kernels use
  bool avx512_bf16 = false;
  bool amx = false;  // AMX tiles with BF16 (Sapphire Rapids)
  bool amd = false;
};
CpuFeatures cpu_features();  // this CPU's; all false on other CPUs than x86-64

// OpenBLAS's core types this CPU can run, best first ("SapphireRapids", "Cooperlake", "SkylakeX", "Haswell", ...);
// each needs only features in `f`. Empty when none beyond the baseline applies.
std::vector<std::string> core_types_for(const CpuFeatures& f);
// A class of core types by the widest instructions its SGEMM uses: 1 SSE (Prescott, Core2, ...), 2 SSE4.2
// (Nehalem), 3 AVX (Sandybridge, Bulldozer, ...), 4 AVX2 (Haswell, Zen, ...), 5 AVX-512 (SkylakeX), 6 AVX-512 BF16
// (Cooperlake), 7 AMX (SapphireRapids); 0 for a name it does not know. Case does not matter.
int core_class(const std::string& core);
// The width of the multiply-adds a core type's SGEMM kernels use: 512 (classes 5-7), 256 (class 4, AVX2 with FMA),
// 128 (classes 1-3: SSE, or AVX whose separate multiply and add give the throughput of 128-bit multiply-adds), 0 for a
// name core_class does not know (other CPUs than x86-64). gemm_plan::rule compares it with libxsmm's.
int vector_bits(const std::string& core);

struct CoreChoice {
  std::string running;     // openblas_get_corename() now
  std::string own;         // what OpenBLAS had chosen when it loaded
  std::string cpu_best;    // core_types_for(cpu_features()).front(), or "" where none applies
  std::string decided_by;  // "OPENBLAS_CORETYPE" (the user's, kept), "openblas" (its own choice was the best class),
                           // "tinyformer" (chosen again), or why nothing could be done
};
// The choice made when the library was loaded (the first call makes it, if a static initialiser has not yet).
const CoreChoice& core_choice();
// For a run's header: one line when the user's OPENBLAS_CORETYPE holds OpenBLAS at a lower class of core type than this
// CPU runs (an AVX-512 CPU held at Haswell's AVX2 kernels: half the SGEMM speed on an AMD Zen 5), else "". The
// variable is kept all the same: the user may want those kernels.
std::string held_back_note(const CoreChoice& c);

}  // namespace tf::blas
