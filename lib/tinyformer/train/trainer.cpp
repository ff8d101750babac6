#include "tinyformer/train/trainer.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/config/config.hpp"
#include "tinyformer/data/data.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/optim/schedule.hpp"
#include "tinyformer/tensor/gemm.hpp"
#include "tinyformer/tensor/parallel.hpp"
#include "tinyformer/train/attention_stats.hpp"
#include "tinyformer/train/checkpoint.hpp"
#include "tinyformer/train/run_report.hpp"
#include "tinyformer/train/setup.hpp"

namespace fs = std::filesystem;

namespace tf::train {

namespace {

using Clock = std::chrono::steady_clock;

std::string format_duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}h{:02}m", s / 3600, (s / 60) % 60) : fmt::format("{}m{:02}s", s / 60, s % 60);
}

struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;
};

EvalResult evaluate(nn::GPT<float>& model, data::DataSource& source, std::size_t batch_size, std::size_t max_batches) {
  NoGradGuard no_grad;
  model.eval();
  const auto& batches = source.eval_batches(batch_size);
  data::Accuracy acc;
  double total = 0;
  std::size_t n = 0;
  for (const auto& batch : batches) {
    if (n == max_batches) break;
    const Var<float> logits = model.forward(batch.x);
    total += cross_entropy(logits, batch.y).item();
    acc += data::accuracy_from_logits(logits.value(), batch.y);
    ++n;
  }
  model.train();
  EvalResult r;
  r.loss = n ? total / static_cast<double>(n) : 0.0;
  if (source.is_task()) r.accuracy = acc.exact();
  return r;
}

// --overwrite: the files of the earlier run that this one would not replace (its attention snapshots).
void remove_run_files(const std::string& out) {
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(out) / "attention", ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind("step_", 0) == 0) fs::remove(it->path(), ec);
}

}  // namespace

