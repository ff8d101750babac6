#include "tinyformer/data/text_stream.hpp"

namespace tf::data {

namespace {

// The bytes a UTF-8 character that starts with `lead` has: 2 to 4 for a lead byte, 0 for a continuation byte or a
// byte that no character starts with, 1 for ASCII.
std::size_t utf8_length(int lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

}  // namespace

std::size_t TextStream::incomplete_tail(const std::vector<Index>& ids) const {
  // walk back over at most 3 continuation bytes to the byte that starts the last character
  for (std::size_t back = 1; back <= 4 && back <= ids.size(); ++back) {
    const int byte = vocab_.byte_of(ids[ids.size() - back]);
    if (byte < 0) return 0;                      // a piece that is not a byte: nothing waits
    if ((byte & 0xC0) == 0x80) continue;         // a continuation byte
    return back < utf8_length(byte) ? back : 0;  // a lead byte: complete, or missing bytes
  }
  return 0;  // only continuation bytes: invalid whatever follows
}

std::string TextStream::next(const std::vector<Index>& ids, bool last) {
  const std::size_t end = last ? ids.size() : ids.size() - incomplete_tail(ids);
  if (end <= returned_) return "";
  const std::size_t from = returned_ > kOverlap ? returned_ - kOverlap : 0;
  const auto window = [&](std::size_t to) {
    return vocab_.decode(
        std::vector<Index>(ids.begin() + static_cast<long>(from), ids.begin() + static_cast<long>(to)));
  };
  const std::string before = window(returned_), after = window(end);
  if (after.compare(0, before.size(), before) != 0 && !last) return "";  // the window decodes otherwise: wait
  std::size_t common = 0;
  while (common < before.size() && common < after.size() && before[common] == after[common]) ++common;
  returned_ = end;
  return after.substr(common);
}

}  // namespace tf::data
