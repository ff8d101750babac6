#include "tinyformer/io/npy.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/tensor/memory.hpp"

// Values are copied with memcpy and the dtypes we accept are little-endian ('<') or single bytes ('|').
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, ".npy I/O assumes a little-endian host");

namespace tf::io {

namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes (+ the terminating NUL, not written)
constexpr std::size_t kMagicLen = 6;
constexpr std::size_t kAlign = 64;             // NumPy's ARRAY_ALIGN: the data starts at a multiple of this
constexpr std::size_t kGrowthAxisDigits = 21;  // NumPy's GROWTH_AXIS_MAX_DIGITS (spare room in the header)

std::size_t descr_itemsize(const std::string& descr) {
  if (descr == "<f4" || descr == "<i4") return 4;
  if (descr == "<f8" || descr == "<i8") return 8;
  if (descr == "|u1") return 1;
  return 0;
}

// The header dict is a Python literal. This parser accepts what np.save writes (and a little more: either
// quote style, any key order, optional trailing comma, extra whitespace) and nothing else.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), s_(text) {}

  void parse(NpyHeader& h) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    bool fortran = false;
    skip_ws();
    expect('{');
    skip_ws();
    while (peek() != '}') {
      const std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')
          fail("'descr' is not a simple dtype string; structured dtypes are not supported");
        h.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = parse_bool();
        have_fortran = true;
      } else if (key == "shape") {
        h.shape = parse_tuple();
        have_shape = true;
      } else {
        fail(fmt::format("unexpected key '{}' (a .npy header has exactly 'descr', 'fortran_order' and 'shape')", key));
      }
      skip_ws();
      if (peek() == ',') {
        ++i_;
        skip_ws();
      } else if (peek() != '}') {
        fail("expected ',' or '}'");
      }
    }
    ++i_;  // '}'
    skip_ws();
    if (i_ != s_.size()) fail("unexpected text after the closing '}'");
    if (!have_descr || !have_fortran || !have_shape)
      throw std::runtime_error(fmt::format("{}: the .npy header lacks {}: \"{}\"", path_,
                                           !have_descr     ? "'descr'"
                                           : !have_fortran ? "'fortran_order'"
                                                           : "'shape'",
                                           trimmed()));
    if (fortran)
      throw std::runtime_error(fmt::format("{}: fortran_order is True; only C-ordered arrays are supported "
                                           "(save np.ascontiguousarray(arr) instead)",
                                           path_));
  }

 private:
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  std::string trimmed() const {
    std::string t = s_;
    while (!t.empty() && (t.back() == ' ' || t.back() == '\n')) t.pop_back();
    return t;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(
        fmt::format("{}: malformed .npy header at character {}: {} in \"{}\"", path_, i_, what, trimmed()));
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++i_;
  }
  std::string parse_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) ++i_;
      out += s_[i_++];
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  bool parse_bool() {
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  Shape parse_tuple() {
    Shape shape;
    expect('(');
    skip_ws();
    while (peek() != ')') {
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in the shape");
      std::size_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(v, std::size_t{10}, &v) ||
            __builtin_add_overflow(v, static_cast<std::size_t>(peek() - '0'), &v))
          fail("shape entry too large");
        ++i_;
      }
      if (peek() == 'L') ++i_;  // Python 2 long literal
      shape.push_back(v);
      skip_ws();
      if (peek() == ',') {
        ++i_;
        skip_ws();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape");
      }
    }
    ++i_;
    return shape;
  }

  const std::string& path_;
  const std::string& s_;
  std::size_t i_ = 0;
};

