// docs/config.md, generated from the field list (config/fields.hpp): the introduction below, then one table per
// section. `tinyformer config --docs` prints it; a test compares it with the file in the repository.
#include <string>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tinyformer/config/config.hpp"

namespace tf::config {

namespace {

const char* const kIntroduction = R"MD(# The run config

A run is described by one YAML file with up to six sections: `model`, `data`, `optimizer`, `schedule`,
`training`, `logging`. Every key is optional; a missing key (or a missing or empty section) takes the
default below. An empty file is a valid config (the default reverse task).

```yaml
model:
  d_model: 64
  n_head: 4
data:
  task: reverse
  length: 8
optimizer:
  lr: 3e-4
training:
  steps: 2000
```

Values given with `--set` on the command line are applied on top of the file before anything is checked:

```sh
tinyformer train configs/reverse.yaml --set model.d_model=32 --set optimizer.betas=[0.9,0.95]
tinyformer train configs/reverse.yaml --set "model={n_head: 2, n_layer: 3}" --set logging.probe=
```

The value after `=` is read as YAML, so lists (`[0.9, 0.95]`), `null` and quoted strings work; a whole
section can be given as a mapping. Quote string values that contain `: ` or ` #`
(`--set "logging.probe='a: b'"`). A later `--set` of the same key wins.

The config is checked completely before any work starts. Unknown sections and keys (with a did-you-mean
suggestion), values of the wrong type, and impossible values are rejected with a message that names the file,
the key path, the YAML line (or the `--set` text) and what would be valid, for example

```
configs/reverse.yaml: optimizer.lr at line 12: expected a number, got 'fast'
configs/reverse.yaml: --set model.n_heads=4: unknown key 'n_heads' in section model; did you mean model.n_head? ...
configs/reverse.yaml: model.d_model at line 3: 50 is not divisible by model.n_head = 4; valid d_model near it: 48 or 52 ...
```

Checks that need the data (context length against the task's sequence length, vocab_size against the
data's symbols, the data file itself) are done when the data is loaded, and their messages point at the key
the same way:

```
configs/reverse.yaml: model.context at line 3: task 'reverse' with data.length 8 makes sequences of T = 16 tokens; model.context 32 is larger, so positions 16..31 of the positional table would never be trained; set model.context to 16 or auto
configs/text.yaml: data.path (--set data.path=notes.txt): text data '/home/me/notes.txt' has 12 characters (12 bytes); model.context 64 needs at least 65
```

Types: *int* is a whole number written without a decimal point (`2.5` and `1e3` are not ints), *count*
an int >= 0, *real* any finite number (`1e-3`, `0.5`), *bool* `true` or `false`, *string* any scalar (quote it
when it looks like something else). Enumerations take exactly the names listed.

`tinyformer train` writes the resolved config (every key, defaults filled, overrides applied) to the run
directory; reading that file back gives the same config.

The column *on --resume* says what `tinyformer train --resume` accepts when a key differs from the checkpoint's
config (every differing key is listed, old -> new): *free* may change (the run stays an exact continuation);
*exact* breaks exact continuation and is refused unless `--allow-changes` is given; *fixed* shapes the weights or
the optimizer state and is always refused. `schedule.warmup_steps` and `schedule.decay_steps` keep the
checkpoint's values unless `--set` gives them, so that more `training.steps` continue the schedule.

)MD";

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

// The default column; the two defaults that depend on something else (config_yaml.cpp's apply_derived_defaults)
// are described in words.
std::string default_doc(const std::string& path, const std::string& value) {
  if (path == "optimizer.weight_decay") return "`" + value + "` for `adamw`, `0` for `sgd` and `adam`";
  if (path == "logging.out_dir") return "`runs/<config file stem>`";
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
  std::string md = kIntroduction;
  const RunConfig defaults;
  for_each_section(defaults, [&](const char* name, const auto& section) {
    md += fmt::format("## {}\n\n| key | type | default | on --resume | meaning |\n| --- | --- | --- | --- | --- |\n",
                      name);
    for_each_field(section, [&](const FieldInfo& f, const auto& v) {
      md += fmt::format("| `{}` | {} | {} | {} | {} |\n", f.key, type_doc(f.check, v),
                        default_doc(f.path(), value_text(v)), on_resume_doc(f.on_resume), f.doc);
    });
    md += "\n";
  });
  md.pop_back();  // one newline at the end
  return md;
}

}  // namespace tf::config
