#pragma once
// What the exports to other programs' formats (llama2c.hpp, llmc.hpp) share: little-endian bytes appended to a file's
// contents, and a directory of files written all or nothing.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::checkpoint {

inline void append_raw(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
inline void append_i32(std::string& out, std::int32_t v) { append_raw(out, &v, sizeof v); }
inline void append_floats(std::string& out, const Array<float>& a) {
  append_raw(out, a.data(), a.size() * sizeof(float));
}

// The refusal of a model option the target program does not have, in one line: "export --format FORMAT: FILE has KEY
// VALUE; PROGRAM needs KEY WANTED" (std::invalid_argument), unless ok.
inline void need_option(bool ok, const char* format, const char* program, const std::string& file, const char* key,
                        const std::string& value, const std::string& wanted) {
  if (!ok)
    throw std::invalid_argument(fmt::format("export --format {}: {} has {} {}; {} needs {} {}", format, file, key,
                                            value, program, key, wanted));
}

// Writes the files of `files` (name, bytes) into out_dir (created when missing). Every file is written in full before
// any replaces its target, and a directory made here is removed again when they cannot be: a refused export leaves
// nothing behind. std::runtime_error naming the directory or file that cannot be written.
void write_export_files(const std::string& out_dir, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace tf::checkpoint
