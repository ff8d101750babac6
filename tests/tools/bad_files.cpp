// Bad input files for the CLI robustness tests (tests/app/cli_bad_*.sh):
//   bad_files npy KIND OUT              a .npy file of token rows, wrong in one way:
//     float32 (dtype <f4), rank1 ([170]), rank3 ([10,17,2]), id_19 (int64 [100,17], ids 0..19), negative_id,
//     rows_of_9 (int32 [100,9], ids 0..9), truncated (the data cut short), fortran (fortran_order True),
//     big_endian (dtype >i4)
//   bad_files checkpoint KIND IN OUT    a damaged copy of the safetensors file IN, KIND one of:
//   truncated               the first half of the file
//   header_not_json         the JSON header replaced by text that is not JSON (same length)
//   header_length_past_end  the 8-byte header length says more bytes than the file has
//   offsets_past_end        transformer.wte.weight's data_offsets point past the end of the data
//   dtype_f16               transformer.wte.weight claims dtype F16 (not read by tinyformer)
//   dtype_i32               transformer.wte.weight claims dtype I32 (same size, wrong kind)
//   huge_model              the metadata claims d_model 2^40 (must be refused before anything is allocated)
//   no_metadata             no "__metadata__" (a plain safetensors file, not a tinyformer checkpoint)
//   nan_weight              transformer.h.0.mlp.c_fc.weight holds a NaN at [3, 17] and an infinity at [4, 1]
//   nan_optimizer_state     optimizer.exp_avg_sq.lm_head.weight holds a NaN at [0, 0]
//   damaged_tokenizer       the SentencePiece model in tinyformer.vocab (bpe, unigram) cut to its first half, with
//                           the checksum made to match: the model itself is what is wrong
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include <xtensor/xbuilder.hpp>

#include "tinyformer/data/vocabulary.hpp"
#include "tinyformer/io/npy.hpp"
#include "tinyformer/tensor/hash.hpp"
#include "tools/test_tools.hpp"

