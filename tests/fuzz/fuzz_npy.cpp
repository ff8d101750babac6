// libFuzzer target: the .npy reader. Every input must either read or be refused with std::runtime_error
// naming the file; a crash, a sanitizer report or another exception is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fuzz_file.hpp"
#include "fuzz_target.hpp"
#include "tinyformer/io/npy.hpp"

TINYFORMER_FUZZ_TARGET(npy) {
  const std::string path = tf::fuzz::write_input(data, size, ".npy");
  const auto refused_well = [&](const std::runtime_error& e) {
    if (std::string(e.what()).find(path) == std::string::npos) __builtin_trap();  // the message names the file
  };
  try {
    const tf::io::NpyHeader h = tf::io::read_npy_header(path);
    if (h.data_offset > size) __builtin_trap();
  } catch (const std::runtime_error& e) {
    refused_well(e);
  }
  try {
    tf::io::read_npy_f32(path);
  } catch (const std::runtime_error& e) {
    refused_well(e);
  }
  try {
    tf::io::read_npy_f64(path, 2);
  } catch (const std::runtime_error& e) {
    refused_well(e);
  }
  try {
    const tf::IndexArray ids = tf::io::read_npy_index(path);
    if (ids.size() * sizeof(std::uint8_t) > size) __builtin_trap();  // never more values than bytes
  } catch (const std::runtime_error& e) {
    refused_well(e);
  }
  return 0;
}
