// tinyformer export CHECKPOINT --format llama2c --out DIR: the model and its tokenizer as llama2.c's run.c reads
// them (DIR/model.bin, DIR/tokenizer.bin; checkpoint/llama2c.hpp, docs/formats.md). Run them with
//   ./run DIR/model.bin -z DIR/tokenizer.bin -t 0 -i "PROMPT"
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tinyformer/runs/checkpoints.hpp"

namespace tf::app {

void add_export_command(CLI::App& app) {
  struct Opts {
    std::string checkpoint, format, out;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("export", "Write a checkpoint in another program's format (llama2c: llama2.c's "
                                               "run.c, model.bin and tokenizer.bin)");
  cmd->add_option("checkpoint", o->checkpoint, "checkpoint.safetensors of a run")->required()->check(readable_file());
  cmd->add_option("--format", o->format, "The format: llama2c")->required()->check(CLI::IsMember({"llama2c"}));
  cmd->add_option("--out", o->out, "Directory for model.bin and tokenizer.bin (created)")
      ->required()
      ->check(non_empty_path());
  cmd->callback([o] {
    select_action([o] {
      runs::export_checkpoint(o->checkpoint, o->format, o->out);
      fmt::print("wrote {0}/model.bin and {0}/tokenizer.bin; run: run {0}/model.bin -z {0}/tokenizer.bin -t 0 -i "
                 "\"PROMPT\"\n",
                 o->out);
      return 0;
    });
  });
}

}  // namespace tf::app
