// libFuzzer target: the text data reader. Input: the bytes of a text file, trained on as task `text` with a window
// of 8 characters. Every input must give a data source whose batches, held-out set and probe hold ids inside its
// vocabulary, or be refused with a std::runtime_error / std::invalid_argument (the user's file is bad); anything
// else is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "fuzz_file.hpp"
#include "fuzz_target.hpp"
#include "tinyformer/data/data.hpp"

TINYFORMER_FUZZ_TARGET(text) {
  tf::config::RunConfig cfg;
  cfg.data.task = tf::config::Task::text;
  cfg.data.path = tf::fuzz::write_input(data, size, ".txt");
  cfg.data.val_fraction = 0.25;
  cfg.data.eval_size = 4;
  cfg.model.context = 8;
  try {
    const auto source = tf::data::make_data_source(cfg);
    tf::Rng rng(1);
    const tf::data::Batch batch = source->train_batch(3, rng);
    const auto V = static_cast<tf::Index>(source->vocab().size());
    for (tf::Index id : batch.x)
      if (id < 0 || id >= V) __builtin_trap();
    for (const auto& b : source->eval_batches(2))
      for (tf::Index id : b.y)
        if (id >= V || id < -1) __builtin_trap();
    if (source->probe_sequence().size() != 8) __builtin_trap();
    source->vocab().decode(std::vector<tf::Index>(batch.x.begin(), batch.x.end()));
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
