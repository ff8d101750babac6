#pragma once
// Which library computes each float product of tensor/gemm.cpp: OpenBLAS's SGEMM or libxsmm's JIT kernels. Neither
// wins everywhere: on an AVX-512 machine libxsmm ran the backward's products 10-20% faster, on an AVX2 one 20-40%
// slower on medium's (docs/performance.md). So the choice is made per product shape, for the machine that runs.
//
// The policy comes from the environment variable TINYFORMER_GEMM:
//   auto (the default)  a fixed rule (rule, below) from the shape and the vector width libxsmm generates code for on
//                       this CPU: the same choice in every process on a machine, so that two runs of one seed, or a
//                       program and the app on one prompt, compute the same bits;
//   measure             the first time a shape (trans_a, trans_b, m, n, k) is met in the process, both libraries
//                       compute it on scratch buffers in alternating pairs (tensor/gemm.hpp, time_gemm_libraries),
//                       and the one with the lower median time ratio is kept for that shape. Two processes may then
//                       choose differently where the two are close: replay a plan to repeat a run bit for bit;
//   openblas, libxsmm   every product on that library (libxsmm only where it has a kernel: A B, A^T B and A B^T,
//                       the last with B transposed first, with alpha 1 and beta 0 or 1, more than one row; the rest
//                       always runs on OpenBLAS).
// The plan (shape -> library) only grows during a run, so a shape always takes the same path within a run. A plan
// written by to_text can be replayed (replay, or TINYFORMER_GEMM_PLAN=file): its shapes are not chosen again, and
// a product computes the same bits whatever the thread count for a given plan (tensor/gemm.hpp).
#include <cstddef>
#include <string>
#include <vector>