namespace {

std::string le_u64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

std::string with_header(const nlohmann::json& header, const std::string& data) {
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return le_u64(text.size()) + text + data;
}

// Token rows [N, C] with ids (r * 7 + c) % modulo.
tf::IndexArray token_rows(std::size_t N, std::size_t C, int modulo) {
  tf::IndexArray a = tf::IndexArray::from_shape({N, C});
  for (std::size_t r = 0; r < N; ++r)
    for (std::size_t c = 0; c < C; ++c)
      a(r, c) = static_cast<tf::Index>((r * 7 + c) % static_cast<std::size_t>(modulo));
  return a;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void replace_once(std::string& s, const std::string& from, const std::string& to) {
  const std::size_t at = s.find(from);
  if (at == std::string::npos) throw std::runtime_error("'" + from + "' not found");
  s.replace(at, from.size(), to);
}

int write_bad_npy(const std::string& kind, const std::string& path) {
  using tf::io::write_npy;
  if (kind == "float32") {
    write_npy(path, tf::Array<float>(xt::zeros<float>({10, 17})));
  } else if (kind == "rank1") {
    write_npy(path, tf::IndexArray(xt::zeros<tf::Index>({170})));
  } else if (kind == "rank3") {
    write_npy(path, tf::IndexArray(xt::zeros<tf::Index>({10, 17, 2})));
  } else if (kind == "id_19") {
    const tf::IndexArray rows = token_rows(100, 17, 20);
    write_npy(path, tf::Array<std::int64_t>(xt::cast<std::int64_t>(rows)));
  } else if (kind == "negative_id") {
    tf::IndexArray rows = token_rows(100, 17, 10);
    rows(42, 3) = -1;
    write_npy(path, rows);
  } else if (kind == "rows_of_9") {
    write_npy(path, token_rows(100, 9, 10));
  } else if (kind == "truncated" || kind == "fortran" || kind == "big_endian") {
    write_npy(path, token_rows(100, 17, 10));
    std::string bytes = read_all(path);
    if (kind == "truncated") bytes.resize(bytes.size() - 100);
    if (kind == "fortran") replace_once(bytes, "'fortran_order': False", "'fortran_order': True ");
    if (kind == "big_endian") replace_once(bytes, "'<i4'", "'>i4'");
    std::ofstream(path, std::ios::binary) << bytes;
  } else {
    std::fprintf(stderr, "unknown npy KIND %s\n", kind.c_str());
    return 2;
  }
  return 0;
}

int write_bad_checkpoint(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: bad_files checkpoint KIND IN OUT\n");
    return 2;
  }
  const std::string kind = argv[1];
  std::ifstream in(argv[2], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 8) {
    std::fprintf(stderr, "%s: not a safetensors file\n", argv[2]);
    return 1;
  }
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  const std::string header_text = bytes.substr(8, n);
  const std::string data = bytes.substr(8 + n);
  nlohmann::json header = nlohmann::json::parse(header_text);
  const std::string wte = "transformer.wte.weight";

  std::string out;
  if (kind == "truncated") {
    out = bytes.substr(0, bytes.size() / 2);
  } else if (kind == "header_not_json") {
    out = bytes.substr(0, 8) + std::string("{\"not json") + std::string(n - 10, '!') + data;
  } else if (kind == "header_length_past_end") {
    out = le_u64(bytes.size() * 10) + bytes.substr(8);
  } else if (kind == "offsets_past_end") {
    auto& offsets = header[wte]["data_offsets"];
    const std::uint64_t len = offsets[1].get<std::uint64_t>() - offsets[0].get<std::uint64_t>();
    offsets = {data.size(), data.size() + len};
    out = with_header(header, data);
  } else if (kind == "dtype_f16" || kind == "dtype_i32") {
    header[wte]["dtype"] = kind == "dtype_f16" ? "F16" : "I32";
    out = with_header(header, data);
  } else if (kind == "huge_model") {
    auto model = nlohmann::json::parse(header["__metadata__"]["tinyformer.model"].get<std::string>());
    model["d_model"] = std::uint64_t{1} << 40;
    header["__metadata__"]["tinyformer.model"] = model.dump();
    out = with_header(header, data);
  } else if (kind == "nan_weight" || kind == "nan_optimizer_state") {
    const bool weight = kind == "nan_weight";
    const std::string name = weight ? "transformer.h.0.mlp.c_fc.weight" : "optimizer.exp_avg_sq.lm_head.weight";
    const std::size_t cols = header[name]["shape"][1].get<std::size_t>();
    const std::size_t begin = header[name]["data_offsets"][0].get<std::size_t>();
    std::string patched = data;
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::memcpy(&patched[begin + 4 * (weight ? 3 * cols + 17 : 0)], &nan, 4);
    if (weight) std::memcpy(&patched[begin + 4 * (4 * cols + 1)], &inf, 4);
    out = with_header(header, patched);
  } else if (kind == "damaged_tokenizer") {
    const std::string vocab = header["__metadata__"]["tinyformer.vocab"].get<std::string>();
    const std::size_t line2 = vocab.find('\n') + 1;
    std::string model = tf::data::from_base64(vocab.substr(line2, vocab.size() - line2 - 1));
    model.resize(model.size() / 2);
    const std::string checksum = tf::hex64(tf::fnv1a(model.data(), model.size()));  // docs/formats.md
    std::string head = vocab.substr(0, line2 - 1);  // "tinyformer-vocabulary 1 sentencepiece <V> <checksum>"
    head = head.substr(0, head.rfind(' ') + 1) + checksum;
    header["__metadata__"]["tinyformer.vocab"] = head + "\n" + tf::data::to_base64(model) + "\n";
    out = with_header(header, data);
  } else if (kind == "no_metadata") {
    header.erase("__metadata__");
    out = with_header(header, data);
  } else {
    std::fprintf(stderr, "unknown KIND %s\n", kind.c_str());
    return 2;
  }
  std::ofstream(argv[3], std::ios::binary) << out;
  return 0;
}

// The tool itself; its entry point (below) turns an exception into one line on stderr and exit status 1.
int run_bad_files(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "npy" && argc == 4) return write_bad_npy(argv[2], argv[3]);
  if (what == "checkpoint") return write_bad_checkpoint(argc - 1, argv + 1);
  std::fprintf(stderr, "usage: bad_files npy KIND OUT | bad_files checkpoint KIND IN OUT\n");
  return 2;
}

}  // namespace

int tf::test_tools::bad_files(int argc, char** argv) {
  try {
    return run_bad_files(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bad_files: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "bad_files: unknown error\n");
  }
  return 1;
}
