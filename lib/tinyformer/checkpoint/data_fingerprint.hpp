#pragma once
// What a checkpoint records of the data its run trained on, and the check that data is still that data: `train
// --resume` refuses other data (unless --allow-changes), and `heads` and `attention` rebuild a run's data only when
// it is the same.
#include <string>
#include <vector>

#include "tinyformer/config/config.hpp"
#include "tinyformer/data/data.hpp"

namespace tf::checkpoint {

// The checkpoint's "tinyformer.data": one JSON object
//   {"task": "text", "parameters": {the data section's keys}, "vocabulary": {"size": V, "fnv1a64": "<16 hex>"},
//    "file": {"path": "...", "bytes": N, "fnv1a64": "<16 hex>"}}
// ("file" only for the tasks that read data.path: text and tokens; the hashes are of the serialized vocabulary and
// of the file's bytes). Throws FileError naming the file if it cannot be read, and config::ConfigError naming
// data.path when its name is not UTF-8 (JSON holds text).
std::string data_fingerprint(const config::RunConfig& cfg, const data::DataSource& data);

// The data's side of a resume: `saved_fingerprint` ("" in checkpoints written before it was stored: a note, and only
// the vocabularies are compared) against `fingerprint` (data_fingerprint now), and the checkpoint's serialized
// vocabulary against the data's. A difference throws std::invalid_argument naming what changed (the vocabulary, the
// file's size or its content) unless `allow_changes`, which turns it into a note. `who` starts the message: "--resume"
// (whose remedy is --allow-changes), or the checkpoint of a command that reads its run's data (heads, attention).
// A saved fingerprint that is not one (not JSON, or fields of the wrong type) throws naming the checkpoint's
// 'tinyformer.data' metadata.
void check_same_data(const std::string& saved_fingerprint, const std::string& saved_vocab,
                     const std::string& fingerprint, const std::string& vocab, bool allow_changes,
                     const std::string& checkpoint, std::vector<std::string>& notes,
                     const std::string& who = "--resume");

}  // namespace tf::checkpoint
