// tinyformer export CHECKPOINT --format llama2c --out DIR: the model and its tokenizer as llama2.c's run.c reads
// them (DIR/model.bin, DIR/tokenizer.bin; checkpoint/llama2c.hpp, docs/formats.md). Run them with
//   ./run DIR/model.bin -z DIR/tokenizer.bin -t 0 -i "PROMPT"
// --format llama2c-q8: the int8 file runq.c reads instead of model.bin (DIR/model_q80.bin).
// --format llmc: the GPT-2 checkpoint llm.c's train_gpt2.c reads (DIR/model.bin), and the run's tokens as its token
// files (DIR/train.bin, DIR/val.bin) when its data is a stream of ids (checkpoint/llmc.hpp, docs/interop.md).
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
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a checkpoint in another program's format (llama2c: llama2.c's "
                "run.c, model.bin and tokenizer.bin; llama2c-q8: runq.c's int8 "
                "model_q80.bin and tokenizer.bin; llmc: llm.c's train_gpt2.c, model.bin and the run's "
                "tokens as train.bin and val.bin)");
  cmd->add_option("checkpoint", o->checkpoint, "checkpoint.safetensors of a run")->required()->check(readable_file());
  cmd->add_option("--format", o->format, "The format: llama2c, llama2c-q8 or llmc")
      ->required()
      ->check(CLI::IsMember({"llama2c", "llama2c-q8", "llmc"}));
  cmd->add_option("--out", o->out, "Directory for the files (created)")->required()->check(non_empty_path());
  cmd->callback([o] {
    select_action([o] {
      const std::vector<std::string> files = runs::export_checkpoint(o->checkpoint, o->format, o->out);
      if (o->format == "llmc") {
        fmt::print("wrote {}/{}", o->out, files[0]);
        if (files.size() > 1)
          fmt::print(", {0}/{1} and {0}/{2}", o->out, files[1], files[2]);
        else
          fmt::print(" (no token files: the run's data is not a stream of ids, or cannot be rebuilt)");
        fmt::print(
            "; train_gpt2 reads gpt2_124M.bin and dev/data/tinyshakespeare/tiny_shakespeare_{{train,val}}.bin\n");
        return 0;
      }
      const std::string& model = files[0];
      fmt::print("wrote {0}/{1} and {0}/tokenizer.bin; run: {2} {0}/{1} -z {0}/tokenizer.bin -t 0 -i \"PROMPT\"\n",
                 o->out, model, o->format == "llama2c-q8" ? "runq" : "run");
      return 0;
    });
  });
}

}  // namespace tf::app
