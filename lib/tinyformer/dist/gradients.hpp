#pragma once
// The data-parallel gradient: every rank's parameter gradients summed over the ranks through one flat buffer
// (dist::allreduce_sum, the same bits on every rank) and scaled, in place.
#include <vector>

#include "tinyformer/autograd/variable.hpp"

namespace tf::dist {

class GradientAllReduce {
 public:
  // grad = scale * (sum over ranks of grad), for every parameter that has a gradient on this rank. A parameter
  // without one contributes zeros and stays without one: every rank runs the same model, so a parameter lacks a
  // gradient on some ranks only when a loss was not finite there, and then no rank applies the step. With one
  // process this only scales (and does nothing when scale is 1). A Var listed twice counts once.
  // Collective. Returns the milliseconds spent in the all-reduce itself (0 with one process).
  double operator()(const std::vector<Var<float>>& params, float scale);

  // All-reduce bytes per step: 4 x the number of parameter elements (float32).
  std::size_t bytes() const { return flat_.size() * sizeof(float); }

 private:
  std::vector<float> flat_;  // [sum of parameter sizes], reused from step to step
};

}  // namespace tf::dist
