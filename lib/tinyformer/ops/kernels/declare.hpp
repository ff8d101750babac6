#pragma once
// Each dispatched kernel's signature is written once, in the list of its header (gelu.hpp, silu.hpp, norms.hpp,
// softmax_rows.hpp, causal_head.hpp, matvec.hpp, attend.hpp, arrays.hpp):
//
//   #define TF_GELU_KERNELS(KERNEL, S) KERNEL(void, gelu_forward, (std::size_t n, const S* x, S* out), (n, x, out)) ...
//
// one KERNEL(result, name, (parameters), (arguments)) a kernel, S standing for the scalar type. The macros below make
// from a list what used to be written by hand five times:
// - the header's declarations, in the level's namespace (kernels/isa.hpp): TF_GELU_KERNELS(TF_KERNEL_DECLARE, S)
// - the source's explicit instantiations for float and double: TF_KERNEL_INSTANTIATE(TF_GELU_KERNELS)
// - in a portable build, kernels/dispatch.cpp's definitions of tf::kernels' functions as calls of the ISA level
//   chosen (TF_KERNEL_DISPATCH), and their instantiations (TF_KERNEL_INSTANTIATE again).
// So a new kernel in one of these files is its line in the header's list and its definition in the source. A new
// kernel file also goes into kernels/dispatched.hpp, dispatch.cpp's list of lists and lib/CMakeLists.txt's
// TINYFORMER_DISPATCHED_KERNELS.

// NOLINTBEGIN(bugprone-macro-parentheses): result is a type and name a function's name, neither may be parenthesised
#define TF_KERNEL_DECLARE(result, name, parameters, arguments) \
  template <class S>                                           \
  result name parameters;

#define TF_KERNEL_FLOAT(result, name, parameters, arguments) template result name<float> parameters;
#define TF_KERNEL_DOUBLE(result, name, parameters, arguments) template result name<double> parameters;
#define TF_KERNEL_INSTANTIATE(LIST) LIST(TF_KERNEL_FLOAT, float) LIST(TF_KERNEL_DOUBLE, double)
// NOLINTEND(bugprone-macro-parentheses)
