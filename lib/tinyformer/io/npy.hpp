#pragma once
// NumPy .npy files (format versions 1.0, 2.0 and 3.0 are read; 1.0, or 2.0 for huge headers, is written):
//   "\x93NUMPY", major, minor, header length (u16 LE in 1.0, u32 LE in 2.0/3.0),
//   a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and a
//   final '\n' so that the data starts at a multiple of 64 bytes, then the raw values in C (row-major) order.
// dtypes: '<f4', '<f8', '<i4', '<i8' and '|u1' (read only). Fortran-ordered arrays are refused.
// Every error is a std::runtime_error that names the file and what is wrong with it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::io {

struct NpyHeader {
  int major_version = 1;
  int minor_version = 0;
  std::string descr;             // '<f4', '<f8', '<i4', '<i8' or '|u1'
  Shape shape;                   // () for a 0-d array
  std::size_t data_offset = 0;   // where the values start in the file
  std::size_t itemsize() const;  // bytes per value
};

// Parses and checks the header only (magic, version, dict, dtype, fortran_order, that the file holds exactly
// the data the shape needs). For a caller that wants to look at dtype/shape before choosing a reader.
NpyHeader read_npy_header(const std::string& path);

// `rank`, when given, is the rank the caller needs ("rank 3 but rank 2 was expected").
// float32 only: a '<f8' file is refused rather than rounded (save it with arr.astype(np.float32)).
Array<float> read_npy_f32(const std::string& path, std::optional<std::size_t> rank = std::nullopt);
// '<f8', or '<f4' widened.
Array<double> read_npy_f64(const std::string& path, std::optional<std::size_t> rank = std::nullopt);
// Token ids / targets: '<i4', '<i8' (values outside the int32 range are refused) or '|u1'.
IndexArray read_npy_index(const std::string& path, std::optional<std::size_t> rank = std::nullopt);

// Written as np.save writes them (byte-identical header), atomically as io/atomic_file.hpp describes.
void write_npy(const std::string& path, const Array<float>& values);         // '<f4'
void write_npy(const std::string& path, const Array<double>& values);        // '<f8'
void write_npy(const std::string& path, const IndexArray& values);           // '<i4'
void write_npy(const std::string& path, const Array<std::int64_t>& values);  // '<i8'

}  // namespace tf::io
