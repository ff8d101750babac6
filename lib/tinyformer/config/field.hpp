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

// A default that depends on other keys or on the config file, declared in the field's default slot:
//   X(weight_decay, double, (Derived{0.01, rule, "`{}` for `adamw`, `0` for `sgd` and `adam`"}), ...)
// `plain` is the value in a config built in code (RunConfig{}); load_config gives a key that neither the file nor
// --set gives rule(plain, cfg, config_file), once every given value is read (a rule reads only keys without a
// rule of their own). `doc` is its default in docs/config.md, `{}` standing for the plain value.
template <class T, class Rule>
struct Derived {
  T plain;
  Rule rule;  // (const T& plain, const RunConfig&, const std::string& config_file) -> T
  const char* doc;
  operator T() const { return plain; }  // the struct member's initializer
};
template <class T, class Rule>
Derived(T, Rule, const char*) -> Derived<T, Rule>;

// "configs/reverse.yaml" -> "reverse": the config file's name without directory and extension.
std::string config_file_stem(const std::string& config_file);

// Everything a field's declaration says, for the code that walks the fields (parsing, checks, YAML, docs,
// checkpoint metadata, resume).
struct FieldInfo {
  const char* section;  // "model"
  const char* key;      // "d_model"
  Check check;
  OnResume on_resume;
  const char* doc;          // one line for docs/config.md
  const char* default_doc;  // a Derived default's doc; nullptr for a plain default

  std::string path() const { return std::string(section) + "." + key; }  // "model.d_model"
};

// The default_doc of a field's default: a Derived's doc, nullptr otherwise.
template <class T>
constexpr const char* default_doc_of(const T&) {
  return nullptr;
}
template <class T, class Rule>
constexpr const char* default_doc_of(const Derived<T, Rule>& d) {
  return d.doc;
}

// Sets `value` by a Derived default's rule unless the key was `given`; nothing for a plain default.
template <class T, class Default, class Run>
void derive_default(T&, const Default&, const Run&, const std::string&, bool) {}
template <class T, class U, class Rule, class Run>
void derive_default(T& value, const Derived<U, Rule>& d, const Run& cfg, const std::string& config_file, bool given) {
  if (!given) value = d.rule(d.plain, cfg, config_file);
}

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
