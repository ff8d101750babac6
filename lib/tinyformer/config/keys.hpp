#pragma once
// Every key path of the run config as a constant, made from the field list (config/fields.hpp):
// config::keys::model::n_head is "model.n_head", a const char* usable wherever a string is. Code that names a key
// (a message, error_at, a check that relates two keys) writes the constant: no key path is written as a string
// literal outside fields.hpp, and tests/config/test_config_keys.cpp fails on one in lib/ or apps/.
#include <cstddef>

#include "tinyformer/config/fields.hpp"

namespace tf::config {

namespace detail {

// "section" "." "key", joined at compile time.
template <std::size_t S, std::size_t K>
struct KeyPath {
  char text[S + K] = {};
  constexpr KeyPath(const char (&section)[S], const char (&key)[K]) {
    std::size_t n = 0;
    for (std::size_t i = 0; i + 1 < S; ++i) text[n++] = section[i];
    text[n++] = '.';
    for (std::size_t i = 0; i + 1 < K; ++i) text[n++] = key[i];
  }
};

}  // namespace detail

namespace keys {

// namespace model { namespace paths { KeyPath d_model{"model", "d_model"}; ... } const char* d_model; ... }
#define TF_CONFIG_KEY_PATH(key, ...) inline constexpr detail::KeyPath key{section_name, #key};
#define TF_CONFIG_KEY(key, ...) inline constexpr const char* key = paths::key.text;
#define TF_CONFIG_SECTION_KEYS(section, Struct, FIELDS) \
  namespace section {                                   \
  namespace paths {                                     \
  inline constexpr char section_name[] = #section;      \
  FIELDS(TF_CONFIG_KEY_PATH)                            \
  }                                                     \
  FIELDS(TF_CONFIG_KEY)                                 \
  }
TF_CONFIG_SECTIONS(TF_CONFIG_SECTION_KEYS)
#undef TF_CONFIG_SECTION_KEYS
#undef TF_CONFIG_KEY
#undef TF_CONFIG_KEY_PATH

}  // namespace keys

}  // namespace tf::config
