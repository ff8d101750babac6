// The YAML side of the config: load_config (file + --set overrides -> checked RunConfig) and to_yaml.
// Every value remembers where it came from (file line or --set text) so that each error names the file,
// the key path, the line and what would be valid. yaml-cpp stays private to this file.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "tinyformer/config/config.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/utf8.hpp"

namespace tf::config {
namespace {

namespace fs = std::filesystem;

// Whether a document's events hold any node (an empty document after a trailing `---` holds only a null).
class NodeSeen : public YAML::EventHandler {
 public:
  bool seen = false;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { seen = true; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override { seen = true; }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    seen = true;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    seen = true;
  }
  void OnMapEnd() override {}
};

// Whether `text` holds a second YAML document with a node in it. Only the first two documents are parsed: yaml-cpp
// 0.7's LoadAll loops forever on some malformed input (a corpus input of fuzz_config), so it is not used.
bool has_second_document(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  NodeSeen first, second;
  if (!parser.HandleNextDocument(first)) return false;
  return parser.HandleNextDocument(second) && second.seen;
}

// The sections and their keys, in the order of the field list (config/fields.hpp).
const std::vector<std::pair<std::string, std::vector<std::string>>>& schema() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> s = [] {
    std::vector<std::pair<std::string, std::vector<std::string>>> sections;
    const RunConfig defaults;
    for_each_section(defaults, [&](const char* name, const auto& section) {
      sections.emplace_back(name, std::vector<std::string>{});
      for_each_field(section, [&](const FieldInfo& f, const auto&) { sections.back().second.push_back(f.key); });
    });
    return sections;
  }();
  return s;
}

std::vector<std::string> section_names() {
  std::vector<std::string> names;
  for (const auto& [section, keys] : schema()) names.push_back(section);
  return names;
}

const std::vector<std::string>* keys_of(const std::string& section) {
  for (const auto& [name, keys] : schema())
    if (name == section) return &keys;
  return nullptr;
}

// "did you mean X?" for a section name that is not one.
std::string unknown_section_detail(const std::string& name) {
  std::string hint;
  const std::string guess = closest_name(name, section_names());
  if (!guess.empty()) {
    hint = fmt::format("did you mean {}? ", guess);
  } else {
    for (const auto& [section, keys] : schema())  // a key written at the top level instead of in its section
      for (const auto& key : keys)
        if (key == name && hint.empty())
          hint = fmt::format("did you mean {}.{} (inside section {})? ", section, key, section);
  }
  return fmt::format("unknown section '{}'; {}valid sections: {}", name, hint, fmt::join(section_names(), ", "));
}

// "did you mean section.key?" for a key that is not one of its section: the key written in the wrong section
// first (an exact name elsewhere), else the closest key of this section.
std::string unknown_key_detail(const std::string& section, const std::string& key) {
  const std::vector<std::string>& keys = *keys_of(section);
  std::string hint;
  for (const auto& [other, other_keys] : schema())
    for (const auto& k : other_keys)
      if (k == key && other != section && hint.empty()) hint = fmt::format("did you mean {}.{}? ", other, k);
  if (const std::string guess = closest_name(key, keys); hint.empty() && !guess.empty())
    hint = fmt::format("did you mean {}.{}? ", section, guess);
  return fmt::format("unknown key '{}' in section {}; {}valid keys of {}: {}", key, section, hint, section,
                     fmt::join(keys, ", "));
}

// Where a value came from: a line of the file (1-based), or a --set override (its full text).
struct Origin {
  int line = 0;
  std::string set_text;
};

// Its implicit move assignment may throw, as YAML::Node's does, and nothing needs it not to: std::map never moves its
// values, and a throw ends the load like any other error.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct Entry {
  YAML::Node value;
  Origin origin;
};

// A value that cannot be converted; the loader adds the location.
struct BadValue {
  std::string detail;
};

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing (null)";
  if (n.IsScalar()) return fmt::format("'{}'", n.Scalar());
  if (n.IsSequence()) return "a list";
  return "a mapping";
}

