// tinyformer attention CHECKPOINT --prompt TEXT [--out DIR]: the learned attention maps for a prompt.
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "model_loading.hpp"
#include "tinyformer/infer/attention.hpp"
#include "tinyformer/io/html_report.hpp"
#include "tinyformer/train/run_report.hpp"

namespace tf::app {

void add_attention_command(CLI::App& app) {
  struct Opts {
    std::string checkpoint, prompt, out = "attention_maps";
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("attention", "Write the attention maps of a prompt (npy, json, png, html)");
  cmd->add_option("checkpoint", o->checkpoint, "checkpoint.safetensors of a run")->required()->check(CLI::ExistingFile);
  cmd->add_option("--prompt", o->prompt, "Input text")->required();
  cmd->add_option("--out", o->out, "Output directory")->capture_default_str();
  cmd->callback([o] {
    select_action([o] {
      LoadedModel loaded = load_trained_model(o->checkpoint);
      const std::vector<Index> ids = encode_prompt(loaded, o->prompt);
      IndexArray x = IndexArray::from_shape({ids.size()});
      std::copy(ids.begin(), ids.end(), x.data());
      const Array<float> weights = infer::probe_attention(*loaded.model, x);
      const auto labels = infer::token_labels(loaded.vocab, x);
      std::error_code ec;
      std::filesystem::create_directories(o->out, ec);
      if (ec) throw std::runtime_error(fmt::format("cannot create --out {}: {}", o->out, ec.message()));
      train::AttentionMap map;
      map.weights = weights;
      map.labels = labels;
      map.title = "attention for the prompt";
      train::write_attention_files(o->out, "attention", map);
      io::ReportData report;
      report.title = fmt::format("attention of {}", o->checkpoint);
      io::AttentionSnapshot snap;
      snap.tokens = labels;
      snap.weights = weights;
      report.attention.push_back(snap);
      io::write_html_report((std::filesystem::path(o->out) / "report.html").string(), report);
      fmt::print("wrote {0}/attention.npy [L,H,T,T] = [{1}, {2}, {3}, {3}], {0}/attention.json, {0}/attention.png, "
                 "{0}/report.html\n",
                 o->out, weights.shape()[0], weights.shape()[1], weights.shape()[2]);
      return 0;
    });
  });
}

}  // namespace tf::app
