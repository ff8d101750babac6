#pragma once
// nlohmann::json's parse errors end with "; last read: '<the text read so far>'", which for a corrupt
// file can be kilobytes long. For a one-line message: the same text with that part cut to its last 40 characters.
#include <string>

namespace tf::io {

inline std::string short_json_error(const std::string& what) {
  constexpr std::size_t kKeep = 40;
  const std::string marker = "; last read: '";
  const std::size_t at = what.find(marker);
  if (at == std::string::npos) return what;
  const std::size_t begin = at + marker.size();
  std::string read = what.substr(begin);
  if (!read.empty() && read.back() == '\'') read.pop_back();
  if (read.size() <= kKeep) return what;
  return what.substr(0, begin) + "..." + read.substr(read.size() - kKeep) + "'";
}

}  // namespace tf::io
