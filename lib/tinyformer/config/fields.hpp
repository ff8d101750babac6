#pragma once
// Every key of the run config, declared once: name, C++ type, default, the values it may take, what a resumed
// run may do with it, and its line in docs/config.md. This one list makes the section structs (config.hpp) and
// drives the YAML reader and its messages, the checks, the resolved YAML, equality, docs/config.md (generated,
// and compared by a test), the checkpoint's model metadata and what --resume accepts. Adding an option means one
// line here and the code that uses the value.
//
// Types: std::size_t (an int >= 0), std::optional<std::size_t> (an int or `auto`), double, bool, std::string,
// std::uint64_t, Pair (a list of two numbers), and the enums below.
// Checks that relate two keys (d_model divisible by n_head, warmup_steps <= steps, ...) are in config.cpp.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "tinyformer/config/field.hpp"

namespace tf::config {

using Pair = std::array<double, 2>;  // a macro argument cannot hold the comma of std::array<double, 2>

TF_CONFIG_ENUM(InitScheme, xavier_uniform, xavier_normal, normal)
TF_CONFIG_ENUM(AttentionImpl, fused, composed)
TF_CONFIG_ENUM(Norm, layernorm, rmsnorm, none)
TF_CONFIG_ENUM(Mlp, gelu, swiglu, relu, none)
TF_CONFIG_ENUM(Position, learned, rope)
TF_CONFIG_ENUM(Task, copy, reverse, sort, add, induction, repeats, modular, text, tokens)
TF_CONFIG_ENUM(Operation, add, subtract, multiply)
TF_CONFIG_ENUM(Tokenizer, char_, bpe, unigram)  // char_: the YAML name `char` (a C++ keyword)
TF_CONFIG_ENUM(OptimizerName, sgd, adam, adamw)
TF_CONFIG_ENUM(DecayRule, matrices_no_embeddings, matrices, all, none)
TF_CONFIG_ENUM(ScheduleName, constant, warmup, cosine)
TF_CONFIG_ENUM(NonFinitePolicy, stop, skip)
TF_CONFIG_ENUM(SnapshotSchedule, log, interval)

// X(key, type, default, check, on resume, doc); a default that depends on other keys or on the config file is a
// Derived (config/field.hpp): its plain value, its rule and its line in docs/config.md.
// clang-format off
#define TF_MODEL_FIELDS(X)                                                                                             \
  X(vocab_size, std::optional<std::size_t>, std::nullopt, Check::at_least(1), OnResume::fixed,                         \
    "V, the number of token ids; `auto` takes it from the data")                                                       \
  X(context, std::optional<std::size_t>, std::nullopt, Check::at_least(1), OnResume::fixed,                            \
    "T, the sequence length the model sees (rows of the positional table, nanoGPT's block_size); `auto` takes the "    \
    "length of a task's sequences or of a tokens file's rows; a number must equal it (no positions that are never "    \
    "trained). Task `text` needs a number: its window length; task `repeats` too: its sequence length")              \
  X(d_model, std::size_t, 64, Check::at_least(1), OnResume::fixed,                                                     \
    "C, the embedding width; must be divisible by `n_head`")                                                           \
  X(n_head, std::size_t, 4, Check::at_least(1), OnResume::fixed,                                                       \
    "H, attention heads; each head has size D = d_model / n_head")                                                     \
  X(n_kv_head, std::size_t, 0, Check::any(), OnResume::fixed,                                                         \
    "key/value heads (grouped-query attention, as Llama 2): a divisor of `n_head`, each shared by n_head / n_kv_head "  \
    "query heads; `1` is multi-query attention; `0` means `n_head` (every head its own keys and values, as nanoGPT)") \
  X(n_layer, std::size_t, 2, Check::at_least(1), OnResume::fixed,                                                      \
    "number of transformer blocks")                                                                                    \
  X(mlp_ratio, std::size_t, 4, Check::at_least(1), OnResume::fixed,                                                    \
    "the MLP's hidden width is mlp_ratio * d_model")                                                                   \
  X(dropout, double, 0.0, Check::half_open(0, 1), OnResume::exact,                                                     \
    "dropout probability in the model (training only)")                                                               \
  X(bias, bool, true, Check::any(), OnResume::fixed,                                                                   \
    "biases in the Linear and LayerNorm layers")                                                                       \
  X(tie_weights, bool, false, Check::any(), OnResume::fixed,                                                           \
    "the output head shares the token embedding matrix (`lm_head` = `transformer.wte`)")                               \
  X(init, InitScheme, InitScheme::xavier_uniform, Check::any(), OnResume::free,                                        \
    "weight initialisation; `normal` is GPT-2's N(0, 0.02²) with scaled residual projections")                         \
  X(attention, AttentionImpl, AttentionImpl::fused, Check::any(), OnResume::exact,                                     \
    "the fused attention kernel, or the same attention composed from primitive ops (slower, for checking)")          \
  X(norm, Norm, Norm::layernorm, Check::any(), OnResume::fixed,                                                        \
    "`layernorm`, or `rmsnorm`: x / sqrt(mean(x²) + 1e-5) * weight, no centring and no bias (LLaMA); `none`: no "      \
    "normalisation at all, no ln_1, ln_2, ln_f parameters (TransformerLens' normalization_type None, as the "          \
    "grokking model of Nanda et al.)")                                                                                 \
  X(mlp, Mlp, Mlp::gelu, Check::any(), OnResume::fixed,                                                                \
    "`gelu`: c_proj(gelu(c_fc(x))), hidden mlp_ratio * d_model; `swiglu`: c_proj(silu(gate) * up) with [gate; up] = "  \
    "c_fc(x), hidden 2/3 * mlp_ratio * d_model rounded up to a multiple of 8 (about the GELU MLP's parameters); "      \
    "`relu`: c_proj(relu(c_fc(x))), hidden mlp_ratio * d_model; `none`: no MLP and no ln_2, an attention-only model "  \
    "(each block is x + attn(ln_1(x)))")                                                                               \
  X(position, Position, Position::learned, Check::any(), OnResume::fixed,                                              \
    "`learned`: a positional table `transformer.wpe` [context, d_model] added to the token embeddings; `rope`: no "    \
    "table, q and k of every head rotated by position (rotary embeddings, base 10000; the head size must be even)")

#define TF_DATA_FIELDS(X)                                                                                              \
  X(task, Task, Task::reverse, Check::any(), OnResume::exact,                                                          \
    "what to learn: a synthetic task (`repeats`: random tokens with a segment of up to `length` repeated at random "   \
    "places, " \
    "the in-context task of an induction head; `modular`: (a, b, =) -> (a op b) mod `modulus`, a fixed split of the "   \
    "pairs), character-level text, or pre-tokenized ids")                                                              \
  X(path, std::string, "", Check::any(), OnResume::exact,                                                              \
    "the input file for `text` (UTF-8 text) and `tokens` (a `.npy` of token ids, rows of T+1, or an llm.c token "     \
    "file, a stream of uint16 ids cut into windows of `model.context` + 1 as llm.c's dataloader cuts it); required "   \
    "for those tasks. A relative path in the file is resolved against the config file's directory, one given with "   \
    "`--set` against the working directory")                                                                          \
  X(length, std::size_t, 8, Check::at_least(1), OnResume::exact,                                                       \
    "synthetic tasks: length of the source part of each sequence (`repeats`: the longest repeated segment; each "     \
    "sequence's is drawn from 2 to it)")                                                                               \
  X(digits, std::size_t, 3, Check::closed(1, 9), OnResume::exact,                                                      \
    "`add`: digits per operand")                                                                                       \
  X(alphabet, std::size_t, 10, Check::closed(2, 62), OnResume::exact,                                                  \
    "synthetic tasks: number of distinct symbols (0-9, then a-z, then A-Z)")                                           \
  X(modulus, std::size_t, 113, Check::closed(2, 1000), OnResume::exact,                                                \
    "`modular`: p, the modulus; the tokens are 0 .. p-1 and `=`")                                                      \
  X(operation, Operation, Operation::add, Check::any(), OnResume::exact,                                               \
    "`modular`: the answer to (a, b, =) is (a + b), (a - b) or (a * b) mod p")                                         \
  X(train_fraction, double, 0.3, Check::open(0, 1), OnResume::exact,                                                   \
    "`modular`: the fraction of the p² pairs (a, b) that is the training set (rounded, at least 1 and at most p² - 1); " \
    "the rest is held out. The split is fixed by `training.seed`")                                                     \
  X(eval_size, std::size_t, 512, Check::at_least(1), OnResume::exact,                                                  \
    "number of held-out examples used for evaluation (`modular`: at most the held-out pairs, in the split's order)")  \
  X(val_fraction, double, 0.1, Check::open(0, 1), OnResume::exact,                                                     \
    "`text`, `tokens`: fraction of the data held out for validation")                                                  \
  X(shuffle, bool, true, Check::any(), OnResume::exact,                                                                \
    "`tokens`: shuffle the training windows")                                                                          \
  X(tokenizer, Tokenizer, Tokenizer::char_, Check::any(), OnResume::fixed,                                             \
    "`text`: `char`, one token per character; `bpe` or `unigram`, a SentencePiece model of `vocab_size` pieces "       \
    "trained on the training part (ids 0, 1, 2 = <unk>, <s>, </s>, 3..258 the bytes that other characters fall back " \
    "to), stored in the checkpoint")                                                                                   \
  X(vocab_size, std::size_t, 512, Check::at_least(260), OnResume::fixed,                                               \
    "`text` with `bpe` or `unigram`: the SentencePiece vocabulary size (model.vocab_size must be it or `auto`)")      \
  X(documents, std::string, "", Check::any(), OnResume::exact,                                                         \
    "`text`: a line that separates documents (`%` for the fortunes); empty = the file is one document. With `bpe` or " \
    "`unigram` each document starts with <s>; with `char` the separator lines are dropped. The held-out part is the " \
    "last documents")

#define TF_OPTIMIZER_FIELDS(X)                                                                                         \
  X(name, OptimizerName, OptimizerName::adamw, Check::any(), OnResume::fixed,                                          \
    "the update rule")                                                                                                 \
  X(lr, double, 1e-3, Check::above(0), OnResume::exact,                                                                \
    "peak learning rate (the schedule scales it)")                                                                     \
  X(weight_decay, double,                                                                                              \
    (Derived{0.01,                                                                                                     \
             [](double plain, const auto& cfg, const std::string&) {                                                   \
               return cfg.optimizer.name == OptimizerName::adamw ? plain : 0.0;                                        \
             },                                                                                                        \
             "`{}` for `adamw`, `0` for `sgd` and `adam`"}),                                                           \
    Check::at_least(0), OnResume::exact,                                                                               \
    "decoupled weight decay for `adamw`; L2 added to the gradient for `sgd` and `adam`")                               \
  X(betas, Pair, (Pair{0.9, 0.999}), Check::half_open(0, 1), OnResume::exact,        \
    "`adam`/`adamw`: decay rates of the first and second moment estimates")                                            \
  X(eps, double, 1e-8, Check::above(0), OnResume::exact,                                                               \
    "`adam`/`adamw`: added to the denominator")                                                                        \
  X(momentum, double, 0.9, Check::half_open(0, 1), OnResume::exact,                                                    \
    "`sgd`: momentum")                                                                                                 \
  X(nesterov, bool, false, Check::any(), OnResume::exact,                                                              \
    "`sgd`: Nesterov momentum (needs `momentum` > 0)")                                                                 \
  X(decay_rule, DecayRule, DecayRule::matrices_no_embeddings, Check::any(), OnResume::exact,                           \
    "which parameters get weight decay: weight matrices except the embeddings; all matrices; every parameter; none")

#define TF_SCHEDULE_FIELDS(X)                                                                                          \
  X(name, ScheduleName, ScheduleName::cosine, Check::any(), OnResume::exact,                                           \
    "`constant`: lr throughout; `warmup`: linear warmup then lr; `cosine`: linear warmup then cosine decay to "         \
    "`min_lr`")                                                                                                        \
  X(warmup_steps, std::size_t, 100, Check::any(), OnResume::exact,                                                     \
    "steps of linear warmup from 0 to lr (`warmup`, `cosine`); at most `training.steps`. `--resume` keeps the "       \
    "checkpoint's unless `--set` gives it")                              \
  X(min_lr, double, 1e-4, Check::at_least(0), OnResume::exact,                                                         \
    "`cosine`: the learning rate at the end of the decay; at most `optimizer.lr`")                                     \
  X(decay_steps, std::optional<std::size_t>, std::nullopt, Check::at_least(1), OnResume::exact,                        \
    "`cosine`: the step at which the decay reaches `min_lr`, at least `warmup_steps`; `auto` = `training.steps`. "   \
    "`--resume` keeps the checkpoint's (its `auto` resolved), so more steps continue at `min_lr`, unless `--set` "    \
    "gives it")

#define TF_TRAINING_FIELDS(X)                                                                                          \
  X(batch_size, std::size_t, 32, Check::at_least(1), OnResume::exact,                                                  \
    "B, sequences per batch (per process; a step takes `grad_accum` of them on each process); `all`: every example "  \
    "of a task with a fixed training set (`modular`) in one batch, full-batch training (the resolved config holds "    \
    "the number)")                                                                                                     \
  X(grad_accum, std::size_t, 1, Check::at_least(1), OnResume::exact,                                                   \
    "K, micro-batches of `batch_size` per optimizer step (gradient accumulation): the step uses the mean of their "    \
    "losses and gradients (nanoGPT's loss / K; every sequence of the built-in data has the same number of scored "    \
    "targets, so this is the mean over all K x B sequences). Under MPI each of N processes takes K: a step sees "      \
    "N x K x B sequences. Schedule, clipping and metrics count optimizer steps")                                       \
  X(steps, std::size_t, 2000, Check::any(), OnResume::free,                                                            \
    "optimizer steps")                                                                                                 \
  X(max_seconds, double, 0.0, Check::at_least(0), OnResume::free,                                                      \
    "a time budget: the run stops after the first step that ends past this many seconds of its steps (wall clock, "   \
    "evaluations included), evaluates, saves and says so; `0` = none. The step reached then depends on the machine, " \
    "so a run with a budget is not reproducible step for step; without one (`0`) nothing depends on time")          \
  X(grad_clip, double, 1.0, Check::at_least(0), OnResume::exact,                                                       \
    "clip the global gradient norm to this value; `0` = off")                                                          \
  X(eval_interval, std::size_t, 100, Check::at_least(1), OnResume::free,                                               \
    "steps between evaluations on held-out data")                                                                      \
  X(eval_batches, std::size_t, 8, Check::at_least(1), OnResume::free,                                                  \
    "held-out batches per evaluation, each of N x grad_accum x batch_size sequences (the step's global batch)")      \
  X(threads, std::optional<std::size_t>, std::nullopt, Check::at_least(1), OnResume::free,                             \
    "threads for the kernels of each process (BLAS runs single-threaded inside them); `auto` = OMP_NUM_THREADS "       \
    "when it is set (as PyTorch reads it), else the machine's physical cores (under mpirun divided by the processes "  \
    "on the node); at most 4 x the hardware threads (refused above, a warning above the cores); losses are "           \
    "bit-identical for any value")                                                                                     \
  X(seed, std::uint64_t, 1337, Check::any(), OnResume::exact,                                                          \
    "seeds data generation, initialisation and dropout")                                                               \
  X(nonfinite, NonFinitePolicy, NonFinitePolicy::stop, Check::any(), OnResume::free,                                   \
    "on a NaN/inf loss or gradient: stop the run with an error, or skip the step")

#define TF_LOGGING_FIELDS(X)                                                                                           \
  X(out_dir, std::string,                                                                                              \
    (Derived{std::string("runs/default"),                                                                              \
             [](const std::string&, const auto&, const std::string& config_file) {                                     \
               return "runs/" + config_file_stem(config_file);                                                         \
             },                                                                                                        \
             "`runs/<config file stem>`"}),                                                                            \
    Check::any(), OnResume::free,                                                                                      \
    "run directory (metrics, checkpoints, attention maps, report), not empty; relative to the working directory")                 \
  X(log_interval, std::size_t, 10, Check::at_least(1), OnResume::free,                                                 \
    "steps between log lines")                                                                                         \
  X(attention_interval, std::size_t, 100, Check::any(), OnResume::free,                                                \
    "steps between attention snapshots; `0` = off (no snapshots at all)")                                              \
  X(attention_schedule, SnapshotSchedule, SnapshotSchedule::log, Check::any(), OnResume::free,                         \
    "`log`: also snapshot before the first step and at steps 1, 2, 5, 10, 20, 50, 100, 200, 500, ..., so the "        \
    "report shows the pattern form; `interval`: only every `attention_interval` steps (and the last)")                 \
  X(checkpoint_interval, std::size_t, 500, Check::any(), OnResume::free,                                               \
    "steps between checkpoints; `0` = only the final one")                                                             \
  X(probe, std::string, "", Check::any(), OnResume::free,                                                              \
    "the prompt whose attention and continuation are recorded; empty = the task's default probe")

// The sections, in the order of the YAML file and docs/config.md: X(name, struct, fields).
#define TF_CONFIG_SECTIONS(X)                      \
  X(model, ModelConfig, TF_MODEL_FIELDS)           \
  X(data, DataConfig, TF_DATA_FIELDS)              \
  X(optimizer, OptimizerConfig, TF_OPTIMIZER_FIELDS) \
  X(schedule, ScheduleConfig, TF_SCHEDULE_FIELDS)  \
  X(training, TrainingConfig, TF_TRAINING_FIELDS)  \
  X(logging, LoggingConfig, TF_LOGGING_FIELDS)
// clang-format on

}  // namespace tf::config
