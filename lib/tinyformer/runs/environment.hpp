#pragma once
// The environment variables of tinyformer's own that choose how it computes, checked before any work by every front
// end: the CLI when it starts, the Python module when it is imported, and runs::train, runs::gradcheck and
// runs::open_checkpoint (every other runs:: call that computes takes the model the last one opened) before their
// work, so that a C++ program meets the same refusals without calling it. Without the one check, a native build's
// Python module ignored a TINYFORMER_KERNEL_ISA that the CLI refused.
//   TINYFORMER_GEMM, TINYFORMER_GEMM_PLAN  the library of each product (tensor/gemm_plan.hpp)
//   TINYFORMER_KERNEL_ISA                  a portable build's kernel level (ops/kernels/dispatch.hpp)
// Throws std::invalid_argument, one line naming the variable, its value and what would be valid.
namespace tf::runs {

void check_environment();

}  // namespace tf::runs
