// One executable for the test tools, chosen by the name it is started under (a link per tool, made by
// tests/CMakeLists.txt), or by its first argument: `tinyformer_test_tools logits_dump ...`. One executable instead of
// four compiles the headers they share once: the four sources took 24.7 CPU s apart and 11.0-11.9 as one batch in the
// release build (GCC 12, -O1), 25.5 and 10.9 in the sanitizer build (clang 14, -O0; docs/build.md).
#include <cstdio>
#include <cstring>

#include "tools/test_tools.hpp"

namespace {

struct Tool {
  const char* name;
  int (*run)(int, char**);
};

constexpr Tool kTools[] = {
    {"parity_dump", tf::test_tools::parity_dump},       {"bad_files", tf::test_tools::bad_files},
    {"logits_dump", tf::test_tools::logits_dump},       {"encode_text", tf::test_tools::encode_text},
    {"runs_probe", tf::test_tools::runs_probe},         {"blas_core", tf::test_tools::blas_core},
    {"int8_agreement", tf::test_tools::int8_agreement}, {"gemm_choice", tf::test_tools::gemm_choice}};

const Tool* find_tool(const char* path) {
  const char* slash = std::strrchr(path, '/');
  const char* name = slash != nullptr ? slash + 1 : path;
  for (const Tool& tool : kTools) {
    if (std::strcmp(tool.name, name) == 0) return &tool;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 0) {
    if (const Tool* tool = find_tool(argv[0])) return tool->run(argc, argv);
    if (argc > 1) {
      if (const Tool* tool = find_tool(argv[1])) return tool->run(argc - 1, argv + 1);
    }
  }
  std::fprintf(stderr, "usage: tinyformer_test_tools TOOL [ARGS...], or a link named after TOOL; TOOL one of:");
  for (const Tool& tool : kTools) std::fprintf(stderr, " %s", tool.name);
  std::fprintf(stderr, "\n");
  return 2;
}
