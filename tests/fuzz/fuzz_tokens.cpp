// libFuzzer target: the tokens data reader (a .npy of token rows, through make_data_source with task `tokens`, in file
// order and shuffled). Every input must give batches of ids below the vocabulary size, or be refused with a
// std::runtime_error / std::invalid_argument; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "fuzz_file.hpp"
#include "fuzz_target.hpp"
#include "tinyformer/data/data.hpp"

TINYFORMER_FUZZ_TARGET(tokens) {
  for (bool shuffle : {false, true}) {
    tf::config::RunConfig cfg;
    cfg.data.task = tf::config::Task::tokens;
    cfg.data.path = tf::fuzz::write_input(data, size, ".npy");
    cfg.data.shuffle = shuffle;
    cfg.data.eval_size = 3;
    try {
      const auto source = tf::data::make_data_source(cfg);
      tf::Rng rng(1);
      const auto V = static_cast<tf::Index>(source->vocab().size());
      for (int i = 0; i < 3; ++i)
        for (tf::Index id : source->train_batch(2, rng).x)
          if (id < 0 || id >= V) __builtin_trap();
      for (const auto& b : source->eval_batches(2))
        for (tf::Index id : b.x)
          if (id < 0 || id >= V) __builtin_trap();
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}
