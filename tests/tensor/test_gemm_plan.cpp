// The choice of library per product shape (tensor/gemm_plan.hpp): a forced policy is obeyed bit for bit, auto
// follows its rule, measure measures a shape once and keeps its choice, and a plan survives its text form. No timing
// is asserted.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/openblas_product.hpp"
#include "tinyformer/tensor/blas_core.hpp"
#include "tinyformer/tensor/gemm.hpp"
#include "tinyformer/tensor/gemm_plan.hpp"
#include "tinyformer/tensor/gemm_xsmm.hpp"

using namespace tf;
using gemm_plan::Backend;
using gemm_plan::Policy;

namespace {

std::vector<float> float_values(std::size_t n, unsigned seed) {
  std::vector<float> v(n);
  unsigned x = seed * 2654435761u + 1;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return v;
}

// Restores the policy in force before the test (and forgets the test's plan).
struct PolicyGuard {
  Policy saved = gemm_plan::policy();
  ~PolicyGuard() { gemm_plan::set_policy(saved); }
};

// The plan's choice for shape `s`, a copy (plan() returns the plan by value), or none.
std::optional<gemm_plan::Choice> find_choice(const std::vector<gemm_plan::Choice>& plan, const gemm_plan::Shape& s) {
  for (const auto& c : plan)
    if (c.shape == s) return c;
  return std::nullopt;
}

}  // namespace

TEST_CASE("gemm plan: a forced library computes every product it can take, bit for bit as that library alone",
          "[tensor][gemm]") {
  PolicyGuard guard;
  // A B, A^T B and A B^T, small and cut into pieces (300 x 170 x 600: 30M multiply-adds), beta 0 and 1
  for (GemmShape s : {GemmShape{40, 24, 56}, GemmShape{300, 170, 600}})
    for (auto [ta, tb] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}})
      for (float beta : {0.0f, 1.0f}) {
        INFO("m " << s.m << " n " << s.n << " k " << s.k << " ta " << ta << " tb " << tb << " beta " << beta);
        const auto a = float_values(s.m * s.k, 1), b = float_values(s.k * s.n, 2), c0 = float_values(s.m * s.n, 3);
        const std::size_t lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n;
        std::vector<float> want = c0, got = c0;
        gemm_plan::set_policy(Policy::openblas);
        test::openblas_sgemm(ta, tb, s, a.data(), b.data(), beta, want.data());
        gemm_whole<float>(ta, tb, s, 1.0f, a.data(), b.data(), beta, got.data());
        CHECK(got == want);
        std::optional<gemm_plan::Choice> c = find_choice(gemm_plan::plan(), {ta, tb, s.m, s.n, s.k});
        REQUIRE(c.has_value());
        CHECK(c->backend == Backend::openblas);
        if (!xsmm::built_in()) continue;
        gemm_plan::set_policy(Policy::libxsmm);
        std::vector<float> xsmm_want = c0, xsmm_got = c0;
        REQUIRE(xsmm::product(ta, tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, beta, xsmm_want.data(), s.n));
        gemm_whole<float>(ta, tb, s, 1.0f, a.data(), b.data(), beta, xsmm_got.data());
        CHECK(xsmm_got == xsmm_want);
        // and libxsmm's product is the product: within float rounding of OpenBLAS's
        for (std::size_t i = 0; i < want.size(); ++i) CHECK(xsmm_got[i] == Approx(want[i]).epsilon(1e-4).margin(1e-3));
        c = find_choice(gemm_plan::plan(), {ta, tb, s.m, s.n, s.k});
        REQUIRE(c.has_value());
        CHECK(c->backend == Backend::libxsmm);
      }
}