const std::string& scalar_text(const YAML::Node& n, const char* expected) {
  if (!n.IsScalar()) throw BadValue{fmt::format("expected {}, got {}", expected, describe(n))};
  return n.Scalar();
}

bool is_integer_text(const std::string& s) {
  std::size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 53;

// A non-negative integer (counts, sizes, steps, the seed).
std::uint64_t parse_count(const YAML::Node& n, std::uint64_t max = kMaxCount) {
  const std::string& s = scalar_text(n, "a non-negative integer");
  if (!is_integer_text(s)) throw BadValue{fmt::format("expected an integer, got '{}'", s)};
  if (s[0] == '-') {
    const bool zero = s.find_first_not_of("-0") == std::string::npos;
    if (!zero) throw BadValue{fmt::format("must be >= 0, got {}", s)};
    return 0;
  }
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  // Counts are added to and multiplied with each other (steps + 1, batch x context): capped at 2^53, which a double
  // and JSON also hold exactly, so that none of those sums wraps.
  if (errno == ERANGE || v > max)
    throw BadValue{max == kMaxCount ? fmt::format("integer out of range: at most 2^53 = {}, got {}", kMaxCount, s)
                                    : fmt::format("integer out of range, got {}", s)};
  return static_cast<std::uint64_t>(v);
}

// strtod in the C locale, whatever the process's: a Python user's locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")
// (or a C++ program's setlocale) makes strtod stop at the "." of 0.003, and every real value was refused.
double strtod_c(const char* text, char** end) {
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  return strtod_l(text, end, c_locale);
}

double parse_number(const YAML::Node& n) {
  const std::string& s = scalar_text(n, "a number");
  const bool chars_ok = !s.empty() && s.find_first_not_of("0123456789+-.eE") == std::string::npos;
  char* end = nullptr;
  errno = 0;
  const double v = chars_ok ? strtod_c(s.c_str(), &end) : 0.0;
  if (!chars_ok || end != s.c_str() + s.size()) throw BadValue{fmt::format("expected a number, got '{}'", s)};
  if (!std::isfinite(v)) throw BadValue{fmt::format("expected a finite number, got '{}'", s)};
  // ERANGE with a finite result is an underflow: a subnormal is kept (it is finite); one below even those became 0
  if (errno == ERANGE && v == 0.0 && s.find_first_of("123456789") < s.find_first_of("eE"))
    throw BadValue{fmt::format("is closer to 0 than the smallest number a double holds (4.9e-324), got '{}'", s)};
  // Training computes in float32: a value below its smallest normal number (a learning rate of 5e-324) would be 0
  // there, or keep only a few bits. Finite, but not a value a run can use.
  if (v != 0.0 && std::fabs(v) < static_cast<double>(std::numeric_limits<float>::min()))
    throw BadValue{fmt::format("{} is below the smallest normal float32 number (1.2e-38), where training computes; "
                               "give 0 or a value of at least 1.2e-38",
                               s)};
  return v;
}

bool parse_bool(const YAML::Node& n) {
  const std::string& s = scalar_text(n, "true or false");
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  throw BadValue{fmt::format("expected true or false, got '{}'", s)};
}

std::string parse_string(const YAML::Node& n) {
  if (n.IsNull()) return "";
  const std::string& s = scalar_text(n, "a string");
  // YAML's "\0" escape: a path would be cut short at it by the system
  if (const std::size_t nul = s.find('\0'); nul != std::string::npos)
    throw BadValue{fmt::format("holds a NUL byte at character {} (counted from 0); a value has none", nul)};
  return s;
}

// One parser per field type of the field list (std::size_t: parse_count, in build); each throws BadValue with what
// was expected.
void parse_value(const YAML::Node& n, double& out) { out = parse_number(n); }
void parse_value(const YAML::Node& n, bool& out) { out = parse_bool(n); }
void parse_value(const YAML::Node& n, std::string& out) { out = parse_string(n); }

// An integer, or 'auto' (also null, which older configs wrote for schedule.decay_steps).
void parse_value(const YAML::Node& n, std::optional<std::size_t>& out) {
  if (n.IsNull() || (n.IsScalar() && n.Scalar() == "auto")) {
    out.reset();
  } else if (n.IsScalar() && is_integer_text(n.Scalar())) {
    out = static_cast<std::size_t>(parse_count(n));
  } else {
    throw BadValue{fmt::format("expected an integer or 'auto', got {}", describe(n))};
  }
}

void parse_value(const YAML::Node& n, std::array<double, 2>& out) {
  if (!n.IsSequence() || n.size() != 2)
    throw BadValue{fmt::format("expected a list of two numbers like [0.9, 0.999], got {}{}", describe(n),
                               n.IsSequence() ? fmt::format(" of {} values", n.size()) : "")};
  for (std::size_t i = 0; i < 2; ++i) {
    try {
      out[i] = parse_number(n[i]);
    } catch (const BadValue& bad) {
      throw BadValue{fmt::format("value {}: {}", i + 1, bad.detail)};
    }
  }
}

template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
void parse_value(const YAML::Node& n, E& out) {
  const std::string& s = scalar_text(n, fmt::format("one of {}", fmt::join(enum_names(E{}), ", ")).c_str());
  try {
    out = parse_enum<E>(s);
  } catch (const ConfigError& e) {
    throw BadValue{e.detail()};
  }
}

// training.batch_size `all`: the size of the data's fixed training set (config::fixed_train_set_size).
std::size_t whole_training_set(const DataConfig& data) {
  if (const std::optional<std::size_t> n = fixed_train_set_size(data)) return *n;
  throw BadValue{fmt::format("'all' takes the whole training set of a task that has a fixed one (modular); task '{}' "
                             "draws new examples every step or reads a file: give a number of sequences",
                             to_string(data.task))};
}

// " (after model.n_head at line 5)": the path and line of the last `key:` line before line `before` (1-based), by
// indentation, or "" when there is none. A YAML syntax error shows where the parser gave up, often a line or two past
// the value that broke the file (a value with a raw line break, an unclosed quote).
std::string last_key_before(const std::string& text, std::size_t before) {
  std::istringstream in(text);
  std::string line, found;
  std::size_t number = 0, found_line = 0;
  std::vector<std::pair<std::size_t, std::string>> open;  // (indent, key) of the mappings the line is inside
  while (std::getline(in, line) && ++number < before) {
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || line[indent] == '#') continue;
    std::size_t end = indent;
    while (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_')) ++end;
    if (end == indent || end == line.size() || line[end] != ':' || (end + 1 < line.size() && line[end + 1] != ' '))
      continue;
    while (!open.empty() && open.back().first >= indent) open.pop_back();
    open.emplace_back(indent, line.substr(indent, end - indent));
    found.clear();
    for (const auto& entry : open) found += (found.empty() ? "" : ".") + entry.second;
    found_line = number;
  }
  return found.empty() ? "" : fmt::format(" (after {} at line {})", found, found_line);
}

// s without the spaces and tabs at its ends
std::string trim(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Whether a line of a config looks like a mapping entry: a word, then a colon at the end or before a space.
bool looks_like_key(const std::string& line) {
  std::size_t i = line.find_first_not_of(' ');
  const std::size_t word = i;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
  return word != std::string::npos && i > word && i < line.size() && line[i] == ':' &&
         (i + 1 == line.size() || line[i + 1] == ' ');
}

// yaml-cpp 0.7 reads a quoted scalar that never closes to the end of the text, keys and sections included: with
// `probe: '12|` the sections after it became the probe's text, and a training.steps among them was lost without a
// word. A quote that closes only lines later, over lines that look like keys (`name: '` under optimizer and under
// schedule), is as surely a mistake. Every quoted scalar in `node` (keys and values, nested ones too) is followed
// from yaml-cpp's mark by YAML's rules ('' inside '...', a backslash escape inside "..."): "" when each closes on
// its line or over lines that are not keys, else what is wrong with the first that does not.
// `seen`: the text positions of the nodes visited. An alias is the node it names, at that node's position: each node
// is looked at once, so `&a [*a]` (a list that holds itself) ends, and aliases of aliases cost no more than the text.
std::string quote_problem(const std::string& text, const YAML::Node& node, std::set<int>& seen) {
  const YAML::Mark mark = node.Mark();
  if (!seen.insert(mark.pos).second) return "";
  if (node.IsSequence() || node.IsMap()) {
    for (const auto& item : node)
      for (const YAML::Node& part :
           node.IsMap() ? std::vector<YAML::Node>{item.first, item.second} : std::vector<YAML::Node>{item})
        if (std::string problem = quote_problem(text, part, seen); !problem.empty()) return problem;
    return "";
  }
  if (!node.IsScalar() || mark.pos < 0 || static_cast<std::size_t>(mark.pos) >= text.size()) return "";
  const std::size_t open = static_cast<std::size_t>(mark.pos);
  const char quote = text[open];
  if (quote != '\'' && quote != '"') return "";
  std::size_t close = std::string::npos;
  for (std::size_t i = open + 1; i < text.size() && close == std::string::npos; ++i) {
    // \" and \\ inside "...", '' inside '...': a character of the value, not its end
    const bool escape =
        quote == '"' ? text[i] == '\\' : text[i] == quote && i + 1 < text.size() && text[i + 1] == quote;
    if (escape)
      ++i;
    else if (text[i] == quote)
      close = i;
  }
  const std::string opens = fmt::format("a quote ({}) at column {}", quote, mark.column + 1);
  if (close == std::string::npos)
    return opens + " opens a value that never closes (YAML reads all that follows into it); close the quote";
  const auto at = [&](std::size_t i) { return text.begin() + static_cast<std::ptrdiff_t>(i); };
  const int close_line = mark.line + 1 + static_cast<int>(std::count(at(open), at(close), '\n'));
  int line = mark.line + 1;
  for (std::size_t i = text.find('\n', open); i < close; i = text.find('\n', i + 1)) {
    ++line;
    const std::string next = text.substr(i + 1, std::min(text.find('\n', i + 1), close) - (i + 1));
    if (looks_like_key(next))
      return fmt::format("{} is closed only on line {}, and YAML reads the lines between into the value, line {} "
                         "('{}') too; close the quote on its own line",
                         opens, close_line, line, trim(next));
  }
  return "";
}

std::string quote_problem(const std::string& text, const YAML::Node& node) {
  std::set<int> seen;
  return quote_problem(text, node, seen);
}

// Limits checked before the YAML parser sees the text (it recurses per level and would report "bad file"): a config
// is at most 1 MiB (checked first), holds no NUL byte, and nests at most kMaxDepth levels of [ ] / { } or indents at
// most 64 columns (a config needs two levels: sections and their keys). "" when the text is within them.
constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;
constexpr int kMaxDepth = 32;

std::string shape_problem(const std::string& text) {
  std::size_t line = 1, column = 1, indent = 0;
  int depth = 0;
  char quote = 0;
  bool comment = false, line_start = true;
  for (std::size_t i = 0; i < text.size(); ++i, ++column) {
    const char c = text[i];
    if (c == '\0')
      return fmt::format("holds a NUL byte at line {}, column {} (byte offset {}); a config is text", line, column, i);
    if (c == '\n') {
      ++line, column = 0, indent = 0, comment = false, line_start = true;
      continue;
    }
    if (line_start && c == ' ' && ++indent > 64)
      return fmt::format("line {} is indented more than 64 columns; a config nests two levels (sections and keys)",
                         line);
    line_start = line_start && c == ' ';
    if (comment) continue;
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      comment = true;
    } else if ((c == '[' || c == '{') && ++depth > kMaxDepth) {
      return fmt::format("nests more than {} levels of [ ] or {{ }} at line {}, column {}; a config needs at most 2",
                         kMaxDepth, line, column);
    } else if (c == ']' || c == '}') {
      depth = std::max(0, depth - 1);
    }
  }
  return "";
}

// Collects the entries of the file and the overrides, then reads them into a RunConfig.
class Loader {
 public:
  explicit Loader(std::string file) : file_(std::move(file)) {}

  void read_file() {
    if (file_.empty()) throw ConfigError("the config file name is empty; give a YAML file (configs/*.yaml)");
    std::string text;
    try {  // the size is checked before the file is read: a config of many GiB is not read to be refused
      text = read_regular_file(file_, kMaxConfigBytes, "a config");
    } catch (const FileError& e) {  // is a directory, no such file, too large, ...
      if (e.why().find(" bytes; a config is at most ") != std::string::npos) fail_file(e.why() + " (1 MiB)");
      throw FileError(file_, "cannot read the config file: " + e.why());
    }
    // An empty file (or comments only) is most likely a mistake (a truncated file, the wrong name): `{}` takes every
    // default on purpose. load_config_text("") stays all defaults (a config built in code).
    if (!parse_text(text))
      fail_file("holds no settings (it is empty or comments only); write the sections to set, or {} to take every "
                "default");
  }

  // The YAML text of the file: UTF-8 (yaml-cpp would guess UTF-16 or 32 from a few bytes instead), a mapping
  // of sections, each a mapping of known keys, none twice. false when the text is empty (or comments only).
  bool parse_text(const std::string& text) {
    if (text.size() > kMaxConfigBytes)
      fail_file(fmt::format("is {} bytes; a config is at most {} bytes (1 MiB)", text.size(), kMaxConfigBytes));
    std::vector<std::string> chars;
    if (const std::size_t bad = utf8_split(text, chars); bad != std::string::npos)
      fail_file(
          fmt::format("not UTF-8 text: invalid byte at {}; save the config as UTF-8", byte_position_str(text, bad)));
    if (const std::string problem = shape_problem(text); !problem.empty()) fail_file(problem);

    YAML::Node root;
    try {
      root = YAML::Load(text);
      if (has_second_document(text))
        fail_file(
            "holds more than one YAML document (a line --- or ... ended the first, and more followed); a config is "
            "one");
    } catch (const YAML::ParserException& e) {
      fail_file(fmt::format("not valid YAML at line {}, column {}: {}{}", e.mark.line + 1, e.mark.column + 1, e.msg,
                            last_key_before(text, static_cast<std::size_t>(e.mark.line) + 1)));
    } catch (const YAML::Exception& e) {
      fail_file(fmt::format("not valid YAML: {}", e.what()));
    }
    if (root.IsNull()) return false;  // no document: all defaults
    if (!root.IsMap())
      fail_file(fmt::format("the top level must be a mapping of sections ({}), got {}",
                            fmt::join(section_names(), ", "), describe(root)));

    std::map<std::string, int> seen_sections;
    for (const auto& item : root) {
      const int line = item.first.Mark().line + 1;
      if (!item.first.IsScalar()) fail_line("(key)", line, "section names must be plain words");
      const std::string section = item.first.Scalar();
      if (!keys_of(section)) fail_line(section, line, unknown_section_detail(section));
      if (auto [it, fresh] = seen_sections.emplace(section, line); !fresh)
        fail_line(section, line, fmt::format("section {} appears twice (first at line {})", section, it->second));

      const YAML::Node& body = item.second;
      if (body.IsNull()) continue;  // "model:" with nothing under it: all defaults
      if (!body.IsMap())
        fail_line(section, line, fmt::format("expected a mapping of {}'s keys, got {}", section, describe(body)));
      for (const auto& kv : body) {
        const int key_line = kv.first.Mark().line + 1;
        if (!kv.first.IsScalar()) fail_line(section, key_line, "keys must be plain words");
        const std::string key = kv.first.Scalar();
        const std::string path = fmt::format("{}.{}", section, key);
        const auto& keys = *keys_of(section);
        if (std::find(keys.begin(), keys.end(), key) == keys.end())
          fail_line(path, key_line, unknown_key_detail(section, key));
        if (auto it = entries_.find(path); it != entries_.end())
          fail_line(path, key_line, fmt::format("{} appears twice (first at line {})", path, it->second.origin.line));
        if (const std::string problem = quote_problem(text, kv.second); !problem.empty())
          fail_line(path, key_line, problem);
        entries_[path] = Entry{kv.second, Origin{key_line, {}}};
      }
    }
    return true;
  }

  // "section.key=value" (value parsed as YAML) or "section={key: value, ...}".
  void apply_override(const std::string& text) {
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos)
      fail_set(text, fmt::format("expected key.path=value, e.g. {}=3e-4 or {}=[0.9, 0.95]", keys::optimizer::lr,
                                 keys::optimizer::betas));
    const std::string path = trim(text.substr(0, eq));
    const std::string value_text = trim(text.substr(eq + 1));

    YAML::Node value;
    if (value_text.empty()) {
      value = YAML::Node(std::string());  // "logging.probe=": the empty string
    } else {
      try {
        value = YAML::Load(value_text);
      } catch (const YAML::ParserException& e) {
        fail_set(text, fmt::format("the value is not valid YAML (column {}): {}", e.mark.column + 1, e.msg));
      } catch (const YAML::Exception& e) {
        fail_set(text, fmt::format("the value is not valid YAML: {}", e.what()));
      }
      if (const std::string problem = quote_problem(value_text, value); !problem.empty()) fail_set(text, problem);
      // Text that YAML reads as no value at all: `#x` is a comment, `%x` a directive, and `&a`, `!`, `|` or `>`
      // alone hold nothing. The key would take its default while the command line showed a value; null, ~ and ''
      // say none on purpose.
      const bool none = value.IsNull() || (value.IsScalar() && value.Scalar().empty());
      const bool says_none = value_text == "~" || value_text == "null" || value_text == "Null" ||
                             value_text == "NULL" || value_text == "''" || value_text == "\"\"";
      if (none && !says_none)
        fail_set(text, fmt::format("'{}' is no value in YAML (# begins a comment; %, &, !, | and > need more after "
                                   "them); quote it to mean the text, or write null or ~ for none",
                                   value_text));
    }

    const std::size_t dot = path.find('.');
    const std::string section = path.substr(0, dot);
    if (!keys_of(section)) fail_set(text, unknown_section_detail(section));
    if (dot == std::string::npos) {  // a whole section: "model={d_model: 32, n_head: 2}"
      if (!value.IsMap())
        fail_set(text, fmt::format("a whole section needs a mapping, e.g. {}={{key: value}}; or write {}.key=value",
                                   section, section));
      for (const auto& kv : value) {
        const std::string key = kv.first.Scalar();
        set_override(text, section, key, kv.second);
      }
      return;
    }
    const std::string key = path.substr(dot + 1);
    if (key.find('.') != std::string::npos)
      fail_set(text,
               fmt::format("a key path has two parts, section.key (e.g. {}), got '{}'", keys::model::d_model, path));
    set_override(text, section, key, value);
  }

  RunConfig build() {
    RunConfig cfg;
    for_each_field_of(cfg, [&](const FieldInfo& f, auto& value) {
      const std::string key = f.path();
      const Entry* e = find(key);
      if (!e) return;
      try {
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::size_t>) {
          // a seed is 64 bits, not a count: no sum or product is made of it
          if (key == keys::training::batch_size && e->value.IsScalar() && e->value.Scalar() == "all")
            value = whole_training_set(cfg.data);  // the data section is read before the training section
          else
            value = key == keys::training::seed ? parse_count(e->value, UINT64_MAX) : parse_count(e->value);
        } else {
          parse_value(e->value, value);
        }
      } catch (const BadValue& bad) {
        throw ConfigError(fmt::format("{}: {}{}: {}", file_, key, where(key), bad.detail), {key}, bad.detail);
      }
    });
    apply_derived_defaults(cfg, file_, [&](const std::string& key) { return find(key) != nullptr; });
    if (const Entry* e = find(keys::data::path); e && !cfg.data.path.empty())
      cfg.data.path = resolve_path(cfg.data.path, e->origin);
    cfg.source.file = file_;
    for (const auto& [key, entry] : entries_) cfg.source.origin[key] = where(key);
    return cfg;
  }

  // Re-throws a validate() failure with the location of the key to fix.
  [[noreturn]] void relocate(const ConfigError& e) const {
    const std::vector<std::string>& keys = e.keys();
    if (keys.empty()) throw ConfigError(fmt::format("{}: {}", file_, e.detail()), keys, e.detail());
    std::string message = fmt::format("{}: {}{}: {}", file_, keys[0], where(keys[0]), e.detail());
    if (!find(keys[0])) {  // the first key is a default: point at the set key that conflicts with it
      for (std::size_t i = 1; i < keys.size(); ++i)
        if (find(keys[i])) {
          message += fmt::format(" ({}{})", keys[i], where(keys[i]));
          break;
        }
    }
    throw ConfigError(message, keys, e.detail());
  }

 private:
  void set_override(const std::string& text, const std::string& section, const std::string& key,
                    const YAML::Node& value) {
    const auto& keys = *keys_of(section);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) fail_set(text, unknown_key_detail(section, key));
    entries_[section + "." + key] = Entry{value, Origin{0, text}};
  }

  const Entry* find(const std::string& key) const {
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }

  // " at line N", " (--set text)" or " (default)".
  std::string where(const std::string& key) const {
    const Entry* e = find(key);
    if (!e) return " (default)";
    if (!e->origin.set_text.empty()) return fmt::format(" (--set {})", e->origin.set_text);
    return fmt::format(" at line {}", e->origin.line);
  }

  // Relative data paths: against the config file's directory when written in the file, against the working
  // directory when given with --set. The result is absolute, so a config written elsewhere reads back equal.
  std::string resolve_path(const std::string& p, const Origin& origin) const {
    fs::path path(p);
    if (path.is_relative()) {
      const fs::path base = origin.set_text.empty() ? fs::absolute(fs::path(file_)).parent_path() : fs::current_path();
      path = base / path;
    }
    return path.lexically_normal().string();
  }

  [[noreturn]] void fail_file(const std::string& detail) const {
    throw ConfigError(fmt::format("{}: {}", file_, detail), {}, detail);
  }
  [[noreturn]] void fail_line(const std::string& key, int line, const std::string& detail) const {
    throw ConfigError(fmt::format("{}: {} at line {}: {}", file_, key, line, detail), {key}, detail);
  }
  [[noreturn]] void fail_set(const std::string& text, const std::string& detail) const {
    throw ConfigError(fmt::format("{}: --set {}: {}", file_, text, detail), {}, detail);
  }

  std::string file_;
  std::map<std::string, Entry> entries_;  // "section.key" -> value and origin
};

}  // namespace

namespace {
RunConfig finish(Loader& loader, const std::vector<std::string>& overrides) {
  for (const auto& text : overrides) loader.apply_override(text);
  RunConfig cfg = loader.build();
  try {
    validate(cfg);
  } catch (const ConfigError& e) {
    loader.relocate(e);
  }
  return cfg;
}
}  // namespace

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  Loader loader(path);
  loader.read_file();
  return finish(loader, overrides);
}

RunConfig load_config_text(const std::string& text, const std::string& name,
                           const std::vector<std::string>& overrides) {
  Loader loader(name);
  loader.parse_text(text);
  return finish(loader, overrides);
}

std::string to_yaml(const RunConfig& cfg) {
  std::string y = "# tinyformer run config, resolved: every key with the value in effect (docs/config.md)\n";
  for_each_section(cfg, [&](const char* name, const auto& section) {
    y += fmt::format("{}:\n", name);
    for_each_field(section,
                   [&](const FieldInfo& f, const auto& v) { y += fmt::format("  {}: {}\n", f.key, value_text(v)); });
  });
  return y;
}

}  // namespace tf::config
