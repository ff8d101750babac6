// The config's plain-data side, all driven by the field list (config/fields.hpp): value texts, enum names,
// equality, differences, the per-field range checks and the checks that relate two keys (validate), and the
// model section as JSON for checkpoints. The YAML side (load_config, to_yaml) is in config_yaml.cpp, the
// generated reference (docs/config.md) in config_docs.cpp.
#include "tinyformer/config/config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf::config {

ConfigError::ConfigError(const std::string& message, std::vector<std::string> keys, std::string detail)
    : std::invalid_argument(message), keys_(std::move(keys)), detail_(std::move(detail)) {
  if (detail_.empty()) detail_ = message;
}

// ---- field vocabulary (field.hpp) ----

bool Check::allows(double v) const {
  switch (kind) {
    case Kind::any:
      return true;
    case Kind::at_least:
      return v >= lo;
    case Kind::above:
      return v > lo;
    case Kind::range:
      return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }
  return true;
}

std::string Check::describe() const {
  switch (kind) {
    case Kind::any:
      return "";
    case Kind::at_least:
      return fmt::format(">= {}", lo);
    case Kind::above:
      return fmt::format("> {}", lo);
    case Kind::range:
      return fmt::format("in {}{}, {}{}", lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]");
  }
  return "";
}

std::string Check::complaint(double v) const {
  if (allows(v)) return "";
  if (kind == Kind::at_least) return fmt::format("must be at least {}, got {}", lo, v);
  return fmt::format("must be {}, got {}", describe(), v);
}

std::string config_file_stem(const std::string& config_file) {
  return std::filesystem::path(config_file).stem().string();
}

std::vector<std::string> split_enum_names(const char* list) {
  std::vector<std::string> names(1);
  for (const char* p = list; *p; ++p) {
    if (*p == ',')
      names.emplace_back();
    else if (!std::isspace(static_cast<unsigned char>(*p)))
      names.back() += *p;
  }
  for (auto& name : names)  // an enumerator named for a C++ keyword (char_) has the keyword as its YAML name
    if (!name.empty() && name.back() == '_') name.pop_back();
  return names;
}

// ---- value texts ----

std::string value_text(std::size_t v) { return std::to_string(v); }
std::string value_text(const std::optional<std::size_t>& v) { return v ? std::to_string(*v) : "auto"; }
std::string value_text(double v) { return fmt::format("{}", v); }
std::string value_text(bool v) { return v ? "true" : "false"; }
std::string value_text(const std::array<double, 2>& v) { return fmt::format("[{}, {}]", v[0], v[1]); }

// A YAML double-quoted string: always quoted, so names like "true", "null" or "3" stay strings.
std::string value_text(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += (c < 0x20 || c == 0x7f) ? fmt::format("\\x{:02X}", c) : std::string(1, ch);
    }
  }
  return out + "\"";
}

// ---- enum names and did-you-mean ----

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Edit distance (insert, delete, substitute), one row at a time.
std::size_t levenshtein(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string w = lower(word);
  std::string best;
  std::size_t best_score = 3;  // distances 0..2 qualify; a prefix match scores 2 unless closer
  for (const auto& candidate : candidates) {
    const std::string c = lower(candidate);
    std::size_t score = levenshtein(w, c);
    const bool prefix = !w.empty() && (c.rfind(w, 0) == 0 || w.rfind(c, 0) == 0);
    if (prefix) score = std::min<std::size_t>(score, 2);
    if (score < best_score) {
      best_score = score;
      best = candidate;
    }
  }
  return best;
}

std::size_t enum_index(const std::vector<std::string>& names, const std::string& name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return i;
  const std::string guess = closest_name(name, names);
  const std::string detail = fmt::format("unknown value '{}'; valid: {}{}", name, fmt::join(names, ", "),
                                         guess.empty() ? "" : fmt::format(" (did you mean {}?)", guess));
  throw ConfigError(detail, {}, detail);
}

// ---- equality and differences ----

bool operator==(const RunConfig& a, const RunConfig& b) { return diff(a, b).empty(); }

