// blas_core: OpenBLAS's core type as the library chose it when it loaded (tensor/blas_core.hpp), one JSON line:
// running, own, cpu_best, decided_by, and the core types this CPU's features allow, best first.
#include <cstdio>
#include <exception>

#include <nlohmann/json.hpp>

#include "tinyformer/tensor/blas_core.hpp"
#include "tools/test_tools.hpp"

namespace tf::test_tools {

int blas_core(int argc, char** argv) {
  if (argc != 1) {
    std::fprintf(stderr, "usage: %s (no arguments)\n", argv[0]);
    return 2;
  }
  try {
    const blas::CoreChoice& c = blas::core_choice();
    const nlohmann::json j = {{"running", c.running},
                              {"own", c.own},
                              {"cpu_best", c.cpu_best},
                              {"decided_by", c.decided_by},
                              {"candidates", blas::core_types_for(blas::cpu_features())}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blas_core: %s\n", e.what());
    return 1;
  }
}

}  // namespace tf::test_tools
