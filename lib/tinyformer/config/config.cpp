// The config's plain-data side: enum names, equality, did-you-mean, and the value checks (validate).
// The YAML side (load_config, to_yaml) is in config_yaml.cpp.
#include "tinyformer/config/config.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include <fmt/format.h>

namespace tf::config {

ConfigError::ConfigError(const std::string& message, std::vector<std::string> keys, std::string detail)
    : std::invalid_argument(message), keys_(std::move(keys)), detail_(detail.empty() ? message : std::move(detail)) {}

// ---- enum names ----

namespace {

template <class E, std::size_t N>
using NameTable = std::array<std::pair<E, const char*>, N>;

constexpr NameTable<InitScheme, 3> kInitNames{{{InitScheme::xavier_uniform, "xavier_uniform"},
                                               {InitScheme::xavier_normal, "xavier_normal"},
                                               {InitScheme::normal, "normal"}}};
constexpr NameTable<AttentionImpl, 2> kAttentionNames{{{AttentionImpl::fused, "fused"},
                                                       {AttentionImpl::composed, "composed"}}};
constexpr NameTable<Task, 7> kTaskNames{{{Task::copy, "copy"},
                                         {Task::reverse, "reverse"},
                                         {Task::sort, "sort"},
                                         {Task::add, "add"},
                                         {Task::induction, "induction"},
                                         {Task::text, "text"},
                                         {Task::tokens, "tokens"}}};
constexpr NameTable<OptimizerName, 3> kOptimizerNames{{{OptimizerName::sgd, "sgd"},
                                                       {OptimizerName::adam, "adam"},
                                                       {OptimizerName::adamw, "adamw"}}};
constexpr NameTable<DecayRule, 4> kDecayRuleNames{{{DecayRule::matrices_no_embeddings, "matrices_no_embeddings"},
                                                   {DecayRule::matrices, "matrices"},
                                                   {DecayRule::all, "all"},
                                                   {DecayRule::none, "none"}}};
constexpr NameTable<ScheduleName, 3> kScheduleNames{{{ScheduleName::constant, "constant"},
                                                     {ScheduleName::warmup, "warmup"},
                                                     {ScheduleName::cosine, "cosine"}}};
constexpr NameTable<NonFinitePolicy, 2> kNonFiniteNames{{{NonFinitePolicy::stop, "stop"},
                                                         {NonFinitePolicy::skip, "skip"}}};

constexpr const auto& table(InitScheme) { return kInitNames; }
constexpr const auto& table(AttentionImpl) { return kAttentionNames; }
constexpr const auto& table(Task) { return kTaskNames; }
constexpr const auto& table(OptimizerName) { return kOptimizerNames; }
constexpr const auto& table(DecayRule) { return kDecayRuleNames; }
constexpr const auto& table(ScheduleName) { return kScheduleNames; }
constexpr const auto& table(NonFinitePolicy) { return kNonFiniteNames; }

template <class E>
std::string name_of(E v) {
  for (const auto& [value, name] : table(E{}))
    if (value == v) return name;
  return fmt::format("<invalid {}>", static_cast<int>(v));
}

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

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string to_string(InitScheme v) { return name_of(v); }
std::string to_string(AttentionImpl v) { return name_of(v); }
std::string to_string(Task v) { return name_of(v); }
std::string to_string(OptimizerName v) { return name_of(v); }
std::string to_string(DecayRule v) { return name_of(v); }
std::string to_string(ScheduleName v) { return name_of(v); }
std::string to_string(NonFinitePolicy v) { return name_of(v); }

template <class E>
std::vector<std::string> enum_names() {
  std::vector<std::string> names;
  for (const auto& entry : table(E{})) names.emplace_back(entry.second);
  return names;
}

template <class E>
E parse_enum(const std::string& name) {
  for (const auto& [value, n] : table(E{}))
    if (name == n) return value;
  const std::vector<std::string> names = enum_names<E>();
  const std::string guess = closest_name(name, names);
  const std::string detail = fmt::format("unknown value '{}'; valid: {}{}", name, join(names),
                                         guess.empty() ? "" : fmt::format(" (did you mean {}?)", guess));
  throw ConfigError(detail, {}, detail);
}

#define TF_CONFIG_ENUM(E)                                  \
  template std::vector<std::string> enum_names<E>();       \
  template E parse_enum<E>(const std::string& name);
TF_CONFIG_ENUM(InitScheme)
TF_CONFIG_ENUM(AttentionImpl)
TF_CONFIG_ENUM(Task)
TF_CONFIG_ENUM(OptimizerName)
TF_CONFIG_ENUM(DecayRule)
TF_CONFIG_ENUM(ScheduleName)
TF_CONFIG_ENUM(NonFinitePolicy)
#undef TF_CONFIG_ENUM

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

// ---- equality (field by field; doubles compare exactly, which to_yaml's shortest round-trip output keeps) ----

bool operator==(const ModelConfig& a, const ModelConfig& b) {
  return a.vocab_size == b.vocab_size && a.context == b.context && a.d_model == b.d_model && a.n_head == b.n_head &&
         a.n_layer == b.n_layer && a.mlp_ratio == b.mlp_ratio && a.dropout == b.dropout && a.bias == b.bias &&
         a.tie_weights == b.tie_weights && a.init == b.init && a.attention == b.attention;
}
bool operator==(const DataConfig& a, const DataConfig& b) {
  return a.task == b.task && a.path == b.path && a.length == b.length && a.digits == b.digits &&
         a.alphabet == b.alphabet && a.eval_size == b.eval_size && a.val_fraction == b.val_fraction &&
         a.shuffle == b.shuffle;
}
bool operator==(const OptimizerConfig& a, const OptimizerConfig& b) {
  return a.name == b.name && a.lr == b.lr && a.weight_decay == b.weight_decay && a.betas == b.betas &&
         a.eps == b.eps && a.momentum == b.momentum && a.nesterov == b.nesterov && a.decay_rule == b.decay_rule;
}
bool operator==(const ScheduleConfig& a, const ScheduleConfig& b) {
  return a.name == b.name && a.warmup_steps == b.warmup_steps && a.min_lr == b.min_lr &&
         a.decay_steps == b.decay_steps;
}
bool operator==(const TrainingConfig& a, const TrainingConfig& b) {
  return a.batch_size == b.batch_size && a.steps == b.steps && a.grad_clip == b.grad_clip &&
         a.eval_interval == b.eval_interval && a.eval_batches == b.eval_batches && a.threads == b.threads &&
         a.seed == b.seed && a.nonfinite == b.nonfinite;
}
bool operator==(const LoggingConfig& a, const LoggingConfig& b) {
  return a.out_dir == b.out_dir && a.log_interval == b.log_interval && a.attention_interval == b.attention_interval &&
         a.checkpoint_interval == b.checkpoint_interval && a.probe == b.probe;
}
bool operator==(const RunConfig& a, const RunConfig& b) {
  return a.model == b.model && a.data == b.data && a.optimizer == b.optimizer && a.schedule == b.schedule &&
         a.training == b.training && a.logging == b.logging;
}

std::string ConfigSource::locate(const std::string& key) const {
  const auto it = origin.find(key);
  const std::string where = it != origin.end() ? it->second : " (default)";
  return file.empty() ? key + where : fmt::format("{}: {}{}", file, key, where);
}

ConfigError error_at(const RunConfig& cfg, const std::string& key, const std::string& detail) {
  return ConfigError(fmt::format("{}: {}", cfg.source.locate(key), detail), {key}, detail);
}

std::size_t effective_decay_steps(const RunConfig& cfg) {
  return cfg.schedule.decay_steps ? *cfg.schedule.decay_steps : cfg.training.steps;
}

// ---- value checks ----

namespace {

// Throws ConfigError "<key>: <detail>" when !ok; `keys` lists the key paths involved, the one to fix first.
void need(bool ok, std::vector<std::string> keys, const std::string& detail) {
  if (ok) return;
  const std::string message = keys.front() + ": " + detail;
  throw ConfigError(message, std::move(keys), detail);
}

void at_least(std::size_t value, std::size_t min, const char* key) {
  need(value >= min, {key}, fmt::format("must be at least {}, got {}", min, value));
}

// "[lo, hi)" style range checks on doubles, with the interval in the message.
void in_range(double value, double lo, bool lo_open, double hi, bool hi_open, const char* key) {
  const bool ok = (lo_open ? value > lo : value >= lo) && (hi_open ? value < hi : value <= hi);
  need(ok, {key}, fmt::format("must be in {}{}, {}{}, got {}", lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]", value));
}

// The multiples of n_head nearest to d_model (one below when there is one, one above).
std::string valid_d_models(std::size_t d_model, std::size_t n_head) {
  const std::size_t below = d_model / n_head * n_head;
  const std::size_t above = below + n_head;
  if (below == 0) return fmt::format("{}", above);
  return fmt::format("{} or {}", below, above);
}

}  // namespace

void validate(const RunConfig& cfg) {
  const ModelConfig& m = cfg.model;
  if (m.vocab_size) at_least(*m.vocab_size, 1, "model.vocab_size");
  if (m.context) at_least(*m.context, 1, "model.context");
  at_least(m.n_head, 1, "model.n_head");
  at_least(m.d_model, 1, "model.d_model");
  need(m.d_model % m.n_head == 0, {"model.d_model", "model.n_head"},
       fmt::format("{} is not divisible by model.n_head = {}; valid d_model near it: {} (head size D = d_model / "
                   "n_head)",
                   m.d_model, m.n_head, valid_d_models(m.d_model, m.n_head)));
  at_least(m.n_layer, 1, "model.n_layer");
  at_least(m.mlp_ratio, 1, "model.mlp_ratio");
  in_range(m.dropout, 0.0, false, 1.0, true, "model.dropout");

  const DataConfig& d = cfg.data;
  need(!((d.task == Task::text || d.task == Task::tokens) && d.path.empty()), {"data.path", "data.task"},
       fmt::format("task '{}' reads a file: set data.path (a {} file)", to_string(d.task),
                   d.task == Task::text ? "UTF-8 text" : ".npy token"));
  need(!(d.task == Task::text && !m.context), {"model.context", "data.task"},
       "'auto' takes the length of a task's sequences or a tokens file's rows; task 'text' cuts the file into "
       "windows: set model.context to the window length (e.g. 64)");
  at_least(d.length, 1, "data.length");
  need(d.digits >= 1 && d.digits <= 9, {"data.digits"}, fmt::format("must be in [1, 9], got {}", d.digits));
  at_least(d.alphabet, 2, "data.alphabet");
  at_least(d.eval_size, 1, "data.eval_size");
  in_range(d.val_fraction, 0.0, true, 1.0, true, "data.val_fraction");

  const OptimizerConfig& o = cfg.optimizer;
  need(o.lr > 0, {"optimizer.lr"}, fmt::format("must be > 0, got {}", o.lr));
  need(o.weight_decay >= 0, {"optimizer.weight_decay"}, fmt::format("must be >= 0, got {}", o.weight_decay));
  need(o.betas[0] >= 0 && o.betas[0] < 1 && o.betas[1] >= 0 && o.betas[1] < 1, {"optimizer.betas"},
       fmt::format("each beta must be in [0, 1), got [{}, {}]", o.betas[0], o.betas[1]));
  need(o.eps > 0, {"optimizer.eps"}, fmt::format("must be > 0, got {}", o.eps));
  in_range(o.momentum, 0.0, false, 1.0, true, "optimizer.momentum");
  need(!(o.nesterov && o.momentum == 0), {"optimizer.nesterov", "optimizer.momentum"},
       "true needs optimizer.momentum > 0 (got 0)");

  const ScheduleConfig& s = cfg.schedule;
  const TrainingConfig& t = cfg.training;
  if (s.name != ScheduleName::constant)
    need(s.warmup_steps <= t.steps, {"schedule.warmup_steps", "training.steps"},
         fmt::format("{} is more than training.steps = {}; valid: 0 to {}", s.warmup_steps, t.steps, t.steps));
  if (s.name == ScheduleName::cosine) {
    need(s.min_lr >= 0, {"schedule.min_lr"}, fmt::format("must be >= 0, got {}", s.min_lr));
    need(s.min_lr <= o.lr, {"schedule.min_lr", "optimizer.lr"},
         fmt::format("{} is larger than optimizer.lr = {}; valid: 0 to {}", s.min_lr, o.lr, o.lr));
    if (s.decay_steps)
      need(*s.decay_steps >= 1 && *s.decay_steps >= s.warmup_steps, {"schedule.decay_steps", "schedule.warmup_steps"},
           fmt::format("{} must be at least 1 and at least schedule.warmup_steps = {} (or null = training.steps)",
                       *s.decay_steps, s.warmup_steps));
  }

  at_least(t.batch_size, 1, "training.batch_size");
  need(t.grad_clip >= 0, {"training.grad_clip"}, fmt::format("must be >= 0 (0 = off), got {}", t.grad_clip));
  at_least(t.eval_interval, 1, "training.eval_interval");
  at_least(t.eval_batches, 1, "training.eval_batches");
  at_least(t.threads, 1, "training.threads");

  const LoggingConfig& l = cfg.logging;
  need(!l.out_dir.empty(), {"logging.out_dir"}, "must not be empty");
  at_least(l.log_interval, 1, "logging.log_interval");
}

}  // namespace tf::config
