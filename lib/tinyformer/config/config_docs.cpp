// docs/config.md, generated from the field list (config/fields.hpp): the introduction (config_intro.md), then one
// table per section. `tinyformer config --docs` prints it; a test compares it with the file in the repository.
#include <string>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tinyformer/config/config.hpp"

namespace tf::config {

// The introduction, config/config_intro.md, compiled in at build time (lib/CMakeLists.txt).
const char* config_introduction();

namespace {

// The type column: how the value is written and which values are valid.
std::string type_doc(const Check& c, std::size_t) {
  return c.kind == Check::Kind::any ? "count" : "int " + c.describe();
}
std::string type_doc(const Check& c, const std::optional<std::size_t>&) {
  return (c.kind == Check::Kind::any ? std::string("count") : "int " + c.describe()) + " or `auto`";
}
std::string type_doc(const Check& c, double) { return c.kind == Check::Kind::any ? "real" : "real " + c.describe(); }
std::string type_doc(const Check&, bool) { return "bool"; }
std::string type_doc(const Check&, const std::string&) { return "string"; }
std::string type_doc(const Check& c, const std::array<double, 2>&) { return "list of two reals " + c.describe(); }
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
std::string type_doc(const Check&, E v) {
  return fmt::format("`{}`", fmt::join(enum_names(v), "` \\| `"));
}

// The default column: the value, or a Derived default's doc with the plain value in place of {}.
std::string default_doc(const FieldInfo& f, const std::string& value) {
  if (f.default_doc) return fmt::format(fmt::runtime(f.default_doc), value);
  return "`" + value + "`";
}

// The on --resume column (config/field.hpp's OnResume).
const char* on_resume_doc(OnResume r) {
  switch (r) {
    case OnResume::free:
      return "free";
    case OnResume::exact:
      return "exact";
    case OnResume::fixed:
      return "fixed";
  }
  return "";
}

}  // namespace

std::string reference_markdown() {
  std::string md = config_introduction();
  const RunConfig defaults;
  for_each_section(defaults, [&](const char* name, const auto& section) {
    md += fmt::format("## {}\n\n| key | type | default | on --resume | meaning |\n| --- | --- | --- | --- | --- |\n",
                      name);
    for_each_field(section, [&](const FieldInfo& f, const auto& v) {
      md += fmt::format("| `{}` | {} | {} | {} | {} |\n", f.key, type_doc(f.check, v), default_doc(f, value_text(v)),
                        on_resume_doc(f.on_resume), f.doc);
    });
    md += "\n";
  });
  md.pop_back();  // one newline at the end
  return md;
}

}  // namespace tf::config
