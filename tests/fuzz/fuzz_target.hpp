#pragma once
// The seven fuzz targets are one executable (tests/fuzz/CMakeLists.txt), started by a link named fuzz_<target>:
// the headers they share are compiled and linked once. Each target's source defines its entry point with
// TINYFORMER_FUZZ_TARGET(name) { ... }, a function of (data, size) registered under its name; fuzz_main.cpp
// chooses the one its link names, as libFuzzer's LLVMFuzzerTestOneInput (TINYFORMER_LIBFUZZER) or as a main that
// replays files.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace tf::fuzz {

using Target = int (*)(const std::uint8_t* data, std::size_t size);

// Every target, by name (a function's static: filled by the targets' registrations before main).
inline std::map<std::string, Target>& targets() {
  static std::map<std::string, Target> all;
  return all;
}

struct Registration {
  Registration(const char* name, Target target) { targets()[name] = target; }
};

}  // namespace tf::fuzz

#define TINYFORMER_FUZZ_TARGET(name)                                                                      \
  static int tinyformer_fuzz_##name(const std::uint8_t* data, std::size_t size);                          \
  static const tf::fuzz::Registration tinyformer_fuzz_registration_##name(#name, tinyformer_fuzz_##name); \
  static int tinyformer_fuzz_##name(const std::uint8_t* data, std::size_t size)
