#include "tinyformer/checkpoint/data_fingerprint.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/dist/dist.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/utf8.hpp"

namespace tf::checkpoint {

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

// A saved fingerprint has the fields data_changes reads, of the types it reads them as; else the checkpoint's
// metadata is named (never a JSON library's type error).
void check_fingerprint_fields(const nlohmann::json& saved, bool only_vocabulary, const std::string& checkpoint) {
  const auto corrupt = [&](const std::string& what) {
    return std::runtime_error(fmt::format("{}: corrupt 'tinyformer.data' metadata: {}", checkpoint, what));
  };
  if (!saved.is_object()) throw corrupt("a JSON object was expected");
  if (only_vocabulary) return;
  const auto vocabulary = saved.find("vocabulary");
  if (vocabulary == saved.end() || !vocabulary->is_object() || !vocabulary->contains("size") ||
      !(*vocabulary)["size"].is_number_unsigned())
    throw corrupt("'vocabulary' must be an object whose 'size' is a whole number");
  const auto file = saved.find("file");
  if (file == saved.end()) return;
  if (!file->is_object() || !file->contains("bytes") || !(*file)["bytes"].is_number_unsigned() ||
      !file->contains("fnv1a64") || !(*file)["fnv1a64"].is_string())
    throw corrupt("'file' must be an object with 'bytes' (a whole number) and 'fnv1a64' (a string)");
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

}  // namespace

std::string data_fingerprint(const config::RunConfig& cfg, const data::DataSource& data) {
  nlohmann::json parameters = nlohmann::json::object();
  for_each_field(cfg.data, [&](const config::FieldInfo& f, const auto& value) {
    if constexpr (std::is_enum_v<std::decay_t<decltype(value)>>)
      parameters[f.key] = config::to_string(value);
    else
      parameters[f.key] = value;  // the data section's numbers, bools and strings as JSON's
  });
  std::vector<std::string> chars;
  if (const std::size_t bad = utf8_split(cfg.data.path, chars); bad != std::string::npos)
    throw config::error_at(cfg, config::keys::data::path,
                           fmt::format("the name '{}' is not UTF-8 ({}); a checkpoint records it as text: rename the "
                                       "file to a UTF-8 name",
                                       cfg.data.path, byte_position_str(cfg.data.path, bad)));
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

void check_same_data(const std::string& saved_fingerprint, const std::string& saved_vocab,
                     const std::string& fingerprint, const std::string& vocab, bool allow_changes,
                     const std::string& checkpoint, std::vector<std::string>& notes, const std::string& who) {
  // a vocabulary that differs because it is damaged is refused as such, not as other data
  if (saved_vocab != vocab) read_vocabulary(saved_vocab, checkpoint);
  const nlohmann::json now = nlohmann::json::parse(fingerprint);
  nlohmann::json saved =
      json_too_deep(saved_fingerprint)
          ? nlohmann::json()
          : nlohmann::json::parse(saved_fingerprint.empty() ? "{}" : saved_fingerprint, nullptr, false);
  check_fingerprint_fields(saved, saved_fingerprint.empty(), checkpoint);
  if (saved_fingerprint.empty()) {  // only the vocabulary to compare; its size from its serialized form
    notes.push_back("the checkpoint has no data fingerprint (tinyformer.data; written by an earlier version): only "
                    "its vocabulary is compared with the data's");
    saved["vocabulary"] = {{"size", read_vocabulary(saved_vocab, checkpoint).size()}};
  }
  const std::vector<std::string> what = data_changes(saved, now, saved_vocab != vocab);
  if (what.empty()) return;
  if (!allow_changes && who != "--resume")
    throw std::invalid_argument(
        fmt::format("{}: the data differs from the one its run trained on: {}; restore the run's "
                    "data (its scores would be of other data)",
                    who, fmt::join(what, "; ")));
  if (!allow_changes)
    throw std::invalid_argument(fmt::format("--resume: the data differs from the checkpoint's: {}; resume with "
                                            "--allow-changes to train on it anyway",
                                            fmt::join(what, "; ")));
  notes.push_back(
      fmt::format("the data differs from the checkpoint's: {} (accepted: --allow-changes)", fmt::join(what, "; ")));
}

}  // namespace tf::checkpoint
