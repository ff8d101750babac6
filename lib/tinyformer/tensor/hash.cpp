#include "tinyformer/tensor/hash.hpp"

#include <fmt/format.h>

namespace tf {

std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

std::string hex64(std::uint64_t h) { return fmt::format("{:016x}", h); }

}  // namespace tf
