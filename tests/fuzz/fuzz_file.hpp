#pragma once
// For the file-reader fuzz targets: the input bytes as a file, since the readers take a path. One file per
// process, rewritten for every input (in TMPDIR, /tmp by default).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tf::fuzz {

inline std::string write_input(const std::uint8_t* data, std::size_t size, const char* suffix) {
  const char* dir = std::getenv("TMPDIR");
  std::string path =
      std::string(dir && *dir ? dir : "/tmp") + "/tinyformer_fuzz_" + std::to_string(::getpid()) + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
  return path;
}

}  // namespace tf::fuzz