std::vector<FieldChange> diff(const RunConfig& before, const RunConfig& after) {
  std::vector<std::pair<std::string, std::string>> texts;  // path, value in `before`
  for_each_field_of(before, [&](const FieldInfo& f, const auto& v) { texts.emplace_back(f.path(), value_text(v)); });
  std::vector<FieldChange> changes;
  std::size_t i = 0;
  for_each_field_of(after, [&](const FieldInfo& f, const auto& v) {
    std::string now = value_text(v);
    if (now != texts[i].second) changes.push_back({texts[i].first, texts[i].second, std::move(now), f.on_resume});
    ++i;
  });
  return changes;
}

// ---- locations ----

std::string ConfigSource::locate(const std::string& key) const {
  if (file.empty()) return key;  // a config built in code: no file, no line
  const auto it = origin.find(key);
  return fmt::format("{}: {}{}", file, key, it != origin.end() ? it->second : " (default)");
}

ConfigError error_at(const RunConfig& cfg, const std::string& key, const std::string& detail) {
  return ConfigError(fmt::format("{}: {}", cfg.source.locate(key), detail), {key}, detail);
}

std::size_t effective_decay_steps(const RunConfig& cfg) {
  return cfg.schedule.decay_steps ? *cfg.schedule.decay_steps : cfg.training.steps;
}

std::optional<std::size_t> fixed_train_set_size(const DataConfig& data) {
  if (data.task != Task::modular) return std::nullopt;
  const double pairs = static_cast<double>(data.modulus) * static_cast<double>(data.modulus);
  const double n = std::round(data.train_fraction * pairs);
  return static_cast<std::size_t>(std::clamp(n, 1.0, pairs - 1.0));
}

// ---- value checks ----