TEST_CASE(
    "gemm plan: auto takes each shape's library by its rule, from the shape and a vector width both libraries run at",
    "[tensor][gemm]") {
  using S = gemm_plan::Shape;
  const std::size_t p26 = std::size_t{1} << 26, p27 = std::size_t{1} << 27;
  for (int bits : {512, 256}) {
    INFO(bits << " bits");
    // A B and A B^T: op(B) of at most 512 columns and 393216 elements
    for (bool tb : {false, true}) {
      CHECK(gemm_plan::rule(S{false, tb, 1024, 512, 64}, bits, bits, true) == Backend::libxsmm);
      CHECK(gemm_plan::rule(S{false, tb, 1024, 513, 64}, bits, bits, true) == Backend::openblas);
      CHECK(gemm_plan::rule(S{false, tb, 64, 384, 1024}, bits, bits, true) == Backend::libxsmm);  // 393216
      CHECK(gemm_plan::rule(S{false, tb, 64, 384, 1025}, bits, bits, true) == Backend::openblas);
      CHECK(gemm_plan::rule(S{false, tb, 256, 192, 50304}, bits, bits, true) ==
            Backend::openblas);  // GPT-2's lm_head dX
    }
    // A^T B: up to 2^27 multiply-adds with 512 bits, 2^26 with 256
    const std::size_t most = bits == 512 ? p27 : p26;
    CHECK(gemm_plan::rule(S{true, false, most / 4096, 64, 64}, bits, bits, true) == Backend::libxsmm);
    CHECK(gemm_plan::rule(S{true, false, most / 4096 + 1, 64, 64}, bits, bits, true) == Backend::openblas);
  }
  // 512 bits: no limit of multiply-adds on A B and A B^T within op(B)'s; 256 bits: 2^27 for A B, 2^26 for A B^T
  CHECK(gemm_plan::rule(S{false, false, 1 << 20, 256, 1024}, 512, 512, true) == Backend::libxsmm);
  CHECK(gemm_plan::rule(S{false, true, 1 << 20, 256, 1024}, 512, 512, true) == Backend::libxsmm);
  CHECK(gemm_plan::rule(S{false, false, p27 / 65536, 256, 256}, 256, 256, true) == Backend::libxsmm);
  CHECK(gemm_plan::rule(S{false, false, p27 / 65536 + 1, 256, 256}, 256, 256, true) == Backend::openblas);
  CHECK(gemm_plan::rule(S{false, true, p26 / 65536, 256, 256}, 256, 256, true) == Backend::libxsmm);
  CHECK(gemm_plan::rule(S{false, true, p26 / 65536 + 1, 256, 256}, 256, 256, true) == Backend::openblas);
  // no libxsmm kernels (older x86 levels, other CPUs): OpenBLAS
  for (int bits : {0, 128}) CHECK(gemm_plan::rule(S{false, false, 8, 8, 8}, bits, bits, true) == Backend::openblas);
  // an OpenBLAS core type that blas::vector_bits does not know (0): the rule of libxsmm's width alone
  CHECK(gemm_plan::rule(S{false, false, 1024, 513, 64}, 512, 0, true) == Backend::openblas);
  CHECK(gemm_plan::rule(S{false, false, 1024, 512, 64}, 512, 0, true) == Backend::libxsmm);

  // Products under auto record the rule's choice, with no time, whatever ran before: the same in any process.
  PolicyGuard guard;
  gemm_plan::set_policy(Policy::automatic);
  const GemmShape small{64, 48, 96}, large{512, 512, 1024};
  const auto a = float_values(large.m * large.k, 4), b = float_values(large.k * large.n, 5);
  std::vector<float> c(large.m * large.n);
  for (GemmShape s : {small, large})
    for (auto [ta, tb] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}})
      gemm_whole<float>(ta, tb, s, 1.0f, a.data(), b.data(), 0.0f, c.data());
  const auto plan = gemm_plan::plan();
  if (!xsmm::built_in()) {  // one library: nothing to choose, nothing recorded
    CHECK(plan.empty());
    return;
  }
  CHECK(plan.size() == 6);
  for (const gemm_plan::Choice& choice : plan) {
    INFO(gemm_plan::to_text({choice}));
    CHECK(choice.backend == gemm_plan::rule(choice.shape));
    CHECK(choice.backend == gemm_plan::rule(choice.shape, xsmm::vector_bits(),
                                            blas::vector_bits(blas::core_choice().running), blas::cpu_features().amd));
    CHECK(choice.openblas_us == 0);
    CHECK(choice.libxsmm_us == 0);
  }
}