namespace tf::gemm_plan {

enum class Backend { openblas, libxsmm };
enum class Policy { automatic, measure, openblas, libxsmm };

// The shape of one product as gemm.cpp calls a library: op(A) [m,k], op(B) [k,n].
struct Shape {
  bool trans_a = false, trans_b = false;
  std::size_t m = 0, n = 0, k = 0;
  bool operator==(const Shape& o) const {
    return trans_a == o.trans_a && trans_b == o.trans_b && m == o.m && n == o.n && k == o.k;
  }
  bool operator<(const Shape& o) const;
};

struct Choice {
  Shape shape;
  Backend backend = Backend::openblas;
  // What measure measured per product, in microseconds (0 when the choice was auto's rule, forced or replayed).
  double openblas_us = 0, libxsmm_us = 0;
};

const char* name(Backend b);  // "openblas", "libxsmm"
const char* name(Policy p);   // "auto", "measure", "openblas", "libxsmm"

// "auto", "measure", "openblas" or "libxsmm"; anything else, or libxsmm in a build without it, throws
// std::invalid_argument naming `where` (e.g. "TINYFORMER_GEMM") and the valid values.
Policy parse_policy(const std::string& text, const std::string& where);

// The policy in force: TINYFORMER_GEMM's, read at the first call (unset: auto), unless set_policy set another. The
// first call also replays TINYFORMER_GEMM_PLAN's file when that is set. Both throw std::invalid_argument on a bad
// value; the app calls this at start-up so that the error is one line before any work.
Policy policy();
// Sets the policy and forgets the plan (for tests and A/B runs).
void set_policy(Policy p);

// The plan so far, sorted by shape.
std::vector<Choice> plan();
// Replaces the plan by `choices` (a recorded one): their shapes are not measured again.
void replay(const std::vector<Choice>& choices);

// A product's shape as a plan line writes it, "NN 1024 64 192": N or T for op(A) then op(B), then m n k.
std::string shape_text(const Shape& s);
// One line per choice, "NN 1024 64 192 libxsmm": the shape_text, then the library.
std::string to_text(const std::vector<Choice>& choices);
// The inverse of to_text; a malformed line throws std::invalid_argument naming `where`, the line number and what
// a line holds. Blank lines and lines starting with # are skipped.
std::vector<Choice> from_text(const std::string& text, const std::string& where);
// The plan's choices counted per library: {"libxsmm": 12, "openblas": 7} as a short text "libxsmm 12, openblas 7".
std::string summary(const std::vector<Choice>& choices);

// The library auto takes for `s` when libxsmm's kernels are `xsmm_bits` wide (xsmm::vector_bits: 512, 256, or 0 for
// none) and OpenBLAS's running core type `openblas_bits` (blas::vector_bits: 512, 256, 128, or 0 for a core type it
// does not know). Where the two widths differ, the wider library takes every product: that happens when the user sets
// OPENBLAS_CORETYPE or LIBXSMM_TARGET below what the CPU runs. On an AMD Zen 5 (AVX-512) libxsmm at 512 bits took
// 0.44-0.89 of the time of OpenBLAS's Haswell kernels on every product of tiny, medium and GPT-2, and OpenBLAS at 512
// bits 0.20-0.64 of libxsmm's at 256 (docs/performance.md, "Round four on an AMD Zen 5"). The exception: when libxsmm
// is only twice as wide, a product that reads a large op(B) from memory goes to OpenBLAS, as libxsmm reads op(B) again
// for each block of C's rows; where that begins depends on the CPU (`amd`). On that Zen 5 (32 MiB L3): A B past 2^22
// values (16 MiB). A B of 256 x 192 with k 16384 (12 MiB) took libxsmm 0.54 of OpenBLAS's Haswell time, k 32768
// 0.83, and GPT-2's lm_head dX (k 50304, 37 MiB) 41.6-62.6 ms in four runs against OpenBLAS's 44.5-44.8
// (tests/tools/gemm_choice). On an Intel Emerald Rapids Xeon (2 MiB L2 a core): A B and A B^T past 2^21 values (8
// MiB). There libxsmm took 1.7-2.0x OpenBLAS's Haswell time on GPT-2's A B over 2.4M values (1.3x at 1.8M), 1.25-1.34x
// on its A B^T over 9.7M, and 0.59-0.99x at 0.6-1.2M; the Zen 5's line ran GPT-2's products at 0.84x the faster
// library's time, this one at 0.99x (docs/performance.md, "The libraries at two widths on the Emerald Rapids").
// At the same width libxsmm wins the small products and OpenBLAS the large ones, and the line moves with the width.
// libxsmm packs nothing: each 128-row block of C reads all of op(B) in place again, which pays while op(B) stays in
// cache, and fell 1.2-2.9x behind OpenBLAS on GPT-2 124M's A B and A B^T where op(B) has more than 512 columns or more
// than 1.5 MiB (tests/tools/gemm_choice). A^T B reads its operands in chunks of k and lost from 2^27 multiply-adds with
// AVX-512 (2^26 with AVX2). On tiny, small and medium libxsmm took 0.65-0.94 of OpenBLAS's time inside those
// limits (`bench --check-gemm`, docs/performance.md, "The library of each product"). So: OpenBLAS without libxsmm
// kernels; A^T B on libxsmm up to 2^27 multiply-adds m n k (2^26 with 256 bits); A B and A B^T on libxsmm when
// op(B) has at most 512 columns and 393216 elements, and with 256 bits at most 2^27 (A B) or 2^26 (A B^T)
// multiply-adds. `amd`: an AMD CPU (blas::cpu_features), else the line measured on Intel's.
Backend rule(const Shape& s, int xsmm_bits, int openblas_bits, bool amd);
// rule() with this process's widths and CPU: libxsmm's target, OpenBLAS's running core type (blas::core_choice) and
// its vendor.
Backend rule(const Shape& s);

// For gemm.cpp: the recorded choice of `s`, if any, and recording a new one (the first record of a shape wins).
bool find(const Shape& s, Backend& backend);
Backend record(const Choice& c);

}  // namespace tf::gemm_plan