namespace {

// Throws ConfigError "<key>: <detail>" when !ok; `keys` lists the key paths involved, the one to fix first.
void need(bool ok, std::vector<std::string> keys, const std::string& detail) {
  if (ok) return;
  const std::string message = keys.front() + ": " + detail;
  throw ConfigError(message, std::move(keys), detail);
}

// The field's own range (Check); "" when it holds.
std::string range_complaint(const Check& c, std::size_t v) { return c.complaint(static_cast<double>(v)); }
std::string range_complaint(const Check& c, const std::optional<std::size_t>& v) {
  return v ? c.complaint(static_cast<double>(*v)) : "";
}
std::string range_complaint(const Check& c, double v) { return c.complaint(v); }
std::string range_complaint(const Check& c, const std::array<double, 2>& v) {
  if (c.allows(v[0]) && c.allows(v[1])) return "";
  return fmt::format("each value must be {}, got {}", c.describe(), value_text(v));
}
template <class T>
std::string range_complaint(const Check&, const T&) {
  return "";  // bool, string, enums: the type is the range
}

// The multiples of n_head nearest to d_model (one below when there is one, one above).
std::string valid_d_models(std::size_t d_model, std::size_t n_head) {
  const std::size_t below = d_model / n_head * n_head;
  const std::size_t above = below + n_head;
  if (below == 0) return fmt::format("{}", above);
  return fmt::format("{} or {}", below, above);
}

template <class Section>
void check_ranges(const Section& section) {
  for_each_field(section, [](const FieldInfo& f, const auto& v) {
    if (const std::string detail = range_complaint(f.check, v); !detail.empty()) need(false, {f.path()}, detail);
  });
}

void check_head_split(const ModelConfig& m) {
  need(m.d_model % m.n_head == 0, {keys::model::d_model, keys::model::n_head},
       fmt::format("{} is not divisible by {} = {}; valid d_model near it: {} (head size D = d_model / n_head)",
                   m.d_model, keys::model::n_head, m.n_head, valid_d_models(m.d_model, m.n_head)));
  need(m.n_kv_head == 0 || m.n_head % m.n_kv_head == 0, {keys::model::n_kv_head, keys::model::n_head},
       fmt::format("{} does not divide {} = {}; valid: a divisor of n_head (1: multi-query attention), or 0 for "
                   "n_head",
                   m.n_kv_head, keys::model::n_head, m.n_head));
  need(m.position != Position::rope || (m.d_model / m.n_head) % 2 == 0, {keys::model::position, keys::model::d_model},
       fmt::format("rope rotates pairs of a head's columns, so the head size d_model / n_head must be even, got "
                   "{} / {} = {}",
                   m.d_model, m.n_head, m.d_model / m.n_head));
}

void validate_data(const RunConfig& cfg) {
  const ModelConfig& m = cfg.model;
  const DataConfig& d = cfg.data;
  need(!((d.task == Task::text || d.task == Task::tokens) && d.path.empty()), {keys::data::path, keys::data::task},
       fmt::format("task '{}' reads a file: set {} (a {} file)", to_string(d.task), keys::data::path,
                   d.task == Task::text ? "UTF-8 text" : ".npy or llm.c token"));
  need(!(d.task == Task::text && !m.context), {keys::model::context, keys::data::task},
       fmt::format("'auto' takes the length of a task's sequences or a tokens file's rows; task 'text' cuts the file "
                   "into windows: set {} to the window length (e.g. 64)",
                   keys::model::context));
  need(!(d.task == Task::repeats && !m.context), {keys::model::context, keys::data::task},
       fmt::format("'auto' takes the length of a task's sequences; task 'repeats' places its two copies of a segment "
                   "anywhere in a sequence of any length: set {} to it (at least 2 x {} = {})",
                   keys::model::context, keys::data::length, 2 * d.length));
  need(!(d.task == Task::repeats && m.context && *m.context < 2 * d.length), {keys::model::context, keys::data::length},
       fmt::format("{} is shorter than the two copies of the repeated segment of {} {}; valid: at least {}",
                   m.context.value_or(0), keys::data::length, d.length, 2 * d.length));
  need(d.tokenizer == Tokenizer::char_ || d.task == Task::text, {keys::data::tokenizer, keys::data::task},
       fmt::format("{} tokenizes text; task '{}' has its own tokens: use 'char' (or task 'text')",
                   to_string(d.tokenizer), to_string(d.task)));
  if (d.tokenizer != Tokenizer::char_ && m.vocab_size)
    need(*m.vocab_size == d.vocab_size, {keys::model::vocab_size, keys::data::vocab_size},
         fmt::format("{} differs from {} = {}, the SentencePiece vocabulary; set it to {} or auto", *m.vocab_size,
                     keys::data::vocab_size, d.vocab_size, d.vocab_size));
}

// A step of a task with a fixed training set takes distinct examples of it: at most the whole set.
void validate_batch(const RunConfig& cfg) {
  const std::optional<std::size_t> n = fixed_train_set_size(cfg.data);
  if (!n) return;
  const TrainingConfig& t = cfg.training;
  need(t.batch_size * t.grad_accum <= *n, {keys::training::batch_size, keys::training::grad_accum},
       fmt::format("{} x {} {} is more than the {} training examples of task '{}' ({} {} of {}² pairs); valid: 1 to "
                   "{} sequences a step, or all (the whole set in one batch, with {} 1)",
                   t.batch_size, keys::training::grad_accum, t.grad_accum, *n, to_string(cfg.data.task),
                   keys::data::train_fraction, cfg.data.train_fraction, cfg.data.modulus, *n,
                   keys::training::grad_accum));
}

void validate_optimizer_and_schedule(const RunConfig& cfg) {
  const OptimizerConfig& o = cfg.optimizer;
  need(!(o.nesterov && o.momentum == 0), {keys::optimizer::nesterov, keys::optimizer::momentum},
       fmt::format("true needs {} > 0 (got 0)", keys::optimizer::momentum));
  const ScheduleConfig& s = cfg.schedule;
  const TrainingConfig& t = cfg.training;
  if (s.name != ScheduleName::constant)
    need(s.warmup_steps <= t.steps, {keys::schedule::warmup_steps, keys::training::steps},
         fmt::format("{} is more than {} = {}; valid: 0 to {}", s.warmup_steps, keys::training::steps, t.steps,
                     t.steps));
  if (s.name == ScheduleName::cosine) {
    need(s.min_lr <= o.lr, {keys::schedule::min_lr, keys::optimizer::lr},
         fmt::format("{} is larger than {} = {}; valid: 0 to {}", s.min_lr, keys::optimizer::lr, o.lr, o.lr));
    if (s.decay_steps)
      need(*s.decay_steps >= s.warmup_steps, {keys::schedule::decay_steps, keys::schedule::warmup_steps},
           fmt::format("{} must be at least {} = {} (or auto = {})", *s.decay_steps, keys::schedule::warmup_steps,
                       s.warmup_steps, keys::training::steps));
  }
  need(!cfg.logging.out_dir.empty(), {keys::logging::out_dir}, "must not be empty");
}

// A thread count far beyond the machine makes hundreds of threads that take turns and no step in minutes.
void validate_threads(const RunConfig& cfg) {
  const std::optional<std::size_t>& threads = cfg.training.threads;
  const int bound = max_threads();
  need(!threads || *threads <= static_cast<std::size_t>(bound), {keys::training::threads},
       fmt::format("{} is more than {} (4 x this machine's {} hardware threads); valid: 1 to {}, or auto (the {} "
                   "physical cores)",
                   threads.value_or(0), bound, bound / 4, bound, physical_cores()));
}

}  // namespace

