#pragma once
// The safetensors format (what PyTorch / Hugging Face checkpoints use):
//   8 bytes   N, the header length, little-endian u64
//   N bytes   JSON header, padded with spaces to a multiple of 8:
//             {"__metadata__": {"key": "value", ...},
//              "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//   the data  raw little-endian values; offsets are relative to the start of this section, end exclusive.
// tinyformer reads and writes the dtypes F32, F64, I32 and I64. The writer lays tensors out contiguously in
// the order they were added and replaces the target file atomically (io/atomic_file.hpp).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::io {

enum class DType { F32, F64, I32, I64 };

// "F32", "F64", "I32", "I64" (the safetensors spelling).
const char* dtype_name(DType dtype);
std::size_t dtype_size(DType dtype);

// Whether a getter may change the precision. Widening (F32 -> F64, I32 -> I64) is exact and always allowed;
// narrowing F64 -> F32 rounds and needs Conversion::allow_narrowing. Floats and integers never mix.
enum class Conversion { exact, allow_narrowing };

// Where one tensor of a safetensors file is: its dtype, shape and byte range in the data section.
struct TensorEntry {
  DType dtype;
  Shape shape;
  std::size_t begin;  // byte offsets into the data section, end exclusive
  std::size_t end;
};

class SafetensorsFile {
 public:
  // Reads and validates the whole file. Throws std::runtime_error naming the file and the problem: missing or
  // unreadable, shorter than 8 bytes, header length past the end, header not valid JSON, an entry without
  // dtype/shape/data_offsets, an unknown dtype, offsets past the end of the data or not matching shape x dtype.
  static SafetensorsFile load(const std::string& path);

  const std::string& path() const { return path_; }
  // Tensor names in file order (by data offset).
  const std::vector<std::string>& names() const { return names_; }
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  // The getters below throw std::runtime_error naming the file and the tensor if there is no such tensor.
  DType dtype(const std::string& name) const;
  const Shape& shape(const std::string& name) const;

  // F32 as is; F64 only with Conversion::allow_narrowing (otherwise std::runtime_error naming the file, the
  // tensor and its dtype); integer tensors are refused.
  Array<float> get_f32(const std::string& name, Conversion conversion = Conversion::exact) const;
  // F64 as is, F32 widened.
  Array<double> get_f64(const std::string& name) const;
  // I32 as is; I64 values outside the int32 range are refused (std::runtime_error naming the position).
  IndexArray get_index(const std::string& name) const;
  // I64 as is, I32 widened.
  Array<std::int64_t> get_i64(const std::string& name) const;

  // The "__metadata__" string map (empty if the file has none).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  using Entry = TensorEntry;
  const Entry& entry(const std::string& name) const;
  template <class T>
  Array<T> copy_as(const Entry& e) const;

  std::string path_;
  std::map<std::string, Entry> entries_;
  std::vector<std::string> names_;
  std::map<std::string, std::string> metadata_;
  std::vector<std::uint8_t> data_;  // the data section
};

class SafetensorsWriter {
 public:
  // Each add copies the values, so the array may change or go away afterwards. Throws std::invalid_argument
  // for an empty or duplicate name, or the reserved name "__metadata__".
  void add(const std::string& name, const Array<float>& values);         // F32
  void add(const std::string& name, const Array<double>& values);        // F64
  void add(const std::string& name, const IndexArray& values);           // I32
  void add(const std::string& name, const Array<std::int64_t>& values);  // I64
  void set_metadata(const std::string& key, const std::string& value);

  std::size_t size() const { return tensors_.size(); }
  // The complete file contents (header and data), as write_atomic would write them.
  std::string serialize() const;
  // Writes "<path>.tmp.<pid>", fsyncs, renames over `path`, fsyncs the directory. On failure the temporary
  // file is removed, a previous file at `path` stays intact, and std::runtime_error names the path.
  void write_atomic(const std::string& path) const;

 private:
  struct Pending {
    std::string name;
    DType dtype;
    Shape shape;
    std::vector<std::uint8_t> bytes;
  };
  void add_raw(const std::string& name, DType dtype, const Shape& shape, const void* data, std::size_t bytes);
  std::string header() const;  // the 8-byte length and the padded JSON

  std::vector<Pending> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace tf::io
