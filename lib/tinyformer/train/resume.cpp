#include "tinyformer/train/resume.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/optim/schedule.hpp"
#include "tinyformer/tensor/files.hpp"

namespace tf::train {

namespace {

// FNV-1a 64 of a file's bytes, read in blocks (a tokens file may be large); also its size.
nlohmann::json file_fingerprint(const std::string& path) {
  io::InputFile in(path);  // the gate: a FIFO or a device is refused with its path, not read forever
  std::vector<char> block(1 << 20);
  std::uint64_t h = dist::fnv1a(nullptr, 0), bytes = 0;
  while (bytes < in.size()) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), in.size() - bytes));
    in.read(block.data(), n, "the data to fingerprint it");
    h = dist::fnv1a(block.data(), n, h);
    bytes += n;
  }
  return {{"path", path}, {"bytes", bytes}, {"fnv1a64", dist::hex64(h)}};
}

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

// What the fingerprints say changed: "the vocabulary (39 symbols in the checkpoint, 39 now)", "data.path F: its
// content (the same size, 1934 bytes)", "data.path F: its size (1934 bytes in the checkpoint, 2011 now)".
std::vector<std::string> data_changes(const nlohmann::json& saved, const nlohmann::json& now, bool vocab_differs) {
  std::vector<std::string> what;
  if (vocab_differs)
    what.push_back(fmt::format("the vocabulary ({} symbols in the checkpoint, {} now)",
                               saved.at("vocabulary").at("size").get<std::size_t>(),
                               now.at("vocabulary").at("size").get<std::size_t>()));
  if (saved.contains("file") && now.contains("file")) {
    const auto &a = saved["file"], &b = now["file"];
    const auto bytes_a = a.at("bytes").get<std::uint64_t>(), bytes_b = b.at("bytes").get<std::uint64_t>();
    if (bytes_a != bytes_b)
      what.push_back(fmt::format("{} {}: its size ({} bytes in the checkpoint, {} now)", config::keys::data::path,
                                 b.at("path").get<std::string>(), bytes_a, bytes_b));
    else if (a.at("fnv1a64") != b.at("fnv1a64"))
      what.push_back(fmt::format("{} {}: its content (the same size, {} bytes)", config::keys::data::path,
                                 b.at("path").get<std::string>(), bytes_b));
  }
  return what;
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

std::string data_fingerprint(const config::RunConfig& cfg, const data::DataSource& data) {
  nlohmann::json parameters = nlohmann::json::object();
  for_each_field(cfg.data, [&](const config::FieldInfo& f, const auto& value) {
    if constexpr (std::is_enum_v<std::decay_t<decltype(value)>>)
      parameters[f.key] = config::to_string(value);
    else
      parameters[f.key] = value;  // the data section's numbers, bools and strings as JSON's
  });
  const std::string vocab = data.vocab().serialize();
  nlohmann::json fp = {
      {"task", config::to_string(cfg.data.task)},
      {"parameters", parameters},
      {"vocabulary",
       {{"size", data.vocab().size()}, {"fnv1a64", dist::hex64(dist::fnv1a(vocab.data(), vocab.size()))}}}};
  if (cfg.data.task == config::Task::text || cfg.data.task == config::Task::tokens)
    fp["file"] = file_fingerprint(cfg.data.path);
  return fp.dump();
}

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
    throw std::runtime_error(fmt::format(
        "--resume from {}: {} differ{} from the checkpoint's config and cannot change in a resumed run, not even with "
        "--allow-changes (the weights or the optimizer state are shaped by it); start a new run with another --out "
        "or --overwrite",
        checkpoint, join(fixed, ", "), fixed.size() == 1 ? "s" : ""));
  if (!exact.empty() && !allow_changes)
    throw std::runtime_error(fmt::format(
        "--resume from {}: {} differ{} from the checkpoint's config, which breaks exact continuation; resume with "
        "--allow-changes to accept {}, or drop the change",
        checkpoint, join(exact, ", "), exact.size() == 1 ? "s" : "", exact.size() == 1 ? "it" : "them"));
  if (!all.empty()) notes.push_back("changed since the checkpoint: " + join(all, ", "));
}

void check_same_data(const std::string& saved_fingerprint, const std::string& saved_vocab,
                     const std::string& fingerprint, const std::string& vocab, bool allow_changes,
                     const std::string& checkpoint, std::vector<std::string>& notes, const std::string& who) {
  // a vocabulary that differs because it is damaged is refused as such, not as other data
  if (saved_vocab != vocab) checkpoint::read_vocabulary(saved_vocab, checkpoint);
  const nlohmann::json now = nlohmann::json::parse(fingerprint);
  nlohmann::json saved =
      json_too_deep(saved_fingerprint)
          ? nlohmann::json()
          : nlohmann::json::parse(saved_fingerprint.empty() ? "{}" : saved_fingerprint, nullptr, false);
  if (saved_fingerprint.empty())
    notes.push_back("the checkpoint has no data fingerprint (tinyformer.data; written by an earlier version): only "
                    "its vocabulary is compared with the data's");
  if (!saved.is_object() || (!saved_fingerprint.empty() && !saved.contains("vocabulary")))
    throw std::runtime_error(fmt::format("{}: corrupt 'tinyformer.data' metadata (a JSON object with 'vocabulary' "
                                         "was expected)",
                                         checkpoint));
  if (saved_fingerprint.empty())  // only the vocabulary to compare; its size from its serialized form
    saved["vocabulary"] = {{"size", checkpoint::read_vocabulary(saved_vocab, checkpoint).size()}};
  const std::vector<std::string> what = data_changes(saved, now, saved_vocab != vocab);
  if (what.empty()) return;
  if (!allow_changes && who != "--resume")
    throw std::runtime_error(fmt::format("{}: the data differs from the one its run trained on: {}; restore the run's "
                                         "data (its scores would be of other data)",
                                         who, join(what, "; ")));
  if (!allow_changes)
    throw std::runtime_error(fmt::format("--resume: the data differs from the checkpoint's: {}; resume with "
                                         "--allow-changes to train on it anyway",
                                         join(what, "; ")));
  notes.push_back(
      fmt::format("the data differs from the checkpoint's: {} (accepted: --allow-changes)", join(what, "; ")));
}

}  // namespace tf::train
