// No #pragma once: kernels/dispatch.cpp includes the kernel headers once per ISA level, with TF_KERNEL_NAMESPACE set.
//
// Where this translation unit's kernels live. A portable build (TINYFORMER_PORTABLE, lib/CMakeLists.txt) compiles
// each kernel file (gelu.cpp, silu.cpp, causal_head.cpp, norms.cpp, softmax_rows.cpp) three times: for x86-64-v2, v3
// (AVX2, FMA) and v4 (AVX-512), with TINYFORMER_KERNEL_ISA set to isa_v2, isa_v3 or isa_v4, so that its functions land
// in tf::kernels::isa_v3 and so on; kernels/dispatch.cpp defines tf::kernels' functions as calls to the best level the
// CPU has. In a native build TINYFORMER_KERNEL_ISA is unset and the kernels are tf::kernels' functions themselves.
#ifndef TF_KERNEL_NAMESPACE
#ifdef TINYFORMER_KERNEL_ISA
#define TF_KERNEL_NAMESPACE tf::kernels::TINYFORMER_KERNEL_ISA
#else
#define TF_KERNEL_NAMESPACE tf::kernels
#endif
#endif