// Reads and checks everything up to the data; leaves `in` positioned at the first value.
NpyHeader parse_header(InputFile& in) {
  const std::string& path = in.path();
  NpyHeader h;
  if (in.size() < kMagicLen + 2)
    throw std::runtime_error(fmt::format("{}: not a .npy file: it is only {} bytes long", path, in.size()));
  unsigned char prefix[kMagicLen + 2];
  in.read(prefix, sizeof prefix, "the .npy magic string");
  if (std::memcmp(prefix, kMagic, kMagicLen) != 0)
    throw std::runtime_error(fmt::format("{}: not a .npy file: it does not start with \"\\x93NUMPY\"", path));
  h.major_version = prefix[kMagicLen];
  h.minor_version = prefix[kMagicLen + 1];
  std::size_t header_len = 0;
  if (h.major_version == 1) {
    unsigned char b[2];
    in.read(b, 2, "the header length");
    header_len = static_cast<std::size_t>(b[0]) | static_cast<std::size_t>(b[1]) << 8;
  } else if (h.major_version == 2 || h.major_version == 3) {
    unsigned char b[4];
    in.read(b, 4, "the header length");
    header_len = static_cast<std::size_t>(b[0]) | static_cast<std::size_t>(b[1]) << 8 |
                 static_cast<std::size_t>(b[2]) << 16 | static_cast<std::size_t>(b[3]) << 24;
  } else {
    throw std::runtime_error(fmt::format("{}: unsupported .npy format version {}.{} (tinyformer reads 1.0, 2.0, 3.0)",
                                         path, h.major_version, h.minor_version));
  }
  if (header_len > in.size() - in.position())
    throw std::runtime_error(fmt::format("{}: truncated: the header length says {} bytes but only {} follow", path,
                                         header_len, in.size() - in.position()));
  std::string text(header_len, '\0');
  in.read(text.data(), header_len, "the .npy header");
  h.data_offset = static_cast<std::size_t>(in.position());

  HeaderParser(path, text).parse(h);
  if (descr_itemsize(h.descr) == 0)
    throw std::runtime_error(fmt::format("{}: unsupported dtype '{}' (tinyformer reads '<f4', '<f8', '<i4', '<i8', "
                                         "'|u1'; big-endian and other types are not supported)",
                                         path, h.descr));
  std::size_t need = h.itemsize();
  for (auto d : h.shape)
    if (__builtin_mul_overflow(need, d, &need))
      throw std::runtime_error(fmt::format("{}: shape {} is too large", path, shape_str(h.shape)));
  const std::uint64_t have = in.size() - in.position();
  if (have < need)
    throw std::runtime_error(fmt::format("{}: truncated: shape {} of '{}' needs {} bytes of data but only {} follow "
                                         "the header",
                                         path, shape_str(h.shape), h.descr, need, have));
  if (have > need)
    throw std::runtime_error(fmt::format("{}: {} unexpected bytes after the data (shape {} of '{}' needs {} bytes)",
                                         path, have - need, shape_str(h.shape), h.descr, need));
  // read as stored and converted: up to twice the data (an int64 file becomes int32 ids, float32 float64)
  if (const double available = available_memory(); available > 0 && 2.0 * static_cast<double>(need) > available)
    throw std::runtime_error(fmt::format("{}: its shape {} of '{}' needs {} in memory; this machine has {} available",
                                         path, shape_str(h.shape), h.descr,
                                         format_bytes(2.0 * static_cast<double>(need)), format_bytes(available)));
  return h;
}

void check_rank(const std::string& path, const NpyHeader& h, std::optional<std::size_t> rank) {
  if (rank && h.shape.size() != *rank)
    throw std::runtime_error(fmt::format("{}: rank {} but rank {} was expected (shape {})", path, h.shape.size(), *rank,
                                         shape_str(h.shape)));
}

// The values as stored (T matches the file's dtype), straight into an array of the file's shape.
template <class T>
Array<T> read_direct(InputFile& in, const NpyHeader& h) {
  Array<T> out = Array<T>::from_shape(h.shape);
  in.read(out.data(), out.size() * sizeof(T), "the data");
  return out;
}

// The values as stored in a temporary buffer of From, for a converting reader.
template <class From>
std::vector<From> read_buffer(InputFile& in, const NpyHeader& h) {
  std::vector<From> buf(shape_numel(h.shape));
  in.read(buf.data(), buf.size() * sizeof(From), "the data");
  return buf;
}

std::string shape_repr(const Shape& shape) {  // Python's repr of a tuple
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + ")";
}