TEST_CASE("gemm plan: where OpenBLAS's kernels and libxsmm's differ in width, auto takes the wider for every product "
          "but A B (on Intel's, A B^T too) over a large op(B) at twice the width",
          "[tensor][gemm]") {
  using S = gemm_plan::Shape;
  // each kind of product, from the smallest to past every limit of the same-width rule
  const S shapes[] = {{false, false, 8, 8, 8},         {false, true, 64, 48, 96},
                      {true, false, 64, 64, 64},       {false, false, 256, 192, 16384},
                      {false, false, 256, 4096, 1024},  // op(B) 2^22 values
                      {false, true, 256, 12576, 768},  {true, false, 12576, 768, 256},
                      {true, false, 256, 192, 50304},  {false, false, 1 << 20, 1024, 1024}};
  for (const S& s : shapes) {
    INFO(gemm_plan::shape_text(s));
    CHECK(gemm_plan::rule(s, 512, 256, true) == Backend::libxsmm);  // OPENBLAS_CORETYPE=Haswell on an AVX-512 AMD CPU
    CHECK(gemm_plan::rule(s, 512, 128, true) == Backend::libxsmm);  // OpenBLAS's SSE fallback
    CHECK(gemm_plan::rule(s, 256, 128, true) == Backend::libxsmm);
    CHECK(gemm_plan::rule(s, 256, 512, true) == Backend::openblas);  // LIBXSMM_TARGET=hsw on an AVX-512 CPU
    CHECK(gemm_plan::rule(s, 0, 512, true) == Backend::openblas);    // no libxsmm kernels
    CHECK(gemm_plan::rule(s, 512, 128, false) == Backend::libxsmm);  // four times as wide: Intel's too
    CHECK(gemm_plan::rule(s, 256, 512, false) == Backend::openblas);
  }
  // A B whose op(B) is past 2^22 values: GPT-2's lm_head dX, and one value past the line
  for (const S& s : {S{false, false, 256, 192, 50304}, S{false, false, 256, 4096, 1025}}) {
    INFO(gemm_plan::shape_text(s));
    for (bool amd : {true, false}) {
      CHECK(gemm_plan::rule(s, 512, 256, amd) == Backend::openblas);
      CHECK(gemm_plan::rule(s, 256, 128, amd) == Backend::openblas);
      CHECK(gemm_plan::rule(s, 512, 128, amd) == Backend::libxsmm);  // four times as wide
      CHECK(gemm_plan::rule(s, 256, 512, amd) == Backend::openblas);
    }
  }
  // On Intel's CPUs the line is 2^21 values of op(B), for A B and A B^T alike (GPT-2's products on an Emerald Rapids)
  const S intel_libxsmm[] = {{false, false, 256, 768, 768},  {false, false, 256, 2048, 1024},  // 2^21 values
                             {false, true, 256, 1536, 768},  {false, true, 256, 2048, 1024},
                             {true, false, 12576, 768, 256}, {true, false, 256, 192, 50304}};
  const S intel_openblas[] = {{false, false, 256, 768, 3072},
                              {false, false, 256, 2048, 1025},
                              {false, true, 256, 12576, 768},
                              {false, true, 256, 2049, 1024}};
  for (const S& s : intel_libxsmm) {
    INFO(gemm_plan::shape_text(s));
    CHECK(gemm_plan::rule(s, 512, 256, false) == Backend::libxsmm);
  }
  for (const S& s : intel_openblas) {
    INFO(gemm_plan::shape_text(s));
    CHECK(gemm_plan::rule(s, 512, 256, false) == Backend::openblas);
    CHECK(gemm_plan::rule(s, 512, 128, false) == Backend::libxsmm);  // four times as wide
  }
  // the widths of OpenBLAS's core types
  CHECK(blas::vector_bits("SapphireRapids") == 512);
  CHECK(blas::vector_bits("cooperlake") == 512);
  CHECK(blas::vector_bits("SkylakeX") == 512);
  CHECK(blas::vector_bits("Haswell") == 256);
  CHECK(blas::vector_bits("Zen") == 256);
  CHECK(blas::vector_bits("Sandybridge") == 128);
  CHECK(blas::vector_bits("Prescott") == 128);
  CHECK(blas::vector_bits("NEOVERSEN1") == 0);
}

TEST_CASE("gemm plan: measure measures a shape once, records both libraries' times and keeps the faster",
          "[tensor][gemm]") {
  PolicyGuard guard;
  gemm_plan::set_policy(Policy::measure);
  const GemmShape s{64, 48, 96};
  const auto a = float_values(s.m * s.k, 4), b = float_values(s.k * s.n, 5);
  std::vector<float> c(s.m * s.n);
  gemm<float>(true, false, s, 1.0f, a.data(), b.data(), 0.0f, c.data());
  const auto plan = gemm_plan::plan();
  if (!xsmm::built_in()) {  // one library: nothing to measure, nothing to record
    CHECK(plan.empty());
    return;
  }
  REQUIRE(plan.size() == 1);
  const gemm_plan::Choice first = plan[0];
  CHECK(first.shape == gemm_plan::Shape{true, false, 64, 48, 96});
  CHECK(first.openblas_us > 0);
  CHECK(first.libxsmm_us > 0);
  // The choice follows the median of the paired time ratios (tensor/gemm.cpp, choose), which two close medians of
  // the times need not agree with: a sanitizer run beside other jobs once chose OpenBLAS with libxsmm's median lower.
  // Where one library is clearly faster (by a quarter), the choice must be it.
  const double faster = std::min(first.libxsmm_us, first.openblas_us);
  if (std::max(first.libxsmm_us, first.openblas_us) > 1.25 * faster)
    CHECK(first.backend == (first.libxsmm_us < first.openblas_us ? Backend::libxsmm : Backend::openblas));
  for (int i = 0; i < 3; ++i) gemm<float>(true, false, s, 1.0f, a.data(), b.data(), 1.0f, c.data());
  const auto again = gemm_plan::plan();
  REQUIRE(again.size() == 1);
  CHECK(again[0].openblas_us == first.openblas_us);  // not measured again
  // A^T B^T has no libxsmm kernel, and alpha 0.5 none either: they run on OpenBLAS without a measurement.
  gemm<float>(true, true, s, 1.0f, a.data(), b.data(), 0.0f, c.data());
  gemm<float>(true, false, {32, 48, 96}, 0.5f, a.data(), b.data(), 0.0f, c.data());
  CHECK(gemm_plan::plan().size() == 1);
  // A B^T is measured (libxsmm with B transposed first) as a shape of its own
  gemm<float>(false, true, s, 1.0f, a.data(), b.data(), 0.0f, c.data());
  const auto with_nt = gemm_plan::plan();
  REQUIRE(with_nt.size() == 2);
  CHECK(std::any_of(with_nt.begin(), with_nt.end(), [&](const gemm_plan::Choice& ch) {
    return ch.shape == gemm_plan::Shape{false, true, 64, 48, 96} && ch.openblas_us > 0 && ch.libxsmm_us > 0;
  }));
}

