#pragma once
// Reading the project's own C++ sources, for the tests that check rules of the code itself (no key path as a string
// literal, no include that runs up the layers): the files under a folder of the source tree, and what a file's
// string literals and #include lines hold, with comments skipped.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tf::test {

// The .cpp and .hpp files under `folder` of the source tree (e.g. "lib"), as paths relative to the tree, sorted.
inline std::vector<std::string> source_files(const std::string& folder) {
  namespace fs = std::filesystem;
  const fs::path root(TINYFORMER_SOURCE_DIR);
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".cpp" || ext == ".hpp"))
      files.push_back(entry.path().lexically_relative(root).generic_string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The path of configs/<name>.yaml in the source tree.
inline std::string config_file(const std::string& name) {
  return (std::filesystem::path(TINYFORMER_SOURCE_DIR) / "configs" / (name + ".yaml")).string();
}

inline std::string read_source(const std::string& relative_path) {
  std::ifstream in(std::string(TINYFORMER_SOURCE_DIR) + "/" + relative_path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A string literal of a source: its text between the quotes (escapes as written) and the line it starts on.
struct Literal {
  std::string text;
  std::size_t line;
};

// Every string literal of a C++ source, ordinary ("...", with u8/u/U/L prefixes) and raw (R"delim(...)delim");
// comments and character literals are skipped.
inline std::vector<Literal> string_literals(const std::string& src) {
  std::vector<Literal> found;
  std::size_t line = 1;
  const auto count_lines = [&](std::size_t from, std::size_t to) {
    line += static_cast<std::size_t>(std::count(src.begin() + static_cast<long>(from),
                                                src.begin() + static_cast<long>(std::min(to, src.size())), '\n'));
  };
  const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  // R" at i starts a raw string when what precedes it is not part of a name, or is an encoding prefix (u8R", LR").
  const auto raw_prefix_ok = [&](std::size_t i) {
    std::size_t start = i;
    for (const char* prefix : {"u8", "u", "U", "L"}) {
      const std::size_t n = std::char_traits<char>::length(prefix);
      if (i >= n && src.compare(i - n, n, prefix) == 0) {
        start = i - n;
        break;
      }
    }
    return start == 0 || !word_char(src[start - 1]);
  };
  for (std::size_t i = 0; i < src.size();) {
    if (src.compare(i, 2, "//") == 0) {
      i = src.find('\n', i);
      if (i == std::string::npos) break;
      continue;
    }
    if (src.compare(i, 2, "/*") == 0) {
      const std::size_t end = std::min(src.find("*/", i + 2), src.size());
      count_lines(i, end);
      i = end + 2;
      continue;
    }
    if (src.compare(i, 2, "R\"") == 0 && raw_prefix_ok(i)) {
      const std::size_t open = src.find('(', i + 2);
      const std::string close = ")" + src.substr(i + 2, open - i - 2) + "\"";
      const std::size_t end = std::min(src.find(close, open), src.size());
      found.push_back({src.substr(open + 1, end - open - 1), line});
      count_lines(i, end);
      i = end + close.size();
      continue;
    }
    if (src[i] == '"' || src[i] == '\'') {
      const char quote = src[i];
      std::size_t j = i + 1;
      while (j < src.size() && src[j] != quote && src[j] != '\n') j += src[j] == '\\' ? 2 : 1;
      if (quote == '"') found.push_back({src.substr(i + 1, j - i - 1), line});
      i = j + 1;
      continue;
    }
    if (src[i] == '\n') ++line;
    ++i;
  }
  return found;
}

// Whether `text` holds `word` with no letter, digit, '_' or '.' right before it and no letter, digit or '_' right
// after it ("model.n_head" is in "set model.n_head to 2", not in "model.n_heads").
inline bool contains_word(const std::string& text, const std::string& word) {
  const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool starts = at == 0 || !(word_char(text[at - 1]) || text[at - 1] == '.');
    const bool ends = at + word.size() == text.size() || !word_char(text[at + word.size()]);
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace tf::test
