#include "tinyformer/runs/environment.hpp"

#include "tinyformer/ops/kernels/dispatch.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"

namespace tf::runs {

void check_environment() {
  gemm_plan::policy();
  kernels::kernel_isa();
}

}  // namespace tf::runs
