// Agreement between ranks, on top of the collectives: the same value everywhere, no rank failed, any flag set.
#include <algorithm>

#include <fmt/format.h>

#include "tinyformer/dist/dist.hpp"

namespace tf::dist {

namespace {

// Where two values first differ, short enough for one line: the values themselves when they are one short line,
// otherwise the first line that differs.
std::string difference(const std::string& a, const std::string& b, int rank_b) {
  const bool short_values =
      a.size() <= 80 && b.size() <= 80 && a.find('\n') == std::string::npos && b.find('\n') == std::string::npos;
  if (short_values) return fmt::format("rank 0 has '{}', rank {} has '{}'", a, rank_b, b);
  std::size_t line = 1, begin = 0;
  while (begin <= std::max(a.size(), b.size())) {
    const std::size_t end_a = std::min(a.find('\n', begin), a.size()), end_b = std::min(b.find('\n', begin), b.size());
    const std::string la = begin < a.size() ? a.substr(begin, end_a - begin) : "";
    const std::string lb = begin < b.size() ? b.substr(begin, end_b - begin) : "";
    if (la != lb || end_a != end_b)
      return fmt::format("line {}: rank 0 has '{}', rank {} has '{}'", line, la, rank_b, lb);
    begin = end_a + 1;
    ++line;
  }
  return fmt::format("rank 0 and rank {} differ", rank_b);
}

}  // namespace

void check_same(const std::string& what, const std::string& value) {
  if (size() == 1) return;
  const std::vector<std::string> all = allgather(value);
  std::string differences;
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differences += "; " + difference(all[0], all[r], static_cast<int>(r));
  if (!differences.empty())
    throw CollectiveError(fmt::format("the {} processes disagree on {}{}", size(), what, differences));
}

void check_no_errors(const std::string& error) {
  if (size() == 1) {
    if (!error.empty()) throw CollectiveError(error);
    return;
  }
  const std::vector<std::string> all = allgather(error);
  for (std::size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) throw CollectiveError(r == 0 ? all[r] : fmt::format("rank {}: {}", r, all[r]));
}

bool any(bool flag) {
  double v = flag ? 1.0 : 0.0;
  allreduce_sum(&v, 1);
  return v > 0;
}

}  // namespace tf::dist