TEST_CASE("gemm plan: a replayed plan is followed without measuring, and survives its text form", "[tensor][gemm]") {
  PolicyGuard guard;
  gemm_plan::set_policy(Policy::measure);
  const Backend other = xsmm::built_in() ? Backend::libxsmm : Backend::openblas;
  std::vector<gemm_plan::Choice> recorded{{{false, false, 32, 16, 32}, Backend::openblas, 0, 0},
                                          {{true, false, 64, 192, 1024}, other, 0, 0},
                                          {{false, true, 1024, 64, 192}, Backend::openblas, 0, 0}};
  const std::string text = gemm_plan::to_text(recorded);
  CHECK(text ==
        std::string("NN 32 16 32 openblas\nTN 64 192 1024 ") + gemm_plan::name(other) + "\nNT 1024 64 192 openblas\n");
  const auto parsed = gemm_plan::from_text("# a comment\n\n" + text, "plan.txt");
  REQUIRE(parsed.size() == recorded.size());
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    CHECK(parsed[i].shape == recorded[i].shape);
    CHECK(parsed[i].backend == recorded[i].backend);
  }
  gemm_plan::replay(parsed);
  const GemmShape s{64, 192, 1024};
  const auto a = float_values(s.m * s.k, 6), b = float_values(s.k * s.n, 7);
  std::vector<float> c(s.m * s.n);
  gemm_whole<float>(true, false, s, 1.0f, a.data(), b.data(), 0.0f, c.data());
  const auto plan = gemm_plan::plan();
  CHECK(plan.size() == 3);  // nothing new
  const std::optional<gemm_plan::Choice> choice = find_choice(plan, {true, false, 64, 192, 1024});
  REQUIRE(choice.has_value());
  CHECK(choice->backend == other);
  CHECK(choice->openblas_us == 0);  // replayed, not measured
}

TEST_CASE("gemm plan: every malformed plan line is refused with its line number and what a line holds",
          "[tensor][gemm]") {
  const std::string good = "NN 32 16 32 openblas";
  // Each field of a good line replaced by a wrong value, and lines with a field missing or one too many.
  const std::vector<std::vector<std::string>> wrong{{"NX", "N", "TNT", "nn", "11", ""},
                                                    {"0", "-3", "x", "1.5", ""},
                                                    {"0", "-1", "y", ""},
                                                    {"0", "-7", "z", ""},
                                                    {"blas", "xsmm", "OpenBLAS", ""}};
  std::vector<std::string> lines;
  for (std::size_t field = 0; field < wrong.size(); ++field)
    for (const std::string& value : wrong[field]) {
      std::vector<std::string> parts{"NN", "32", "16", "32", "openblas"};
      parts[field] = value;
      std::string line;
      for (const auto& p : parts)
        if (!p.empty()) line += (line.empty() ? "" : " ") + p;
      lines.push_back(line);
    }
  lines.push_back(good + " extra");
  for (const std::string& line : lines) {
    INFO("line '" << line << "'");
    const std::string text = std::string(good).append("\n").append(good).append("\n").append(line).append("\n");
    CHECK_THROWS_WITH(gemm_plan::from_text(text, "plan.txt"),
                      Catch::Contains("plan.txt, line 3") && (Catch::Contains("expected NN, NT, TN or TT") ||
                                                              Catch::Contains("expected openblas or libxsmm")));
  }
  CHECK_THROWS_WITH(gemm_plan::parse_policy("fast", "TINYFORMER_GEMM"),
                    "TINYFORMER_GEMM='fast': expected auto, measure, openblas or libxsmm");
  CHECK(gemm_plan::parse_policy("auto", "TINYFORMER_GEMM") == Policy::automatic);
  CHECK(gemm_plan::parse_policy("measure", "TINYFORMER_GEMM") == Policy::measure);
  CHECK(gemm_plan::parse_policy("openblas", "TINYFORMER_GEMM") == Policy::openblas);
}