TrainResult train(const TrainOptions& options) {
  config::RunConfig cfg = config::load_config(options.config_path, options.overrides);
  if (options.out_dir) cfg.logging.out_dir = *options.out_dir;
  const std::string out = cfg.logging.out_dir;
  const std::string checkpoint_path = (fs::path(out) / "checkpoint.safetensors").string();

  if (!options.resume && !options.overwrite && fs::exists(checkpoint_path))
    throw std::runtime_error(fmt::format("{} already holds a run ({}): continue it with --resume, start over with "
                                         "--overwrite, or choose another --out",
                                         out, checkpoint_path));

  RunSetup setup = make_run(cfg);  // data, model, optimizer, schedule, generators, all from the seed
  nn::GPT<float>& model = *setup.model;
  optim::Optimizer<float>& optimizer = *setup.optimizer;
  data::DataSource& source = *setup.data;
  cfg.model.context = model.config().block_size;  // config.yaml records the resolved value of 'auto'
  set_num_threads(static_cast<int>(cfg.training.threads));

  long start_step = 0;
  if (options.resume) {
    if (!fs::exists(checkpoint_path))
      throw std::runtime_error(fmt::format("--resume: no checkpoint at {} (train without --resume first)", checkpoint_path));
    const auto file = io::SafetensorsFile::load(checkpoint_path);
    check_same_architecture(file, model.config());
    load_model_weights(file, model);
    load_optimizer_state(file, optimizer);
    const TrainingState st = read_training_state(file);
    setup.data_rng.set_state(st.data_rng);
    model.dropout_rng().set_state(st.dropout_rng);
    start_step = st.step;
    fast_forward_data(cfg, source, static_cast<std::size_t>(start_step));
  } else if (!options.init_from.empty()) {
    load_model_weights(io::SafetensorsFile::load(options.init_from), model);
  }

  std::error_code ec;
  fs::create_directories(fs::path(out) / "attention", ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create the out dir {}: {}; choose another --out", out, ec.message()));
  if (options.overwrite && !options.resume) remove_run_files(out);
  for (const auto& stale : io::remove_stale_temporaries(checkpoint_path))
    if (options.progress) fmt::print("tinyformer: removed {}, left by a save that was cut off\n", stale);
  const std::string config_yaml = config::to_yaml(cfg);
  io::write_file_atomic((fs::path(out) / "config.yaml").string(), config_yaml.data(), config_yaml.size());
  const std::string metrics_path = (fs::path(out) / "metrics.jsonl").string();
  std::ofstream metrics(metrics_path, options.resume ? std::ios::app : std::ios::trunc);
  if (!metrics) throw std::runtime_error(fmt::format("cannot write {}", metrics_path));

  auto save = [&](long step) {
    TrainingState st;
    st.step = step;
    st.config_yaml = config_yaml;
    st.vocab = source.vocab().serialize();
    st.data_rng = setup.data_rng.state();
    st.dropout_rng = model.dropout_rng().state();
    try {
      save_checkpoint(checkpoint_path, model, &optimizer, st);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("step {}: the checkpoint could not be saved: {}; {}", step, e.what(),
                                           fs::exists(checkpoint_path)
                                               ? "the previous checkpoint there is unchanged"
                                               : "no checkpoint was written"));
    }
  };

  const bool tty = options.progress && isatty(STDOUT_FILENO);
  if (options.progress)
    fmt::print("tinyformer: {} | {} parameters | {} steps from step {} | out {}\n", source.describe(),
               model.num_parameters(), cfg.training.steps, start_step, out);

  TrainResult result;
  result.out_dir = out;
  const long total_steps = static_cast<long>(cfg.training.steps);
  const std::size_t B = cfg.training.batch_size;
  const auto params = model.named_parameters();
  const auto t0 = Clock::now();
  auto t_log = t0;
  long tokens_since_log = 0;

  for (long step = start_step; step < total_steps; ++step) {
    const double lr = setup.schedule.at(step);
    optimizer.set_lr(lr);
    const data::Batch batch = source.train_batch(B, setup.data_rng);
    const bool log_now = (step + 1) % static_cast<long>(cfg.logging.log_interval) == 0 || step + 1 == total_steps;
    model.record_attention(log_now);

    optimizer.zero_grad();
    const Var<float> loss = model.loss(batch.x, batch.y);
    const double loss_value = loss.item();
    double grad_norm = NAN;
    std::string bad_param;
    if (std::isfinite(loss_value)) {
      loss.backward();
      grad_norm = cfg.training.grad_clip > 0 ? optim::clip_grad_norm(params, cfg.training.grad_clip)
                                             : optim::grad_norm(params);
      if (!std::isfinite(grad_norm)) bad_param = optim::first_nonfinite_grad(params);
    }
    if (!std::isfinite(loss_value) || !bad_param.empty()) {
      std::string what = bad_param.empty() ? fmt::format("the loss is {}", loss_value)
                                           : fmt::format("the gradient of {} is not finite", bad_param);
      if (const std::string bad_value = optim::first_nonfinite_value(params); !bad_value.empty())
        what += fmt::format(" (the weights diverged: {} holds a non-finite value; lower optimizer.lr or set "
                            "training.grad_clip)",
                            bad_value);
      if (cfg.training.nonfinite == config::NonFinitePolicy::stop) {
        model.record_attention(false);
        throw std::runtime_error(fmt::format(
            "step {}: {}; training stopped (training.nonfinite: stop). The last good checkpoint is {}{}", step + 1,
            what, checkpoint_path, fs::exists(checkpoint_path) ? "" : " (none written yet)"));
      }
      fmt::print(stderr, "tinyformer: step {}: {}; step skipped (training.nonfinite: skip)\n", step + 1, what);
      optimizer.zero_grad();
      continue;
    }
    optimizer.step();
    result.train_losses.push_back(loss_value);
    result.last_train_loss = loss_value;
    result.steps_done = step + 1;
    tokens_since_log += static_cast<long>(batch.x.size());

    const long done = step + 1;
    const bool eval_now = done % static_cast<long>(cfg.training.eval_interval) == 0 || done == total_steps;
    if (log_now || eval_now) {
      nlohmann::json row = {{"step", done}, {"train_loss", loss_value}, {"lr", lr}, {"grad_norm", grad_norm}};
      const auto now = Clock::now();
      const double secs = std::chrono::duration<double>(now - t_log).count();
      row["tokens_per_s"] = secs > 0 ? tokens_since_log / secs : 0.0;
      t_log = now;
      tokens_since_log = 0;
      if (log_now) {
        nlohmann::json entropy = nlohmann::json::array();
        for (const auto& w : model.attention_weights()) entropy.push_back(attention_entropy(w));
        row["attention_entropy"] = entropy;
      }
      if (eval_now) {
        const EvalResult ev = evaluate(model, source, B, cfg.training.eval_batches);
        row["val_loss"] = ev.loss;
        result.last_val_loss = ev.loss;
        if (ev.accuracy) {
          row["accuracy"] = *ev.accuracy;
          result.last_accuracy = ev.accuracy;
        }
      }
      metrics << row.dump() << '\n' << std::flush;
      if (options.progress) {
        const double elapsed = std::chrono::duration<double>(now - t0).count();
        const double per_step = elapsed / static_cast<double>(done - start_step);
        std::string line = fmt::format("step {:>6}/{} | loss {:.4f} | lr {:.2e} | {:.0f} tok/s | ETA {}", done,
                                       total_steps, loss_value, lr, row["tokens_per_s"].get<double>(),
                                       format_duration(per_step * static_cast<double>(total_steps - done)));
        if (row.contains("val_loss")) line += fmt::format(" | val {:.4f}", row["val_loss"].get<double>());
        if (row.contains("accuracy")) line += fmt::format(" | acc {:.3f}", row["accuracy"].get<double>());
        if (tty)
          fmt::print("\r{:<110}{}", line, eval_now ? "\n" : "");
        else
          fmt::print("{}\n", line);
        std::fflush(stdout);
      }
    }
    model.record_attention(false);

    if (cfg.logging.attention_interval > 0 &&
        (done % static_cast<long>(cfg.logging.attention_interval) == 0 || done == total_steps))
      write_attention_snapshot(out, done, model, source, setup.probe);
    const bool stop_now = options.stop && options.stop->load();
    if ((cfg.logging.checkpoint_interval > 0 && done % static_cast<long>(cfg.logging.checkpoint_interval) == 0) ||
        done == total_steps || stop_now)
      save(done);
    if (stop_now) {
      result.interrupted = true;
      if (options.progress)
        fmt::print("\ntinyformer: interrupted after step {}; checkpoint written to {} (continue with --resume)\n",
                   done, checkpoint_path);
      break;
    }
  }
  if (total_steps <= start_step) save(start_step);
  write_run_report(out);
  if (options.progress) fmt::print("tinyformer: report written to {}\n", (fs::path(out) / "report.html").string());
  return result;
}

}  // namespace tf::train
