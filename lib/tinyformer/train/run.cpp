#include "tinyformer/train/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/checkpoint/data_fingerprint.hpp"
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/nn/parameter_shapes.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/parallel.hpp"
#include "tinyformer/tensor/utf8.hpp"
#include "tinyformer/train/replicas.hpp"
#include "tinyformer/train/resume.hpp"

namespace fs = std::filesystem;

namespace tf::train {

namespace {

// The files a run writes directly in its out dir (besides attention/).
constexpr const char* kRunFiles[] = {"config.yaml", "metrics.jsonl", "checkpoint.safetensors", "report.html",
                                     "heads.json",  "gemm_plan.txt", "tinyformer.lock"};

// --overwrite: the files of the earlier run that this one would not replace (its attention snapshots).
void remove_run_files(const std::string& out) {
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(out) / "attention", ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind("step_", 0) == 0) fs::remove(it->path(), ec);
}

// The checkpoint's config (its "tinyformer.config"), or nothing when this version cannot read it back (a key since
// renamed): then its keys are not compared and the schedule is the config's, said in a note.
std::optional<config::RunConfig> checkpoint_config(const std::string& path, const checkpoint::TrainingState& st,
                                                   std::vector<std::string>& notes) {
  try {
    return config::load_config_text(st.config_yaml, path);
  } catch (const config::ConfigError& e) {
    notes.push_back(fmt::format("the checkpoint's config cannot be read back ({}): its keys are not compared with "
                                "this run's, and the schedule is this config's",
                                e.detail().empty() ? e.what() : e.detail()));
    return std::nullopt;
  }
}

std::string count_of_processes(std::int64_t n) { return fmt::format("{} process{}", n, n == 1 ? "" : "es"); }

// "the checkpoint's steps took 32 sequences (2 processes), this run's take 16 (1 process x grad_accum 1 x batch_size
// 16)": both global batches, with the process counts that make them.
std::string global_batch_change(const config::RunConfig& cfg, const checkpoint::TrainingState& st, std::size_t before) {
  return fmt::format("the checkpoint's steps took {} sequences ({}), this run's take {} ({} x grad_accum {} x "
                     "batch_size {})",
                     before, count_of_processes(st.processes), sequences_per_step(cfg),
                     count_of_processes(static_cast<std::int64_t>(dist::size())), cfg.training.grad_accum,
                     cfg.training.batch_size);
}

// What the run keeps from the checkpoint and what it may change (train/resume.hpp): the schedule's warmup and
// decay steps, the config keys, the data. Throws on a change the options do not allow, before anything is loaded.
void reconcile_with_checkpoint(Run& run, const checkpoint::TrainingState& st, const TrainOptions& options,
                               std::size_t before, std::vector<std::string>& notes) {
  const std::string& ckpt = run.checkpoint_path;
  if (const auto saved = checkpoint_config(ckpt, st, notes)) {
    const std::string schedule_line = keep_checkpoint_schedule(*saved, static_cast<long>(st.step), run.cfg);
    if (!schedule_line.empty()) {
      run.parts.schedule = optim::LrSchedule::from_config(run.cfg);
      notes.push_back(schedule_line);
    }
    config::RunConfig resolved = *saved;  // decay_steps `auto` as run.cfg now has it: kept, or the number it stood for
    if (run.cfg.schedule.decay_steps) resolved.schedule.decay_steps = config::effective_decay_steps(*saved);
    check_config_changes(resolved, run.cfg, options.allow_changes, before == sequences_per_step(run.cfg), ckpt, notes);
  }
  checkpoint::check_same_data(st.data_fingerprint, st.vocab, run.data_fingerprint, run.parts.data->vocab().serialize(),
                              options.allow_changes, ckpt, notes);
  // Another number of processes changes the global batch as training.batch_size would: an `exact` change.
  if (const std::size_t now = sequences_per_step(run.cfg); before != now && !options.allow_changes)
    throw std::invalid_argument(fmt::format(
        "--resume from {}: {}, which breaks exact continuation; resume with --allow-changes to accept it, or keep the "
        "global batch",
        ckpt, global_batch_change(run.cfg, st, before)));
}

// Restores weights, optimizer state, generators and the data position from <out>/checkpoint.safetensors, after
// reconcile_with_checkpoint. Returns the global batch its steps had, by which an in-order data source was advanced.
std::size_t resume_from_checkpoint(Run& run, const TrainOptions& options, std::vector<std::string>& notes) {
  if (!fs::exists(run.checkpoint_path))
    throw std::runtime_error(
        fmt::format("--resume: no checkpoint at {} (train without --resume first)", run.checkpoint_path));
  const auto file = io::SafetensorsFile::load(run.checkpoint_path);
  const checkpoint::TrainingState st = checkpoint::read_training_state(file);
  if (st.data_rng.empty() || st.dropout_rng.empty())
    throw std::runtime_error(fmt::format("--resume: {} holds a model saved by a program, not a run (no generator "
                                         "states): start a new run from its weights with --init-from",
                                         run.checkpoint_path));
  const std::size_t now = sequences_per_step(run.cfg);
  const auto before = st.sequences_per_step > 0 ? static_cast<std::size_t>(st.sequences_per_step) : now;
  reconcile_with_checkpoint(run, st, options, before, notes);
  nn::GPT<float>& model = *run.parts.model;
  checkpoint::check_same_architecture(file, model.config());
  checkpoint::load_model_weights(file, model);
  checkpoint::load_optimizer_state(file, *run.parts.optimizer);
  run.parts.data_rng.set_state(st.data_rng);
  model.dropout_rng().set_state(st.dropout_rng);
  run.start_step = st.step;
  if (before != now)
    notes.push_back(global_batch_change(run.cfg, st, before) + ": the run goes on with the new global batch");
  fast_forward_data(run.cfg, *run.parts.data, static_cast<std::size_t>(st.step), before);
  return before;
}

// A temporary file of a save that was cut off (kill -9) is not part of the run: removed, with a note.
void remove_stale_temporaries(const Run& run, std::vector<std::string>& notes) {
  for (const fs::path& dir : {fs::path(run.out_dir), fs::path(run.out_dir) / "attention"})
    for (const auto& stale : io::remove_stale_temporaries_in(dir.string()))
      notes.push_back(fmt::format("removed {}, left by a save that was cut off", stale));
}

// The files a run writes in its out dir, each checked before anything is loaded or written: a directory, FIFO,
// device, socket or link standing where one of them goes is refused with its path (tensor/files.hpp's gate), as is
// an out dir that is not a directory. Missing parents are found when the out dir is created, still before any write.
void plan_run_outputs(const std::string& out_dir) {
  std::error_code ec;
  const auto kind = fs::status(out_dir, ec).type();
  if (kind == fs::file_type::not_found) return;  // created later; nothing in it yet
  if (kind != fs::file_type::directory)
    throw std::runtime_error(fmt::format("the out dir {} is not a directory; choose another --out", out_dir));
  for (const char* name : kRunFiles)
    if (const std::string problem = output_target_problem((fs::path(out_dir) / name).string()); !problem.empty())
      throw FileError((fs::path(out_dir) / name).string(), problem + "; remove it or choose another --out");
  const fs::path attention = fs::path(out_dir) / "attention";
  const auto attention_kind = fs::symlink_status(attention, ec).type();
  if (attention_kind != fs::file_type::not_found && attention_kind != fs::file_type::directory)
    throw FileError(attention.string(), "is not a directory (the run writes its attention snapshots there); remove it "
                                        "or choose another --out");
  // the snapshots step_NNNNNN.{npy,json,png}: whatever stands there that is not a regular file is refused now, not
  // when its step comes (after the steps before it were written)
  if (attention_kind == fs::file_type::directory)
    for (fs::directory_iterator it(attention, ec), end; !ec && it != end; it.increment(ec))
      if (const std::string problem = output_target_problem(it->path().string()); !problem.empty())
        throw FileError(it->path().string(), problem + "; remove it or choose another --out");
}

// The run's inputs (the config file, --init-from, data.path) must not be among the files it writes: a run never
// rewrites what it reads. The config file may be the run dir's config.yaml when the run writes it back unchanged.
void check_inputs_are_not_outputs(const Run& run, const TrainOptions& options) {
  std::error_code ec;
  const fs::path out(run.out_dir);
  const auto is_output = [&](const std::string& input) -> std::string {
    if (input.empty() || !fs::exists(input, ec)) return "";
    for (const char* name : kRunFiles)
      if (fs::equivalent(input, out / name, ec)) return (out / name).string();
    const fs::path dir = fs::path(input).parent_path().empty() ? fs::path(".") : fs::path(input).parent_path();
    if (fs::path(input).filename().string().rfind("step_", 0) == 0 && fs::equivalent(dir, out / "attention", ec))
      return (out / "attention" / fs::path(input).filename()).string();  // a snapshot file this run writes anew
    return "";
  };
  if (options.config_text.empty())
    if (const std::string target = is_output(options.config_path); !target.empty()) {
      const bool same = target == (out / "config.yaml").string() &&
                        read_regular_file(options.config_path, 1 << 20, "a config") == run.config_yaml;
      if (!same)
        throw FileError(options.config_path,
                        fmt::format("is the run's own {}, which train rewrites with the resolved config; copy it out "
                                    "of the run dir and train from the copy",
                                    target));
    }
  if (const std::string target = is_output(options.init_from); !target.empty())
    throw FileError(options.init_from, fmt::format("(--init-from) is {}, which this run writes; copy it out of the run "
                                                   "dir and start from the copy",
                                                   target));
  if (run.cfg.data.task == config::Task::text || run.cfg.data.task == config::Task::tokens)
    if (const std::string target = is_output(run.cfg.data.path); !target.empty())
      throw config::error_at(run.cfg, config::keys::data::path,
                             fmt::format("'{}' is {}, which this run writes; train on a file outside the run dir",
                                         run.cfg.data.path, target));
}

// The out dir with attention/, config.yaml and metrics.jsonl (appended to on resume), after taking the run's lock.
void create_run_files(Run& run, const TrainOptions& options, std::vector<std::string>& notes) {
  std::error_code ec;
  run.created_out_dir = !fs::exists(run.out_dir);
  fs::create_directories(run.out_dir, ec);  // the lock first: nothing in a run dir in use is touched
  if (ec)
    throw std::runtime_error(
        fmt::format("cannot create the out dir {}: {}; choose another --out", run.out_dir, ec.message()));
  if (::access(run.out_dir.c_str(), W_OK) != 0) {
    const int err = errno;
    throw std::runtime_error(
        fmt::format("cannot write in the out dir {}: {}; choose another --out", run.out_dir, std::strerror(err)));
  }
  try {
    run.lock = io::LockFile((fs::path(run.out_dir) / "tinyformer.lock").string());
    if (!run.lock.note().empty()) notes.push_back(run.lock.note());
    fs::create_directories(fs::path(run.out_dir) / "attention", ec);
    if (ec)
      throw std::runtime_error(fmt::format("cannot create {}: {}; choose another --out",
                                           (fs::path(run.out_dir) / "attention").string(), ec.message()));
  } catch (...) {
    run.lock = io::LockFile();
    if (run.created_out_dir) fs::remove_all(run.out_dir, ec);
    throw;
  }
  if (options.overwrite && !options.resume) remove_run_files(run.out_dir);
  remove_stale_temporaries(run, notes);
  const std::string config_path = (fs::path(run.out_dir) / "config.yaml").string();
  std::error_code same_ec;
  if (!(options.config_text.empty() && fs::equivalent(options.config_path, config_path, same_ec)))  // else unchanged
    io::write_file_atomic(config_path, run.config_yaml.data(), run.config_yaml.size());
  const std::string metrics_path = (fs::path(run.out_dir) / "metrics.jsonl").string();
  if (run.kept_metrics) io::write_file_atomic(metrics_path, run.kept_metrics->data(), run.kept_metrics->size());
  run.metrics = io::AppendFile(metrics_path, !options.resume);
}

}  // namespace

