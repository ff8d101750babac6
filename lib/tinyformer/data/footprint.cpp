// data_footprint: what a data source will hold, from the config and the file's size alone (nothing is read), so
// that the memory check runs before the data is loaded. The byte counts follow the sources' members:
//   tasks   eval_size rows of L ids, their keys in a hash set, and the held-out batches (x and y) cut from them
//   text    the file's bytes, one std::string per character while splitting, one id per character, the batches
//           (bpe, unigram: V = data.vocab_size, and SentencePiece's training)
//   tokens  the .npy file's array as read (int32 ids, plus the file's own copy when it holds int64 or uint8) and
//           the vocabulary's names
// T and V of the tasks are the formulas of tasks.cpp (a test compares them with the made sources').
#include <filesystem>

#include "tinyformer/data/sources.hpp"

namespace tf::data {

namespace {

constexpr double kIdBytes = sizeof(Index);
constexpr double kTokenNameBytes = 96;  // a vocabulary entry: its name (std::string) and its place in the lookup map

double file_size_or_zero(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0.0 : static_cast<double>(size);
}

}  // namespace

DataFootprint data_footprint(const config::RunConfig& cfg) {
  const config::DataConfig& d = cfg.data;
  const double eval_size = static_cast<double>(d.eval_size);
  DataFootprint fp;
  fp.T = cfg.model.context.value_or(0);
  fp.V = cfg.model.vocab_size.value_or(0);
  switch (d.task) {
    case config::Task::text: {
      const double bytes = file_size_or_zero(d.path);
      // bytes and two copies (the documents, the training and held-out parts) + a 32-byte std::string per character
      // (the split) + an id and its text bytes per character; the held-out set is at most the last val_fraction of
      // the ids, cut into batches (x and y) once.
      fp.bytes = bytes * (3 + 32 + 2 * kIdBytes) + 2 * d.val_fraction * bytes * kIdBytes;
      if (d.tokenizer != config::Tokenizer::char_) {
        fp.V = d.vocab_size;  // SentencePiece's pieces; its training holds about the text a few times over
        fp.bytes += 4 * bytes + static_cast<double>(fp.V) * kTokenNameBytes;
      }
      break;
    }
    case config::Task::tokens: {
      const double bytes = file_size_or_zero(d.path);
      // the file's array, converted to int32 ids (a second array when the file holds another type), the held-out
      // batches (x and y of at most the file's rows) and the vocabulary's names.
      fp.bytes = 4 * bytes + static_cast<double>(fp.V) * kTokenNameBytes;
      break;
    }
    case config::Task::repeats: {
      // T is model.context (a number: config::validate requires it); the rows, the held-out batches x and y and a
      // scored flag per position while they are cut
      const double L = static_cast<double>(fp.T + 1);
      fp.V = std::max<std::size_t>(fp.V, d.alphabet);
      fp.bytes = eval_size * (L * kIdBytes + 2 * (L - 1) * kIdBytes + 32 + L);
      break;
    }
    case config::Task::modular: {
      // every pair as a 64-bit number while splitting, the rows [a, b, =, c] of both parts, their batches x and y (the
      // training set's cut once for evaluation and, with batch_size all, for training)
      const double pairs = static_cast<double>(d.modulus) * static_cast<double>(d.modulus);
      fp.T = 3;
      fp.V = std::max<std::size_t>(fp.V, d.modulus + 1);
      fp.bytes = pairs * (8 + 4 * kIdBytes + 2 * 2 * 3 * kIdBytes);
      break;
    }
    default: {
      std::size_t L = 0;  // the row length: source, separator, answer
      if (d.task == config::Task::add) {
        L = 3 * d.digits + 3;
        fp.V = std::max<std::size_t>(fp.V, 12);  // digits, '+' and '='
      } else {
        L = d.task == config::Task::induction ? 2 * d.length : 2 * d.length + 1;
        fp.V = std::max<std::size_t>(fp.V, d.alphabet + (d.task == config::Task::induction ? 0 : 1));
      }
      fp.T = L - 1;
      // the rows, a 64-byte hash set node per row's key, the held-out batches x and y
      fp.bytes = eval_size * (static_cast<double>(L) * kIdBytes + 64 + 2 * static_cast<double>(L - 1) * kIdBytes);
      break;
    }
  }
  return fp;
}

}  // namespace tf::data
