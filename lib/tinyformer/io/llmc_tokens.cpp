#include "tinyformer/io/llmc_tokens.hpp"

#include <unistd.h>

#include <cstring>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/tensor/files.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "llm.c's token files are little-endian");

namespace tf::io {

namespace {
constexpr std::int32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = kLlmcTokensHeaderInts * sizeof(std::int32_t);
}  // namespace

bool is_llmc_tokens(const std::string& path) {
  const int fd = open_regular_file(path);
  std::int32_t magic = 0;
  const ssize_t n = ::read(fd, &magic, sizeof magic);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof magic) && magic == kLlmcTokensMagic;
}

std::vector<Index> read_llmc_tokens(const std::string& path) {
  const std::string bytes = read_regular_file(path);
  auto fail = [&](const std::string& why) {
    throw std::runtime_error(fmt::format("{}: not an llm.c token file: {}", path, why));
  };
  if (bytes.size() < kHeaderBytes)
    fail(fmt::format("{} bytes, shorter than its header of 256 int32 ({} bytes)", bytes.size(), kHeaderBytes));
  std::int32_t header[3];
  std::memcpy(header, bytes.data(), sizeof header);
  if (header[0] != kLlmcTokensMagic) fail(fmt::format("magic {}, not {}", header[0], kLlmcTokensMagic));
  if (header[1] != kVersion) fail(fmt::format("version {}; llm.c's uint16 token files are version 1", header[1]));
  if (header[2] <= 0) fail(fmt::format("a token count of {} (llm.c needs at least one token)", header[2]));
  const auto n = static_cast<std::size_t>(header[2]);
  if (bytes.size() != kHeaderBytes + n * sizeof(std::uint16_t))
    fail(fmt::format("its header counts {} tokens, {} bytes after the header, but the file has {}", n,
                     n * sizeof(std::uint16_t), bytes.size() - kHeaderBytes));
  std::vector<std::uint16_t> raw(n);
  std::memcpy(raw.data(), bytes.data() + kHeaderBytes, n * sizeof(std::uint16_t));
  return std::vector<Index>(raw.begin(), raw.end());
}

std::string llmc_tokens_bytes(const std::vector<Index>& ids, const std::string& what) {
  if (ids.empty() || ids.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::invalid_argument(
        fmt::format("{}: {} tokens; an llm.c token file holds 1 to 2^31 - 1", what, ids.size()));
  std::vector<std::uint16_t> raw(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || static_cast<std::size_t>(ids[i]) >= kLlmcMaxVocabulary)
      throw std::invalid_argument(fmt::format("{}: token id {} at position {}; llm.c's token files hold uint16 ids, "
                                              "0 to {}",
                                              what, ids[i], i, kLlmcMaxVocabulary - 1));
    raw[i] = static_cast<std::uint16_t>(ids[i]);
  }
  std::int32_t header[kLlmcTokensHeaderInts] = {kLlmcTokensMagic, kVersion, static_cast<std::int32_t>(ids.size())};
  std::string out(reinterpret_cast<const char*>(header), kHeaderBytes);
  out.append(reinterpret_cast<const char*>(raw.data()), raw.size() * sizeof(std::uint16_t));
  return out;
}

}  // namespace tf::io
