// What --resume keeps and checks (train/resume.hpp), and the progress and summary lines (train/run_log.hpp).
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "support/configs.hpp"
#include "support/temp_dir.hpp"
#include "tinyformer/data/data.hpp"
#include "tinyformer/train/resume.hpp"
#include "tinyformer/train/run_log.hpp"

using namespace tf;

using test::reverse_config;

TEST_CASE("resume: the checkpoint's decay_steps and warmup_steps are kept unless set on the command line", "[train]") {
  const config::RunConfig saved = config::load_config_text(
      "schedule: {name: cosine, warmup_steps: 10, min_lr: 1.0e-4}\ntraining: {steps: 400}\n", "saved.yaml");
  config::RunConfig cfg = reverse_config({"training.steps=500"});  // the file says warmup_steps 50, decay auto
  const std::string line = train::keep_checkpoint_schedule(saved, 400, cfg);
  CHECK(cfg.schedule.warmup_steps == 10);
  REQUIRE(cfg.schedule.decay_steps);
  CHECK(*cfg.schedule.decay_steps == 400);
  CHECK(line == "resuming at step 400 of 500; the schedule keeps decay_steps 400 from the checkpoint (lr 3.00e-04 at "
                "min_lr from step 400); set schedule.decay_steps (with --allow-changes) to change it; the config's "
                "warmup_steps 50 is not used (a resumed run keeps the checkpoint's unless --set gives it)");

  config::RunConfig set =
      reverse_config({"training.steps=500", "schedule.decay_steps=450", "schedule.warmup_steps=20"});
  const std::string set_line = train::keep_checkpoint_schedule(saved, 200, set);
  CHECK(set.schedule.warmup_steps == 20);
  CHECK(*set.schedule.decay_steps == 450);
  CHECK_THAT(set_line, Catch::StartsWith("resuming at step 200 of 500; the schedule takes decay_steps 450 from the "
                                         "command line (lr "));
  CHECK_THAT(set_line, Catch::EndsWith("at step 201, down to min_lr 3.00e-04 at step 450)"));
}

TEST_CASE("resume: changed keys are listed, exact ones need --allow-changes and fixed ones are always refused",
          "[train]") {
  const config::RunConfig saved = reverse_config({"training.batch_size=8"});
  std::vector<std::string> notes;
  config::RunConfig cfg = reverse_config({"training.batch_size=8", "training.steps=500", "logging.log_interval=5"});
  train::check_config_changes(saved, cfg, false, true, "c.safetensors", notes);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "changed since the checkpoint: training.steps 400 -> 500, logging.log_interval 20 -> 5");

  cfg = reverse_config({"training.batch_size=16", "training.seed=7"});
  CHECK_THROWS_WITH(train::check_config_changes(saved, cfg, false, false, "c.safetensors", notes),
                    "--resume from c.safetensors: training.batch_size 8 -> 16, training.seed 1337 -> 7 differ from the "
                    "checkpoint's config, which breaks exact continuation; resume with --allow-changes to accept them, "
                    "or drop the change");
  notes.clear();
  train::check_config_changes(saved, cfg, true, false, "c.safetensors", notes);
  CHECK(notes.at(0) == "changed since the checkpoint: training.batch_size 8 -> 16 (--allow-changes), training.seed "
                       "1337 -> 7 (--allow-changes)");
  // the same global batch cut differently (one process with two processes' batch) is no change of the run
  notes.clear();
  train::check_config_changes(saved, reverse_config({"training.batch_size=16"}), false, true, "c.safetensors", notes);
  CHECK(notes.at(0) == "changed since the checkpoint: training.batch_size 8 -> 16");

  cfg = reverse_config({"training.batch_size=8", "model.n_head=2"});
  CHECK_THROWS_WITH(train::check_config_changes(saved, cfg, true, true, "c.safetensors", notes),
                    Catch::StartsWith("--resume from c.safetensors: model.n_head 4 -> 2 differs from the checkpoint's "
                                      "config and cannot change in a resumed run, not even with --allow-changes"));
}

TEST_CASE("run log: the progress line has step/total, loss, lr, tok/s, elapsed and ETA, the summary line the results",
          "[train]") {
  train::Progress p;
  p.done = 150, p.total = 400, p.start = 100, p.loss = 0.43216, p.lr = 9.5e-4, p.tokens_per_s = 51234.4;
  p.elapsed_s = 10;
  CHECK(train::progress_line(p) ==
        "step    150/400 | loss 0.4322 | lr 9.50e-04 | 51234 tok/s | 0m10s elapsed | ETA 0m50s");
  p.val_loss = 0.5, p.accuracy = 0.25;
  CHECK_THAT(train::progress_line(p), Catch::EndsWith("| ETA 0m50s | val 0.5000 | acc 0.250"));
  CHECK(train::format_duration(3725) == "1h02m");

  train::TrainResult r;
  r.steps_done = 400, r.start_step = 100, r.total_steps = 400, r.last_train_loss = 0.0123, r.last_val_loss = 0.0234;
  r.last_accuracy = 0.998, r.wall_seconds = 12.34, r.out_dir = "runs/reverse";
  CHECK(train::summary_line(r) == "tinyformer: done: step 400 of 400 (300 this run) | train loss 0.0123 | val loss "
                                  "0.0234 | accuracy 0.998 | 12.3 s | out runs/reverse");
  r.interrupted = true, r.last_accuracy.reset();
  CHECK_THAT(train::summary_line(r), Catch::StartsWith("tinyformer: stopped: step 400 of 400"));
  CHECK_THAT(train::summary_line(r), !Catch::Contains("accuracy"));
  r.steps_skipped = 3;
  CHECK_THAT(train::summary_line(r),
             Catch::StartsWith("tinyformer: stopped: step 400 of 400 (300 this run, 3 skipped) | "
                               "train loss 0.0123"));
}
