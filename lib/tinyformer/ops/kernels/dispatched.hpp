// (No #pragma once: kernels/dispatch.cpp includes this once per ISA level, see kernels/isa.hpp.)
// The dispatched kernels: one header a kernel file, each with its list of signatures (kernels/declare.hpp). Their
// sources are lib/CMakeLists.txt's TINYFORMER_DISPATCHED_KERNELS, compiled once per x86-64 level in a portable build.
#include "tinyformer/ops/kernels/arrays.hpp"
#include "tinyformer/ops/kernels/attend.hpp"
#include "tinyformer/ops/kernels/causal_head.hpp"
#include "tinyformer/ops/kernels/gelu.hpp"
#include "tinyformer/ops/kernels/matvec.hpp"
#include "tinyformer/ops/kernels/norms.hpp"
#include "tinyformer/ops/kernels/silu.hpp"
#include "tinyformer/ops/kernels/softmax_rows.hpp"
