#pragma once
// Training, the same for every front end: `tinyformer train`, Python's tf.train and a C++ program call runs::train.
// A config comes from a file or as text (tf.train(dict) passes its text: no temporary file). A per-step callback
// sees each step (and its metrics.jsonl row when it logged one); a stop request, Ctrl-C (the front end sets the stop
// flag) or a callback that throws ends training at the end of the step: the checkpoint is written, the run's report
// and lock are finished, and then the callback's exception propagates as it was (a Python exception stays one).
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "tinyformer/autograd/gradcheck.hpp"
#include "tinyformer/train/trainer.hpp"

namespace tf::runs {

// The trainer's options, result and per-step report, as the front ends name them.
using TrainOptions = train::TrainOptions;
using TrainResult = train::TrainResult;
using StepInfo = train::StepInfo;

// train::train at the error boundary (runs::Error), with options.on_step's (and on_warning's) exception rethrown as it
// was after the run has ended cleanly.
train::TrainResult train(const train::TrainOptions& options);

// The resolved config of a file (or of options.config_text) and its overrides, as `tinyformer config` prints it.
std::string resolved_config(const train::TrainOptions& options);

// `tinyformer gradcheck`: the float64 gradient check of the configured GPT on one batch of its data.
struct GradcheckRequest {
  std::string config_path;
  std::vector<std::string> overrides;
  bool small = false;       // shrink the model first: d_model = 4 per head, at most 2 layers
  std::size_t checks = 16;  // elements checked per parameter tensor (0 = all)
  std::size_t batch = 2;    // sequences in the checked batch, at most kMaxGradcheckBatch
};
inline constexpr std::size_t kMaxGradcheckBatch = 4096;
struct GradcheckRun {
  std::string header;  // "gradcheck: 1234 parameters in 12 tensors, batch [2, 16], float64, ..."
  GradcheckResult result;
};
// Checks the memory the config needs before anything is allocated, as train does.
GradcheckRun gradcheck(const GradcheckRequest& request, const std::string& flag_prefix = "");

}  // namespace tf::runs