void write_npy_raw(const std::string& path, const char* descr, const Shape& shape, const void* data,
                   std::size_t bytes) {
  // The same text and padding as numpy.lib.format._write_array_header.
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape_repr(shape));
  if (!shape.empty()) dict.append(kGrowthAxisDigits - std::to_string(shape[0]).size(), ' ');
  std::size_t prefix_len = kMagicLen + 2 + 2;  // version 1.0: u16 length
  int major = 1;
  std::size_t hlen = dict.size() + 1;  // + '\n'
  std::size_t padlen = kAlign - (prefix_len + hlen) % kAlign;
  if (hlen + padlen > 0xffff) {  // version 2.0: u32 length
    major = 2;
    prefix_len = kMagicLen + 2 + 4;
    padlen = kAlign - (prefix_len + hlen) % kAlign;
  }
  const std::size_t total = hlen + padlen;
  std::string header(kMagic, kMagicLen);
  header += static_cast<char>(major);
  header += '\0';
  for (std::size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) header += static_cast<char>((total >> (8 * i)) & 0xff);
  header += dict;
  header.append(padlen, ' ');
  header += '\n';

  AtomicFile file(path);
  file.write(header);
  file.write(data, bytes);
  file.commit();
}

}  // namespace

std::size_t NpyHeader::itemsize() const { return descr_itemsize(descr); }

NpyHeader read_npy_header(const std::string& path) {
  InputFile in(path);
  return parse_header(in);
}

Array<float> read_npy_f32(const std::string& path, std::optional<std::size_t> rank) {
  InputFile in(path);
  const NpyHeader h = parse_header(in);
  check_rank(path, h, rank);
  if (h.descr == "<f4") return read_direct<float>(in, h);
  if (h.descr == "<f8")
    throw std::runtime_error(fmt::format("{}: dtype '<f8' but float32 ('<f4') was expected; reading it would round "
                                         "it (save arr.astype(np.float32))",
                                         path));
  throw std::runtime_error(fmt::format("{}: dtype '{}' but a float array was expected (float32 '<f4')", path, h.descr));
}

Array<double> read_npy_f64(const std::string& path, std::optional<std::size_t> rank) {
  InputFile in(path);
  const NpyHeader h = parse_header(in);
  check_rank(path, h, rank);
  if (h.descr == "<f8") return read_direct<double>(in, h);
  if (h.descr == "<f4") {
    const auto buf = read_buffer<float>(in, h);
    Array<double> out = Array<double>::from_shape(h.shape);
    for (std::size_t i = 0; i < buf.size(); ++i) out.data()[i] = buf[i];
    return out;
  }
  throw std::runtime_error(
      fmt::format("{}: dtype '{}' but a float array was expected (float64 '<f8' or float32 '<f4')", path, h.descr));
}

IndexArray read_npy_index(const std::string& path, std::optional<std::size_t> rank) {
  InputFile in(path);
  const NpyHeader h = parse_header(in);
  check_rank(path, h, rank);
  if (h.descr == "<i4") return read_direct<Index>(in, h);
  if (h.descr == "<i8") {
    const auto buf = read_buffer<std::int64_t>(in, h);
    IndexArray out = IndexArray::from_shape(h.shape);
    for (std::size_t i = 0; i < buf.size(); ++i) {
      if (buf[i] < std::numeric_limits<Index>::min() || buf[i] > std::numeric_limits<Index>::max())
        throw std::runtime_error(
            fmt::format("{}: value {} at flat position {} is outside the int32 range of token ids", path, buf[i], i));
      out.data()[i] = static_cast<Index>(buf[i]);
    }
    return out;
  }
  if (h.descr == "|u1") {
    const auto buf = read_buffer<std::uint8_t>(in, h);
    IndexArray out = IndexArray::from_shape(h.shape);
    for (std::size_t i = 0; i < buf.size(); ++i) out.data()[i] = buf[i];
    return out;
  }
  throw std::runtime_error(fmt::format(
      "{}: dtype '{}' but an integer array was expected (int32 '<i4', int64 '<i8' or uint8 '|u1')", path, h.descr));
}

void write_npy(const std::string& path, const Array<float>& values) {
  write_npy_raw(path, "<f4", to_shape(values.shape()), values.data(), values.size() * sizeof(float));
}
void write_npy(const std::string& path, const Array<double>& values) {
  write_npy_raw(path, "<f8", to_shape(values.shape()), values.data(), values.size() * sizeof(double));
}
void write_npy(const std::string& path, const IndexArray& values) {
  write_npy_raw(path, "<i4", to_shape(values.shape()), values.data(), values.size() * sizeof(Index));
}
void write_npy(const std::string& path, const Array<std::int64_t>& values) {
  write_npy_raw(path, "<i8", to_shape(values.shape()), values.data(), values.size() * sizeof(std::int64_t));
}

}  // namespace tf::io
