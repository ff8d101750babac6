#include "tinyformer/tensor/utf8.hpp"

#include <fmt/format.h>

namespace tf {

std::size_t utf8_split(const std::string& bytes, std::vector<std::string>& chars) {
  chars.clear();
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b0 < 0x80) {
      len = 1;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      if (b0 == 0xE0) lo = 0xA0;  // no overlong 3-byte forms
      if (b0 == 0xED) hi = 0x9F;  // no surrogates U+D800..U+DFFF
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      if (b0 == 0xF0) lo = 0x90;  // no overlong 4-byte forms
      if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
      return i;  // continuation byte without a lead, 0xC0/0xC1 (overlong) or 0xF5..0xFF
    }
    if (i + len > n) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(bytes[i + k]);
      const unsigned char klo = k == 1 ? lo : 0x80, khi = k == 1 ? hi : 0xBF;
      if (b < klo || b > khi) return i;
    }
    chars.emplace_back(bytes, i, len);
    i += len;
  }
  return std::string::npos;
}

std::string byte_position_str(const std::string& bytes, std::size_t offset) {
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < offset && i < bytes.size(); ++i)
    if (bytes[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  const std::string byte =
      offset < bytes.size() ? fmt::format(", byte 0x{:02x}", static_cast<unsigned char>(bytes[offset])) : std::string();
  return fmt::format("line {}, column {} (byte offset {}{})", line, offset - line_start + 1, offset, byte);
}

}  // namespace tf
