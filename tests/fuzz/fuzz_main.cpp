// The entry of the fuzz targets' one executable: the target is the one its link's name says (fuzz_<target>, made
// beside it by tests/fuzz/CMakeLists.txt). With libFuzzer (TINYFORMER_LIBFUZZER, the sanitize preset) it is chosen in
// LLVMFuzzerInitialize and run by LLVMFuzzerTestOneInput; otherwise main runs it on the files named on the command
// line, once each, so that builds without clang also replay the seed corpus and every input a fuzzer once crashed on
// (tests/fuzz/regressions).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_target.hpp"

namespace {

// The target that argv[0] names (fuzz_<target>, any directory); an unknown name ends the process, listing the names.
tf::fuzz::Target target_of(const char* argv0) {
  const char* slash = std::strrchr(argv0, '/');
  const std::string name = slash ? slash + 1 : argv0;
  const auto& all = tf::fuzz::targets();
  if (name.rfind("fuzz_", 0) == 0) {
    const auto it = all.find(name.substr(5));
    if (it != all.end()) return it->second;
  }
  std::string names;
  for (const auto& [known, target] : all) names += " fuzz_" + known;
  std::fprintf(stderr, "%s: start this executable by the name of a target:%s\n", name.c_str(), names.c_str());
  std::exit(2);
}

}  // namespace

#ifdef TINYFORMER_LIBFUZZER
namespace {
tf::fuzz::Target chosen = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** argv) {
  chosen = target_of((*argv)[0]);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { return chosen(data, size); }
#else
int main(int argc, char** argv) {
  const tf::fuzz::Target target = target_of(argv[0]);
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 1;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("ran %d inputs\n", argc - 1);
  return 0;
}
#endif
