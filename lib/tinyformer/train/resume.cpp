#include "tinyformer/train/resume.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/optim/schedule.hpp"

namespace tf::train {

namespace {

// Was `key` given with --set on this command line (not in the file, not a default)?
bool set_here(const config::RunConfig& cfg, const std::string& key) {
  const auto it = cfg.source.origin.find(key);
  return it != cfg.source.origin.end() && it->second.find("(--set ") != std::string::npos;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : sep) + p;
  return s;
}

// The schedule values the config file gives (not --set) that a resumed run does not use because it keeps the
// checkpoint's: "; the config's warmup_steps 20 is not used" (or "" when it gives the checkpoint's or nothing).
std::string values_not_used(const config::RunConfig& saved, const config::RunConfig& cfg, bool warmup_here,
                            bool decay_here) {
  std::vector<std::string> unused;
  if (!warmup_here && cfg.schedule.warmup_steps != saved.schedule.warmup_steps)
    unused.push_back(fmt::format("warmup_steps {}", cfg.schedule.warmup_steps));
  if (!decay_here && cfg.schedule.decay_steps && *cfg.schedule.decay_steps != config::effective_decay_steps(saved))
    unused.push_back(fmt::format("decay_steps {}", *cfg.schedule.decay_steps));
  if (unused.empty()) return "";
  return fmt::format("; the config's {} {} not used (a resumed run keeps the checkpoint's unless --set gives it)",
                     join(unused, " and "), unused.size() == 1 ? "is" : "are");
}

}  // namespace

std::string keep_checkpoint_schedule(const config::RunConfig& saved, long step, config::RunConfig& cfg) {
  config::ScheduleConfig& s = cfg.schedule;
  const bool decay_here = set_here(cfg, config::keys::schedule::decay_steps);
  const bool warmup_here = set_here(cfg, config::keys::schedule::warmup_steps);
  const std::string unused = values_not_used(saved, cfg, warmup_here, decay_here);
  if (!warmup_here) s.warmup_steps = saved.schedule.warmup_steps;
  if (decay_here)
    s.decay_steps = config::effective_decay_steps(cfg);
  else if (saved.schedule.decay_steps || saved.training.steps != cfg.training.steps)
    s.decay_steps = config::effective_decay_steps(saved);
  else  // 'auto' with the same steps: the same schedule, recorded as the uninterrupted run records it
    s.decay_steps = std::nullopt;
  if (step >= static_cast<long>(cfg.training.steps)) return "";  // nothing to train: no schedule to describe
  config::validate(cfg);                                         // decay_steps >= warmup_steps, warmup_steps <= steps
  const optim::LrSchedule schedule = optim::LrSchedule::from_config(cfg);
  const std::string head = fmt::format("resuming at step {} of {}", step, cfg.training.steps);
  const double lr_now = schedule.at(step);
  if (s.name != config::ScheduleName::cosine)
    return fmt::format("{}; the {} schedule gives lr {:.2e} from here{}", head, config::to_string(s.name), lr_now,
                       unused);
  const auto decay = static_cast<long>(config::effective_decay_steps(cfg));
  const std::string where = step >= decay ? fmt::format("lr {:.2e} at min_lr from step {}", lr_now, decay)
                                          : fmt::format("lr {:.2e} at step {}, down to min_lr {:.2e} at step {}",
                                                        lr_now, step + 1, s.min_lr, decay);
  if (decay_here)
    return fmt::format("{}; the schedule takes decay_steps {} from the command line ({}){}", head, decay, where,
                       unused);
  return fmt::format("{}; the schedule keeps decay_steps {} from the checkpoint ({}); set {} (with --allow-changes) to "
                     "change it{}",
                     head, decay, where, config::keys::schedule::decay_steps, unused);
}

void check_config_changes(const config::RunConfig& saved, const config::RunConfig& cfg, bool allow_changes,
                          bool same_global_batch, const std::string& checkpoint, std::vector<std::string>& notes) {
  std::vector<std::string> all, fixed, exact;
  for (const config::FieldChange& c : config::diff(saved, cfg)) {
    const std::string change = fmt::format("{} {} -> {}", c.path, c.before, c.after);
    // The same global batch cut differently (one process taking two processes' batch) continues the same run.
    const bool batch_split = same_global_batch && (c.path == config::keys::training::batch_size ||
                                                   c.path == config::keys::training::grad_accum);
    if (c.on_resume == config::OnResume::fixed) fixed.push_back(change);
    if (c.on_resume == config::OnResume::exact && !batch_split) exact.push_back(change);
    all.push_back(c.on_resume == config::OnResume::exact && !batch_split ? change + " (--allow-changes)" : change);
  }
  if (!fixed.empty())
    throw std::invalid_argument(fmt::format(
        "--resume from {}: {} differ{} from the checkpoint's config and cannot change in a resumed run, not even with "
        "--allow-changes (the weights or the optimizer state are shaped by it); start a new run with another --out "
        "or --overwrite",
        checkpoint, join(fixed, ", "), fixed.size() == 1 ? "s" : ""));
  if (!exact.empty() && !allow_changes)
    throw std::invalid_argument(fmt::format(
        "--resume from {}: {} differ{} from the checkpoint's config, which breaks exact continuation; resume with "
        "--allow-changes to accept {}, or drop the change",
        checkpoint, join(exact, ", "), exact.size() == 1 ? "s" : "", exact.size() == 1 ? "it" : "them"));
  if (!all.empty()) notes.push_back("changed since the checkpoint: " + join(all, ", "));
}

}  // namespace tf::train
