#pragma once
// The run configuration: plain typed data read from a YAML file plus `--set key.path=value` overrides,
// every key defaulted and validated before any work starts. The trainer turns it into data, model and
// optimizer objects; this layer includes nothing above tensor/ (it needs nothing from it either) and keeps
// yaml-cpp out of its public header. Every key, its type, default and meaning: docs/config.md.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

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

// ---- enum-valued keys: the YAML names are exactly the enumerator names ----
enum class InitScheme { xavier_uniform, xavier_normal, normal };  // model.init
enum class AttentionImpl { fused, composed };                     // model.attention
enum class Task { copy, reverse, sort, add, induction, text, tokens };  // data.task
enum class OptimizerName { sgd, adam, adamw };                    // optimizer.name
enum class DecayRule { matrices_no_embeddings, matrices, all, none };  // optimizer.decay_rule
enum class ScheduleName { constant, warmup, cosine };             // schedule.name
enum class NonFinitePolicy { stop, skip };                        // training.nonfinite

std::string to_string(InitScheme v);
std::string to_string(AttentionImpl v);
std::string to_string(Task v);
std::string to_string(OptimizerName v);
std::string to_string(DecayRule v);
std::string to_string(ScheduleName v);
std::string to_string(NonFinitePolicy v);

// The valid YAML names of E, in declaration order.
template <class E>
std::vector<std::string> enum_names();
// The enumerator named `name`; throws ConfigError ("unknown value 'adamx'; valid: sgd, adam, adamw (did you
// mean adamw?)"). Defined for the seven enums above.
template <class E>
E parse_enum(const std::string& name);

// The candidate closest to `word` (Levenshtein distance <= 2, or one is a prefix of the other, case
// ignored), or "" when none is close. Used for did-you-mean suggestions.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

// ---- sections ----

struct ModelConfig {
  std::optional<std::size_t> vocab_size;  // V; default "auto" (nullopt): taken from the data
  // T: positions the model sees (block_size, rows of the positional table); default "auto" (nullopt): the
  // length of the task's sequences or the tokens file's rows. Text needs a number (its window length).
  std::optional<std::size_t> context;
  std::size_t d_model = 64;               // C: embedding width; divisible by n_head
  std::size_t n_head = 4;                 // H: attention heads, head size D = d_model / n_head
  std::size_t n_layer = 2;                // transformer blocks, >= 1
  std::size_t mlp_ratio = 4;              // MLP hidden width = mlp_ratio * d_model
  double dropout = 0.0;                   // in [0, 1)
  bool bias = true;                       // biases in Linear and LayerNorm
  bool tie_weights = false;               // lm_head shares transformer.wte.weight
  InitScheme init = InitScheme::xavier_uniform;
  AttentionImpl attention = AttentionImpl::fused;
};

struct DataConfig {
  Task task = Task::reverse;
  std::string path;          // text/tokens file; load_config makes a relative path absolute against the
                             // config file's directory (against the working directory for --set); default ""
  std::size_t length = 8;    // synthetic tasks: length of the source part of a sequence
  std::size_t digits = 3;    // add: digits per operand, in [1, 9]
  std::size_t alphabet = 10; // synthetic tasks: number of distinct symbols, >= 2
  std::size_t eval_size = 512;     // held-out examples
  double val_fraction = 0.1;       // text: fraction held out for validation, in (0, 1)
  bool shuffle = true;             // tokens: shuffle the training windows
};

struct OptimizerConfig {
  OptimizerName name = OptimizerName::adamw;
  double lr = 1e-3;                  // peak learning rate, > 0
  double weight_decay = 0.01;        // >= 0; when absent from the file: 0.01 for adamw, 0 for sgd and adam
  std::array<double, 2> betas{0.9, 0.999};  // adam/adamw: two values, each in [0, 1)
  double eps = 1e-8;                 // adam/adamw, > 0
  double momentum = 0.9;             // sgd, in [0, 1)
  bool nesterov = false;             // sgd; needs momentum > 0
  DecayRule decay_rule = DecayRule::matrices_no_embeddings;  // which parameters get weight decay
};

struct ScheduleConfig {
  ScheduleName name = ScheduleName::cosine;
  std::size_t warmup_steps = 100;          // linear warmup from 0 (warmup, cosine); <= training.steps
  double min_lr = 1e-4;                    // cosine: final learning rate, <= optimizer.lr
  std::optional<std::size_t> decay_steps;  // cosine: steps to reach min_lr; default (null) = training.steps
};

struct TrainingConfig {
  std::size_t batch_size = 32;     // B, >= 1
  std::size_t steps = 2000;        // optimizer steps, >= 0
  double grad_clip = 1.0;          // max global gradient norm; 0 = off
  std::size_t eval_interval = 100; // steps between evaluations, >= 1
  std::size_t eval_batches = 8;    // batches per evaluation, >= 1
  std::size_t threads = 1;         // BLAS/worker threads, >= 1
  std::uint64_t seed = 1337;       // drives data, init and dropout
  NonFinitePolicy nonfinite = NonFinitePolicy::stop;  // on a NaN/inf loss or gradient: stop, or skip the step
};

struct LoggingConfig {
  std::string out_dir = "runs/default";  // load_config's default: "runs/<config file stem>" (relative to the
                                         // working directory)
  std::size_t log_interval = 10;         // steps between log lines, >= 1
  std::size_t attention_interval = 100;  // steps between attention snapshots; 0 = off
  std::size_t checkpoint_interval = 500; // steps between checkpoints; 0 = only the final one
  std::string probe;                     // probe prompt; "" = the task's default probe
};

// Where each value came from, so that checks made later (against the data, a checkpoint) can point at the
// line to fix. Not part of a config's value: operator== ignores it.
struct ConfigSource {
  std::string file;                           // the YAML file ("" for a config built in code)
  std::map<std::string, std::string> origin;  // "section.key" -> " at line N" or " (--set text)"; absent: default
  // "configs/x.yaml: model.context at line 3", "...: model.context (--set model.context=8)", "...: key (default)".
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

bool operator==(const ModelConfig& a, const ModelConfig& b);
bool operator==(const DataConfig& a, const DataConfig& b);
bool operator==(const OptimizerConfig& a, const OptimizerConfig& b);
bool operator==(const ScheduleConfig& a, const ScheduleConfig& b);
bool operator==(const TrainingConfig& a, const TrainingConfig& b);
bool operator==(const LoggingConfig& a, const LoggingConfig& b);
bool operator==(const RunConfig& a, const RunConfig& b);
inline bool operator!=(const RunConfig& a, const RunConfig& b) { return !(a == b); }

// A ConfigError for a check that needs more than the config (the data, a checkpoint): "<locate(key)>: detail".
ConfigError error_at(const RunConfig& cfg, const std::string& key, const std::string& detail);

// schedule.decay_steps, or training.steps when it is null.
std::size_t effective_decay_steps(const RunConfig& cfg);

// The value checks of load_config (ranges, d_model % n_head, warmup_steps <= steps, min_lr <= lr, path for
// text/tokens, ...) on a config built in code. Throws ConfigError; keys() names the key paths involved.
void validate(const RunConfig& cfg);

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
