// OpenBLAS's core type (tensor/blas_core.hpp): every subset of the deciding CPU features gets core types that need
// only features it has (a wrong one dies with SIGILL), best first, and a CPU with more features never gets a lower
// class; in this process the choice made at load never lowered OpenBLAS's own.
#include <catch2/catch.hpp>

#include "tinyformer/tensor/blas_core.hpp"

using namespace tf;

namespace {

// The features a core type's kernels use.
bool runs_on(const std::string& core, const blas::CpuFeatures& f) {
  if (core == "SapphireRapids") return f.avx512 && f.avx512_bf16 && f.amx;
  if (core == "Cooperlake") return f.avx512 && f.avx512_bf16;
  if (core == "SkylakeX") return f.avx512;
  if (core == "Haswell" || core == "Zen") return f.avx2 && f.fma;
  if (core == "Sandybridge") return f.avx;
  if (core == "Nehalem") return f.sse4_2;
  return false;
}

blas::CpuFeatures features_of(unsigned bits) {
  blas::CpuFeatures f;
  f.sse4_2 = bits & 1, f.avx = bits & 2, f.avx2 = bits & 4, f.fma = bits & 8, f.avx512 = bits & 16;
  f.avx512_bf16 = bits & 32, f.amx = bits & 64, f.amd = bits & 128;
  return f;
}

int best_class(const blas::CpuFeatures& f) {
  const auto cores = blas::core_types_for(f);
  return cores.empty() ? 0 : blas::core_class(cores.front());
}

}  // namespace

TEST_CASE("blas: every set of CPU features gets core types it can run, best first, more features never worse",
          "[blas]") {
  for (unsigned bits = 0; bits < 256; ++bits) {
    const blas::CpuFeatures f = features_of(bits);
    INFO("features " << bits);
    const auto cores = blas::core_types_for(f);
    for (std::size_t i = 0; i < cores.size(); ++i) {
      CHECK(runs_on(cores[i], f));
      CHECK(blas::core_class(cores[i]) > 0);
      if (i > 0) CHECK(blas::core_class(cores[i]) < blas::core_class(cores[i - 1]));
    }
    for (unsigned more = 0; more < 8; ++more)  // one feature added
      CHECK(best_class(features_of(bits | (1u << more))) >= best_class(f));
  }
  CHECK(blas::core_types_for(features_of(1 | 2 | 4 | 8 | 16 | 32)).front() == "Cooperlake");
  CHECK(blas::core_types_for(features_of(1 | 2 | 4 | 8 | 128)).front() == "Zen");
  CHECK(blas::core_class("PRESCOTT") == 1);
  CHECK(blas::core_class("nonsense") == 0);
}

TEST_CASE("blas: the core type chosen at load is one of this CPU's and never below OpenBLAS's own", "[blas]") {
  const blas::CoreChoice& c = blas::core_choice();
  INFO(c.running << " (own " << c.own << ", best for the CPU " << c.cpu_best << ", " << c.decided_by << ")");
  CHECK(!c.running.empty());
  CHECK(blas::core_class(c.running) >= blas::core_class(c.own));
  if (c.decided_by == "tinyformer") {
    bool listed = false;
    for (const auto& core : blas::core_types_for(blas::cpu_features())) listed = listed || core == c.running;
    CHECK(listed);
  } else {
    CHECK(c.running == c.own);
  }
}

TEST_CASE("blas: a run's header names a user's OPENBLAS_CORETYPE below the CPU's best, and nothing else", "[blas]") {
  blas::CoreChoice c;
  c.running = c.own = "Haswell", c.cpu_best = "Cooperlake", c.decided_by = "OPENBLAS_CORETYPE";
  const std::string note = blas::held_back_note(c);
  CHECK_THAT(note, Catch::StartsWith("OPENBLAS_CORETYPE holds OpenBLAS at its Haswell kernels (256-bit)"));
  CHECK_THAT(note, Catch::Contains("Cooperlake (512-bit)") && Catch::Contains("tinyformer bench --gemm"));
  c.running = "Zen", c.cpu_best = "Haswell";  // another name of the same class
  CHECK(blas::held_back_note(c).empty());
  c.running = "SkylakeX", c.cpu_best = "Cooperlake";  // the same width, a lower class
  CHECK_THAT(blas::held_back_note(c), Catch::Contains("SkylakeX kernels (512-bit)"));
  c.running = "Cooperlake";  // the user's choice is the best
  CHECK(blas::held_back_note(c).empty());
  c.running = "Haswell", c.decided_by = "tinyformer";  // not the user's choice
  CHECK(blas::held_back_note(c).empty());
  c.decided_by = "OPENBLAS_CORETYPE", c.cpu_best = "";  // a CPU with nothing beyond the baseline
  CHECK(blas::held_back_note(c).empty());
  c.cpu_best = "Cooperlake", c.running = "ARMV8";  // a name the classes do not know
  CHECK(blas::held_back_note(c).empty());
}
