#pragma once
// The run configuration: plain typed data read from a YAML file plus `--set key.path=value` overrides,
// every key defaulted and validated before any work starts. The keys are declared once, in config/fields.hpp;
// the section structs below are made from that list, and the layers above take them as they are (nn::GPT the
// model section, optim::make_optimizer the optimizer section; data::make_data_source and optim::LrSchedule the whole
// RunConfig, as they also read training keys). Its headers include nothing of tinyformer's outside config/ (the .cpp
// files use tensor/: files, UTF-8, thread counts) and keep yaml-cpp out. Every key, its type, default and meaning:
// docs/config.md (made by reference_markdown()).
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "tinyformer/config/fields.hpp"
#include "tinyformer/config/keys.hpp"

namespace tf::config {

// A bad config: unreadable file, YAML syntax, unknown key, wrong type or impossible value. what() is the
// full message a user sees (file, key path, YAML line or --set text, what would be valid).
class ConfigError : public std::invalid_argument {
 public:
  ConfigError(const std::string& message, std::vector<std::string> keys = {}, std::string detail = {});
  const std::vector<std::string>& keys() const { return keys_; }  // key paths involved, the one to fix first
  const std::string& detail() const { return detail_; }           // the message without the location prefix

 private:
  std::vector<std::string> keys_;
  std::string detail_;
};

// ---- sections: one struct per YAML section, its members made from the field list (config/fields.hpp) ----

#define TF_CONFIG_MEMBER(key, type, default_value, check, on_resume, doc) type key = default_value;
#define TF_CONFIG_STRUCT(section, Struct, FIELDS) \
  struct Struct {                                 \
    FIELDS(TF_CONFIG_MEMBER)                      \
  };
TF_CONFIG_SECTIONS(TF_CONFIG_STRUCT)
#undef TF_CONFIG_STRUCT
#undef TF_CONFIG_MEMBER

// ---- walking the fields: f(const FieldInfo&, value&) for each field of a section, in declaration order ----

template <class Struct>
struct SectionFields;  // SectionFields<ModelConfig>::name == "model", ::visit(section, f)

#define TF_CONFIG_VISIT(key, type, default_value, check, on_resume, doc) \
  f(FieldInfo{name, #key, check, on_resume, doc, default_doc_of(default_value)}, s.key);
#define TF_CONFIG_DERIVE(key, type, default_value, check, on_resume, doc) \
  derive_default(s.key, default_value, cfg, config_file, given(#key));
// Struct is a type name here, which parentheses would break: bugprone-macro-parentheses is off for this macro.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TF_CONFIG_SECTION_FIELDS(section, Struct, FIELDS)                                          \
  template <>                                                                                      \
  struct SectionFields<Struct> {                                                                   \
    static constexpr const char* name = #section;                                                  \
    template <class S, class F>                                                                    \
    static void visit(S& s, F&& f) {                                                               \
      FIELDS(TF_CONFIG_VISIT)                                                                      \
    }                                                                                              \
    /* the Derived defaults (config/field.hpp) of the keys for which given("key") is false */      \
    template <class Run, class Given>                                                              \
    static void derive(Struct& s, const Run& cfg, const std::string& config_file, Given&& given) { \
      FIELDS(TF_CONFIG_DERIVE)                                                                     \
    }                                                                                              \
  };
// NOLINTEND(bugprone-macro-parentheses)
TF_CONFIG_SECTIONS(TF_CONFIG_SECTION_FIELDS)
#undef TF_CONFIG_SECTION_FIELDS
#undef TF_CONFIG_DERIVE
#undef TF_CONFIG_VISIT

template <class Section, class F>
void for_each_field(Section& section, F&& f) {
  SectionFields<std::remove_const_t<Section>>::visit(section, f);
}

// Where each value came from, so that checks made later (against the data, a checkpoint) can point at the
// line to fix. Not part of a config's value: operator== ignores it.
struct ConfigSource {
  std::string file;                           // the YAML file ("" for a config built in code)
  std::map<std::string, std::string> origin;  // "section.key" -> " at line N" or " (--set text)"; absent: default
  // "configs/x.yaml: model.context at line 3", "...: model.context (--set model.context=8)", "...: key (default)";
  // just the key for a config built in code.
  std::string locate(const std::string& key) const;
};

struct RunConfig {
  ModelConfig model;
  DataConfig data;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  TrainingConfig training;
  LoggingConfig logging;
  ConfigSource source;
};

// f(section name, section struct) for each section in order; RunConfig may be const.
template <class Run, class F>
void for_each_section(Run& cfg, F&& f) {
#define TF_CONFIG_SECTION_CALL(section, Struct, FIELDS) f(SectionFields<Struct>::name, cfg.section);
  TF_CONFIG_SECTIONS(TF_CONFIG_SECTION_CALL)
#undef TF_CONFIG_SECTION_CALL
}

// f(const FieldInfo&, value&) for every field of every section.
template <class Run, class F>
void for_each_field_of(Run& cfg, F&& f) {
  for_each_section(cfg, [&](const char*, auto& section) { for_each_field(section, f); });
}

// The defaults that depend on other keys or on the config file (a field's Derived default), for the keys for which
// given("section.key") is false: load_config's last step before the checks.
template <class Given>
void apply_derived_defaults(RunConfig& cfg, const std::string& config_file, Given&& given) {
  for_each_section(cfg, [&](const char* name, auto& section) {
    SectionFields<std::remove_reference_t<decltype(section)>>::derive(
        section, cfg, config_file, [&](const char* key) { return given(std::string(name) + "." + key); });
  });
}

// A field as a value: its key path and where it lives in a RunConfig, for code that is handed a field (the memory
// estimate's knobs) rather than naming it. config::field::model::d_model, made from the field list like keys::.
template <class Section, class T>
struct FieldRef {
  const char* path;  // keys::model::d_model
  Section RunConfig::*section;
  T Section::*member;

  T& of(RunConfig& cfg) const { return cfg.*section.*member; }
  const T& of(const RunConfig& cfg) const { return cfg.*section.*member; }
  T default_value() const { return Section{}.*member; }  // a Derived default's plain value
};

namespace field {
#define TF_CONFIG_FIELD_REF(key, type, ...) inline constexpr FieldRef<Section, type> key{k::key, in_run, &Section::key};
#define TF_CONFIG_SECTION_REFS(section, Struct, FIELDS)              \
  namespace section {                                                \
  namespace k = keys::section;                                       \
  using Section = Struct;                                            \
  inline constexpr Section RunConfig::*in_run = &RunConfig::section; \
  FIELDS(TF_CONFIG_FIELD_REF)                                        \
  }
TF_CONFIG_SECTIONS(TF_CONFIG_SECTION_REFS)
#undef TF_CONFIG_SECTION_REFS
#undef TF_CONFIG_FIELD_REF
}  // namespace field

// ---- values as text: the YAML (and docs, and checkpoint) spelling of a field's value ----
std::string value_text(std::size_t v);                        // also the 64-bit seed (the same type)
std::string value_text(const std::optional<std::size_t>& v);  // "auto" when unset
std::string value_text(double v);                             // shortest text that reads back equal
std::string value_text(bool v);
std::string value_text(const std::string& v);            // double-quoted, escaped
std::string value_text(const std::array<double, 2>& v);  // "[0.9, 0.999]"
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
std::string value_text(E v) {
  return enum_names(v).at(static_cast<std::size_t>(v));
}
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
std::string to_string(E v) {
  return value_text(v);
}

// The enumerator named `name`; throws ConfigError ("unknown value 'adamx'; valid: sgd, adam, adamw (did you
// mean adamw?)").
// The position of `name` in `names`; throws that ConfigError.
std::size_t enum_index(const std::vector<std::string>& names, const std::string& name);
template <class E>
E parse_enum(const std::string& name) {
  return static_cast<E>(enum_index(enum_names(E{}), name));
}

// The candidate closest to `word` (Levenshtein distance <= 2, or one is a prefix of the other, case
// ignored), or "" when none is close. Used for did-you-mean suggestions.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

// Field by field (doubles exactly, which value_text's shortest round-trip text keeps); ignores `source`.
bool operator==(const RunConfig& a, const RunConfig& b);
inline bool operator!=(const RunConfig& a, const RunConfig& b) { return !(a == b); }

// A ConfigError for a check that needs more than the config (the data, a checkpoint): "<locate(key)>: detail".
ConfigError error_at(const RunConfig& cfg, const std::string& key, const std::string& detail);

// A field whose value differs between two configs.
struct FieldChange {
  std::string path;           // "training.batch_size"
  std::string before, after;  // value_text of each
  OnResume on_resume;
};
// Every field that differs between `before` and `after`, in declaration order.
std::vector<FieldChange> diff(const RunConfig& before, const RunConfig& after);

// The model section as one JSON object with the YAML names and values ({"vocab_size": 11, "context": 16,
// "d_model": 64, ..., "init": "xavier_uniform"}; `auto` as null): the checkpoint's "tinyformer.model".
std::string model_json(const ModelConfig& model);
// Reads model_json's text back; keys it does not have keep their defaults (checkpoints of older versions), unknown
// keys and wrong types throw ConfigError naming the key.
ModelConfig model_from_json(const std::string& json);

// docs/config.md: the introduction and one table per section (key, type, default, meaning), from the field list.
std::string reference_markdown();

// schedule.decay_steps, or training.steps when it is auto.
std::size_t effective_decay_steps(const RunConfig& cfg);

// The number of training examples of a task whose training set is fixed (`modular`: data.train_fraction of the
// modulus² pairs, rounded, at least 1 and at most modulus² - 1), or nullopt for data drawn afresh (the other synthetic
// tasks) or read from a file. training.batch_size `all` is this number.
std::optional<std::size_t> fixed_train_set_size(const DataConfig& data);

// The value checks of load_config (ranges, d_model % n_head, warmup_steps <= steps, min_lr <= lr, path for
// text/tokens, ...) on a config built in code. Throws ConfigError; keys() names the key paths involved.
void validate(const RunConfig& cfg);
// The model section's part of it (its ranges, d_model % n_head): nn::GPT's check of the config it is given.
void validate_model(const ModelConfig& model);

// Reads the YAML file at `path`, applies `overrides` ("section.key=value", the value parsed as YAML, e.g.
// "optimizer.betas=[0.9, 0.95]"; or "section={key: value, ...}") on top, fills defaults and validates.
// Throws ConfigError naming the file, the key path, the YAML line (or the --set text) and what is valid.
RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// The same for YAML text in memory; `name` stands for the file in messages and relative data paths.
RunConfig load_config_text(const std::string& text, const std::string& name,
                           const std::vector<std::string>& overrides = {});

// The resolved config (every key written, defaults filled) as YAML that load_config reads back equal.
std::string to_yaml(const RunConfig& cfg);

}  // namespace tf::config
