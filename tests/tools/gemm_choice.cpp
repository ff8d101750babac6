// gemm_choice: for each product shape given as OPS M N K (OPS: NN, TN or NT, as a plan line writes them), the library
// that TINYFORMER_GEMM=auto's rule takes (tensor/gemm_plan.hpp) and both libraries timed again, one thread, in
// alternating pairs (tensor/gemm.hpp, check_gemm_choice): one JSON line per shape with the fields of
// `tinyformer bench --check-gemm`. For product shapes that no bench shape has, such as GPT-2 124M's.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/tensor/gemm.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"
#include "tinyformer/tensor/parallel.hpp"
#include "tools/test_tools.hpp"

namespace tf::test_tools {

int gemm_choice(int argc, char** argv) {
  if (argc < 5 || (argc - 1) % 4 != 0) {
    std::fprintf(stderr, "usage: %s OPS M N K [OPS M N K ...]   (OPS: NN, TN or NT)\n", argv[0]);
    return 2;
  }
  try {
    set_num_threads(1);
    std::string lines;
    for (int i = 1; i < argc; i += 4)
      lines += fmt::format("{} {} {} {} openblas\n", argv[i], argv[i + 1], argv[i + 2], argv[i + 3]);
    for (const gemm_plan::Choice& c : gemm_plan::from_text(lines, "gemm_choice's arguments")) {
      const gemm_plan::Backend chosen = gemm_plan::rule(c.shape);
      const GemmCheck check = check_gemm_choice(c.shape, chosen);
      const nlohmann::json j = {{"product", gemm_plan::shape_text(c.shape)},
                                {"chosen", gemm_plan::name(chosen)},
                                {"openblas_us", std::round(check.times.openblas_us * 10) / 10},
                                {"libxsmm_us", std::round(check.times.libxsmm_us * 10) / 10},
                                {"pairs", check.times.pairs},
                                {"choice_speed", std::round(check.choice_speed * 1000) / 1000}};
      std::printf("%s\n", j.dump().c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_choice: %s\n", e.what());
    return 1;
  }
}

}  // namespace tf::test_tools
