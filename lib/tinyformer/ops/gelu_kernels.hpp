#pragma once
// The GELU loops (tanh approximation, see gelu.cpp for the formula), shared by the gelu op and the
// linear op's fused GELU. SIMD, split over the threads in blocks that depend only on n.
#include <cstddef>

namespace tf::gelu_kernels {

// out[i] = gelu(x[i])
template <class S>
void forward(std::size_t n, const S* x, S* out);

// out[i] = g[i] * gelu'(x[i])          (accumulate: out[i] += g[i] * gelu'(x[i]))
// out may be g itself (in place).
template <class S>
void backward(std::size_t n, const S* x, const S* g, S* out, bool accumulate);

}  // namespace tf::gelu_kernels
