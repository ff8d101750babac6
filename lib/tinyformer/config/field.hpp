#pragma once
// The vocabulary of config/fields.hpp: what a field's declaration says besides its name, type, default and doc
// line. A Check is the range a value must be in (the user's check; the ops check their own arguments as the
// API's contract), OnResume what may change when a run is continued, TF_CONFIG_ENUM an enumeration whose YAML
// names are its enumerator names. Nothing here knows about YAML.
#include <cstddef>
#include <string>
#include <vector>

namespace tf::config {

// The values a number (or each number of a list, or a set optional) may take.
struct Check {
  enum class Kind { any, at_least, above, range };
  Kind kind = Kind::any;
  double lo = 0, hi = 0;
  bool hi_open = false;  // range: [lo, hi) instead of [lo, hi]
  bool lo_open = false;  // range: (lo, ...

  static constexpr Check any() { return {}; }
  static constexpr Check at_least(double lo) { return {Kind::at_least, lo, 0, false, false}; }
  static constexpr Check above(double lo) { return {Kind::above, lo, 0, false, false}; }
  static constexpr Check closed(double lo, double hi) { return {Kind::range, lo, hi, false, false}; }    // [lo, hi]
  static constexpr Check half_open(double lo, double hi) { return {Kind::range, lo, hi, true, false}; }  // [lo, hi)
  static constexpr Check open(double lo, double hi) { return {Kind::range, lo, hi, true, true}; }        // (lo, hi)

  bool allows(double v) const;
  // "must be at least 1, got 0", "must be in [0, 1), got 1.5"; "" when v is allowed.
  std::string complaint(double v) const;
  // For docs/config.md: ">= 1", "in [0, 1)", "> 0", "".
  std::string describe() const;
};

// What `train --resume` does when the config changes a field against the checkpoint's config:
enum class OnResume {
  free,   // may change: logging, thread count, the number of steps (continuation stays exact)
  exact,  // a change breaks exact continuation: refused unless --allow-changes
  fixed   // the checkpoint's weights or optimizer state depend on it: always refused
};

// Everything a field's declaration says, for the code that walks the fields (parsing, checks, YAML, docs,
// checkpoint metadata, resume).
struct FieldInfo {
  const char* section;  // "model"
  const char* key;      // "d_model"
  Check check;
  OnResume on_resume;
  const char* doc;  // one line for docs/config.md

  std::string path() const { return std::string(section) + "." + key; }  // "model.d_model"
};

// "a, b, c" -> {"a", "b", "c"}: the enumerator names of a TF_CONFIG_ENUM, from its stringized list.
std::vector<std::string> split_enum_names(const char* list);

}  // namespace tf::config

// An enum class whose YAML names are its enumerators, declared once:
//   TF_CONFIG_ENUM(Norm, layernorm, rmsnorm)
// declares `enum class Norm { layernorm, rmsnorm };` and enum_names(Norm) -> {"layernorm", "rmsnorm"} (found by
// argument-dependent lookup, so the config code handles every such enum the same way).
#define TF_CONFIG_ENUM(Name, ...)                                                 \
  enum class Name { __VA_ARGS__ };                                                \
  inline const std::vector<std::string>& enum_names(Name) {                       \
    static const std::vector<std::string> names = split_enum_names(#__VA_ARGS__); \
    return names;                                                                 \
  }
