#pragma once
// The constants of one Adam or AdamW step (optim/adam.cpp computes them, kernels/arrays.hpp's adam_update applies
// them), one definition for every ISA level's kernels. Per element, with g the gradient:
//   p = p decay_factor                               (decoupled: AdamW's weight decay)
//   g = g + wd p                                     (l2: Adam's weight decay, on the gradient)
//   m = m beta1 + (1 - beta1) g,  v = v beta2 + (1 - beta2) g^2
//   p = p + neg_step_size m / (sqrt(v) / bias_correction2_sqrt + eps)
namespace tf::kernels {

template <class S>
struct AdamStep {
  S beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
  S neg_step_size, bias_correction2_sqrt;
  S wd, decay_factor;
  bool l2, decoupled;
};

}  // namespace tf::kernels
