#pragma once
// Which instruction set the own kernels (kernels/gelu, silu, causal_head, norms, softmax_rows) run on. A native build
// compiles them for the machine that builds (-march=native). A portable build (TINYFORMER_PORTABLE) compiles them for
// x86-64-v2, v3 (AVX2, FMA) and v4 (AVX-512) and kernels/dispatch.cpp picks, at the first call, the highest level this
// CPU has, or the one TINYFORMER_KERNEL_ISA names (x86-64-v2, x86-64-v3 or x86-64-v4: for A/B runs and tests).
// Everything else in a portable build is compiled for x86-64-v2. One level per process.
namespace tf::kernels {

// "native", or the level in use: "x86-64-v2", "x86-64-v3", "x86-64-v4". The first call reads TINYFORMER_KERNEL_ISA
// and throws std::invalid_argument naming it when it is not a level, is above what this CPU runs, or is set in a
// native build; the app calls this at start-up so that the error is one line before any work.
const char* kernel_isa();

}  // namespace tf::kernels