void validate_model(const ModelConfig& model) {
  check_ranges(model);
  check_head_split(model);
}

void validate(const RunConfig& cfg) {
  for_each_section(cfg, [](const char*, const auto& section) { check_ranges(section); });
  check_head_split(cfg.model);
  validate_data(cfg);
  validate_batch(cfg);
  validate_optimizer_and_schedule(cfg);
  validate_threads(cfg);
}

// ---- the model section as JSON (checkpoint metadata) ----

namespace {

// One overload per field type; the model section has no string or pair field today, hence [[maybe_unused]].
nlohmann::json json_value(std::size_t v) { return v; }
nlohmann::json json_value(const std::optional<std::size_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }
nlohmann::json json_value(double v) { return v; }
nlohmann::json json_value(bool v) { return v; }
[[maybe_unused]] nlohmann::json json_value(const std::string& v) { return v; }
[[maybe_unused]] nlohmann::json json_value(const std::array<double, 2>& v) { return {v[0], v[1]}; }
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
nlohmann::json json_value(E v) {
  return value_text(v);
}

void from_json_value(const nlohmann::json& j, std::size_t& v) { v = j.get<std::size_t>(); }
void from_json_value(const nlohmann::json& j, std::optional<std::size_t>& v) {
  v = j.is_null() ? std::nullopt : std::optional<std::size_t>(j.get<std::size_t>());
}
void from_json_value(const nlohmann::json& j, double& v) { v = j.get<double>(); }
void from_json_value(const nlohmann::json& j, bool& v) { v = j.get<bool>(); }
[[maybe_unused]] void from_json_value(const nlohmann::json& j, std::string& v) { v = j.get<std::string>(); }
[[maybe_unused]] void from_json_value(const nlohmann::json& j, std::array<double, 2>& v) {
  v = j.get<std::array<double, 2>>();
}
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
void from_json_value(const nlohmann::json& j, E& v) {
  v = parse_enum<E>(j.get<std::string>());
}

}  // namespace

std::string model_json(const ModelConfig& model) {
  nlohmann::json j = nlohmann::json::object();
  for_each_field(model, [&](const FieldInfo& f, const auto& v) { j[f.key] = json_value(v); });
  return j.dump();
}

ModelConfig model_from_json(const std::string& json) {
  nlohmann::json j;
  if (json_too_deep(json)) throw ConfigError("the model description nests more than 64 levels of JSON");
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception&) {
    throw ConfigError("the model description is not valid JSON");
  }
  if (!j.is_object()) throw ConfigError("the model description is not a JSON object");
  ModelConfig model;
  std::vector<std::string> known;
  for_each_field(model, [&](const FieldInfo& f, auto& v) {
    known.push_back(f.key);
    if (!j.contains(f.key)) return;
    try {
      from_json_value(j.at(f.key), v);
    } catch (const std::exception&) {
      throw ConfigError(fmt::format("{}: unexpected value {}", f.path(), j.at(f.key).dump().substr(0, 40)), {f.path()});
    }
  });
  for (const auto& item : j.items())
    if (std::find(known.begin(), known.end(), item.key()) == known.end())
      throw ConfigError(fmt::format("unknown model key '{}'", item.key().substr(0, 40)));
  return model;
}

}  // namespace tf::config
