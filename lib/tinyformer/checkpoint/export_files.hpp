#pragma once
// What the exports to other programs' formats (llama2c.hpp, llmc.hpp) share: little-endian bytes appended to a file's
// contents, and a directory of files written all or nothing.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::checkpoint {

inline void append_raw(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
inline void append_i32(std::string& out, std::int32_t v) { append_raw(out, &v, sizeof v); }
inline void append_floats(std::string& out, const Array<float>& a) {
  append_raw(out, a.data(), a.size() * sizeof(float));
}

// Writes the files of `files` (name, bytes) into out_dir (created when missing). Every file is written in full before
// any replaces its target, and a directory made here is removed again when they cannot be: a refused export leaves
// nothing behind. std::runtime_error naming the directory or file that cannot be written.
void write_export_files(const std::string& out_dir, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace tf::checkpoint