void Run::save(long step) {
  check_same_parameters(*this, fmt::format("the weights after step {}", step));
  if (!dist::is_root()) return;
  checkpoint::TrainingState st;
  st.step = step;
  st.config_yaml = config_yaml;
  st.vocab = parts.data->vocab().serialize();
  st.data_rng = parts.data_rng.state();
  st.dropout_rng = parts.model->dropout_rng().state();
  st.sequences_per_step = static_cast<std::int64_t>(sequences_per_step(cfg));
  st.processes = dist::size();
  st.data_fingerprint = data_fingerprint;
  try {
    checkpoint::save_checkpoint(checkpoint_path, *parts.model, parts.optimizer.get(), st);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format(
        "step {}: the checkpoint could not be saved: {}; {}", step, exception_text(e),
        fs::exists(checkpoint_path) ? "the previous checkpoint there is unchanged" : "no checkpoint was written"));
  }
}

namespace {

// --init-from: the file's tensors must be the ones the config's model has (checkpoint::weight_problems on
// nn::parameter_shapes, before a model of the config's size is built; vocab_size and context `auto` are the file's
// until the data resolves them: `resolved`). A mismatch is refused naming the keys where the file's model record
// (tinyformer.model) differs from the config, a context `auto` with the data key that sets it; a file without that
// record (another program's weights) with the list of mismatching tensors.
void check_init_weights(const io::SafetensorsFile& file, const config::RunConfig& cfg, const std::string& path,
                        const config::ModelConfig* resolved = nullptr) {
  config::ModelConfig model = resolved ? *resolved : cfg.model;
  if (!model.vocab_size && file.has("transformer.wte.weight"))
    model.vocab_size = file.shape("transformer.wte.weight")[0];
  if (!model.context) model.context = file.has("transformer.wpe.weight") ? file.shape("transformer.wpe.weight")[0] : 1;
  if (!model.vocab_size) return;  // no embedding to take it from: load_model_weights lists what is missing
  // Each block has at least 4 tensors of its own, so a file holds fewer blocks than tensors (as
  // checkpoint::read_model_config bounds its metadata): listing one block past that many already finds tensors
  // missing, where a config of 10^11 layers would list 10^12 shapes first.
  config::ModelConfig listed = model;
  listed.n_layer = std::min<std::size_t>(model.n_layer, file.names().size() + 1);
  const std::vector<std::string> problems = checkpoint::weight_problems(file, nn::parameter_shapes(listed));
  if (problems.empty()) return;
  std::vector<std::string> differ;
  if (file.metadata().count("tinyformer.model")) {
    config::RunConfig saved = cfg, wanted = cfg;
    if (resolved) wanted.model = *resolved;
    saved.model = checkpoint::read_model_config(file);
    if (!wanted.model.vocab_size) saved.model.vocab_size.reset();
    if (!wanted.model.context) saved.model.context.reset();
    for (const config::FieldChange& c : config::diff(saved, wanted)) {
      if (c.on_resume != config::OnResume::fixed) continue;
      std::string after = c.after;
      if (c.path == config::keys::model::context && !cfg.model.context)
        after = cfg.data.task == config::Task::text || cfg.data.task == config::Task::tokens
                    ? fmt::format("auto ({}, from the data)", c.after)
                    : fmt::format("auto ({}, from {} {})", c.after, config::keys::data::length, cfg.data.length);
      if (c.path == config::keys::model::vocab_size && !cfg.model.vocab_size)
        after = fmt::format("auto ({}, the data's vocabulary)", c.after);
      differ.push_back(fmt::format("{} {} -> {}", c.path, c.before, after));
    }
  }
  if (differ.empty()) throw std::invalid_argument(checkpoint::weight_mismatch_message(file, problems));
  throw std::invalid_argument(fmt::format("--init-from {}: its model differs from the config's in what shapes the "
                                          "weights ({} (checkpoint -> config)); start from a checkpoint of this "
                                          "architecture, or without --init-from",
                                          path, fmt::join(differ, ", ")));
}

// What open_run does on each rank before the ranks compare notes (rank 0 alone reads the out dir). Returns the global
// batch of the resumed checkpoint's steps (0 without --resume).
std::size_t open_on_this_rank(Run& run, const TrainOptions& options, std::vector<std::string>& notes) {
  const bool root = dist::is_root();
  run.cfg = load_run_config(options);
  if (options.out_dir) run.cfg.logging.out_dir = *options.out_dir;
  run.out_dir = run.cfg.logging.out_dir;
  run.checkpoint_path = (fs::path(run.out_dir) / "checkpoint.safetensors").string();
  if (root && !options.resume && !options.overwrite && fs::exists(run.checkpoint_path))
    throw std::runtime_error(fmt::format("{} already holds a run ({}): continue it with --resume, start over with "
                                         "--overwrite, or choose another --out",
                                         run.out_dir, run.checkpoint_path));
  std::vector<std::string> chars;
  if (const std::size_t bad = utf8_split(run.out_dir, chars); bad != std::string::npos)
    throw std::runtime_error(fmt::format("the out dir name '{}' is not UTF-8 ({}); the run records it in JSON, which "
                                         "holds text: choose a UTF-8 name",
                                         run.out_dir, byte_position_str(run.out_dir, bad)));
  if (root) plan_run_outputs(run.out_dir);
  std::optional<io::SafetensorsFile> init;  // an input, like the config and the data: every rank reads it
  if (!options.resume && !options.init_from.empty()) {
    init = io::SafetensorsFile::load(options.init_from);
    check_init_weights(*init, run.cfg, options.init_from);  // before a model of the config's size is built
  }
  const config::RunConfig as_given = run.cfg;  // vocab_size and context perhaps `auto`, resolved next
  run.parts = make_run(run.cfg);               // data, model, optimizer, schedule, generators, all from the seed
  run.cfg.model.context = run.parts.model->context();  // config.yaml records the resolved value of 'auto'
  set_num_threads(run.parts.threads);
  if (root) run.data_fingerprint = checkpoint::data_fingerprint(run.cfg, *run.parts.data);
  std::size_t resumed_sequences = 0;
  if (options.resume && root) {
    resumed_sequences = resume_from_checkpoint(run, options, notes);
    run.kept_metrics = metrics_rows_to_keep((fs::path(run.out_dir) / "metrics.jsonl").string(), run.start_step);
  }
  run.config_yaml = config::to_yaml(run.cfg);  // with the schedule a resumed run keeps
  if (init) {
    check_init_weights(*init, as_given, options.init_from, &run.parts.model->config());
    checkpoint::load_model_weights(*init, *run.parts.model);
  }
  return resumed_sequences;
}

// Runs `body` on this rank; under MPI a failure on any rank becomes the same dist::CollectiveError on every rank.
template <class Body>
void on_every_rank(Body&& body) {
  if (dist::size() == 1) return body();
  std::string error;
  try {
    body();
  } catch (const std::exception& e) {
    error = exception_text(e);
  }
  dist::check_no_errors(error);
}

}  // namespace

config::RunConfig load_run_config(const TrainOptions& options) {
  if (options.config_text.empty()) return config::load_config(options.config_path, options.overrides);
  return config::load_config_text(options.config_text, options.config_path, options.overrides);
}

Run open_run(const TrainOptions& options, std::vector<std::string>& notes) {
  Run run;
  std::size_t resumed_sequences = 0;
  on_every_rank([&] { resumed_sequences = open_on_this_rank(run, options, notes); });
  if (options.resume) share_resumed_schedule(run);  // rank 0 alone read the checkpoint's
  check_same_config_and_data(run);                  // before anything is sent: the ranks' models have the same shapes
  if (options.resume) share_resumed_state(run, resumed_sequences);
  check_same_parameters(run, "the initial parameters");
  run.nothing_to_do = options.resume && run.start_step >= run.total_steps();
  on_every_rank([&] {
    if (!dist::is_root()) return;
    check_inputs_are_not_outputs(run, options);
    if (run.nothing_to_do)
      remove_stale_temporaries(run, notes);
    else
      create_run_files(run, options, notes);
  });
  return run;
}

}  // namespace tf::train
