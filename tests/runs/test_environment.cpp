// The environment check of the runs API: a C++ program meets the refusals of the CLI and the Python module without
// calling runs::check_environment() itself.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"
#include "tinyformer/ops/kernels/dispatch.hpp"
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/runs/errors.hpp"
#include "tinyformer/runs/training.hpp"

namespace tf {
namespace {

// Sets a variable for the scope, and unsets it at its end.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) { REQUIRE(setenv(name, value, 1) == 0); }
  ~ScopedVariable() { unsetenv(name_); }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
};

}  // namespace

TEST_CASE("runs: train, gradcheck and open_checkpoint refuse a bad TINYFORMER_KERNEL_ISA before any work, as the CLI "
          "does at start") {
  // A native build reads the variable at each check (a portable build chooses its level once per process, so a
  // variable set this late would not be read there).
  if (std::string(kernels::kernel_isa()) != "native") return;
  test::TempDir dir;
  const std::string config = std::string(TINYFORMER_SOURCE_DIR) + "/configs/reverse.yaml";
  const std::filesystem::path out = dir.path() / "run";
  ScopedVariable isa("TINYFORMER_KERNEL_ISA", "avx2");
  const auto refused = [](const runs::Error& e) {
    const std::string m = e.what();
    return e.kind() == runs::ErrorKind::value && m.find("TINYFORMER_KERNEL_ISA=avx2") != std::string::npos &&
           m.find('\n') == std::string::npos;
  };
  runs::TrainOptions options;
  options.config_path = config;
  options.out_dir = out.string();
  options.progress = false;
  CHECK_THROWS_MATCHES(runs::train(options), runs::Error, Catch::Predicate<runs::Error>(refused));
  CHECK_FALSE(std::filesystem::exists(out));
  runs::GradcheckRequest request;
  request.config_path = config;
  request.small = true;
  CHECK_THROWS_MATCHES(runs::gradcheck(request), runs::Error, Catch::Predicate<runs::Error>(refused));
  // Named before the file: a missing checkpoint is not what to fix first, as the CLI says at start.
  CHECK_THROWS_MATCHES(runs::open_checkpoint((dir.path() / "missing.safetensors").string()), runs::Error,
                       Catch::Predicate<runs::Error>(refused));
}

}  // namespace tf
