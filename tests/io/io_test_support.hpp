#pragma once
#include "support/temp_dir.hpp"
// Helpers for the io tests: a fresh temporary directory per test, raw file bytes, and the message of the
// std::runtime_error an expression throws.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>

namespace tf::test {

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string le_u64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// The message of the std::runtime_error that f throws; fails the test if f returns normally.
// Other exception types propagate and fail the test too.
template <class F>
std::string runtime_error_of(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  FAIL("expected a std::runtime_error, but nothing was thrown");
  return {};
}

}  // namespace tf::test
