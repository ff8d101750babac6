// tinyformer export CHECKPOINT --format llama2c --out DIR: the model and its tokenizer as llama2.c's run.c reads
// them (DIR/model.bin, DIR/tokenizer.bin; checkpoint/llama2c.hpp, docs/formats.md). Run them with
//   ./run DIR/model.bin -z DIR/tokenizer.bin -t 0 -i "PROMPT"
// --format llama2c-q8: the int8 file runq.c reads instead of model.bin (DIR/model_q80.bin).
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
                                               "run.c, model.bin and tokenizer.bin; llama2c-q8: runq.c's int8 "
                                               "model_q80.bin and tokenizer.bin)");
  cmd->add_option("checkpoint", o->checkpoint, "checkpoint.safetensors of a run")->required()->check(readable_file());
  cmd->add_option("--format", o->format, "The format: llama2c or llama2c-q8")
      ->required()
      ->check(CLI::IsMember({"llama2c", "llama2c-q8"}));
  cmd->add_option("--out", o->out, "Directory for the model file and tokenizer.bin (created)")
      ->required()
      ->check(non_empty_path());
  cmd->callback([o] {
    select_action([o] {
      runs::export_checkpoint(o->checkpoint, o->format, o->out);
      const std::string model = runs::export_model_file(o->format);
      fmt::print("wrote {0}/{1} and {0}/tokenizer.bin; run: {2} {0}/{1} -z {0}/tokenizer.bin -t 0 -i \"PROMPT\"\n",
                 o->out, model, o->format == "llama2c-q8" ? "runq" : "run");
      return 0;
    });
  });
}

}  // namespace tf::app
