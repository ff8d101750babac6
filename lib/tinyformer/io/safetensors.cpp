#include "tinyformer/io/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/json_error.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/memory.hpp"

// Values are copied with memcpy, so the host must store them as the file does.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

namespace tf::io {

namespace {

constexpr const char* kMetadataKey = "__metadata__";

bool parse_dtype(const std::string& s, DType& out) {
  if (s == "F32")
    out = DType::F32;
  else if (s == "F64")
    out = DType::F64;
  else if (s == "I32")
    out = DType::I32;
  else if (s == "I64")
    out = DType::I64;
  else
    return false;
  return true;
}

bool is_float(DType d) { return d == DType::F32 || d == DType::F64; }

// numel * itemsize, or false on overflow.
bool byte_size(const Shape& shape, std::size_t itemsize, std::size_t& out) {
  std::size_t n = itemsize;
  for (auto d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return false;
  out = n;
  return true;
}

std::uint64_t read_le_u64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string le_u64_bytes(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

template <class T>
T load_at(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "F32";
    case DType::F64:
      return "F64";
    case DType::I32:
      return "I32";
    case DType::I64:
      return "I64";
  }
  return "?";
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 4;
    case DType::F64:
      return 8;
    case DType::I32:
      return 4;
    case DType::I64:
      return 8;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Reading

namespace {

// The JSON header after the 8-byte length; `data_size` gets the size of the data section that follows it.
nlohmann::json read_header(InputFile& in, const std::string& path, std::size_t& data_size) {
  if (in.size() < 8)
    throw std::runtime_error(
        fmt::format("{}: not a safetensors file: it is {} bytes long, shorter than the 8-byte header length field",
                    path, in.size()));
  unsigned char len_bytes[8];
  in.read(len_bytes, 8, "the header length");
  const std::uint64_t header_len = read_le_u64(len_bytes);
  const std::uint64_t rest = in.size() - 8;
  if (header_len > rest)
    throw std::runtime_error(
        fmt::format("{}: corrupt safetensors file: the header length field says {} bytes but only {} bytes follow it",
                    path, header_len, rest));
  constexpr std::uint64_t kMaxHeader = 100'000'000;  // the format's own cap (safetensors' MAX_HEADER_SIZE)
  if (header_len > kMaxHeader)
    throw std::runtime_error(
        fmt::format("{}: corrupt safetensors file: the header length field says {} bytes; the format allows at most {}",
                    path, header_len, kMaxHeader));
  std::string header_text(static_cast<std::size_t>(header_len), '\0');
  in.read(header_text.data(), header_text.size(), "the JSON header");
  data_size = static_cast<std::size_t>(rest - header_len);
  if (json_too_deep(header_text))
    throw std::runtime_error(fmt::format(
        "{}: corrupt safetensors file: the JSON header nests more than 64 levels (a header needs 3)", path));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number like 1e2060
    throw std::runtime_error(
        fmt::format("{}: the safetensors header is not valid JSON: {}", path, short_json_error(e.what())));
  }
  if (!header.is_object())
    throw std::runtime_error(
        fmt::format("{}: the safetensors header must be a JSON object, got a {}", path, header.type_name()));
  return header;
}

std::map<std::string, std::string> parse_metadata(const nlohmann::json& value, const std::string& path) {
  if (!value.is_object())
    throw std::runtime_error(
        fmt::format("{}: \"{}\" must be an object of strings, got a {}", path, kMetadataKey, value.type_name()));
  std::map<std::string, std::string> metadata;
  for (const auto& [mk, mv] : value.items()) {
    if (!mv.is_string())
      throw std::runtime_error(fmt::format("{}: metadata \"{}\" must be a string, got a {}", path, mk, mv.type_name()));
    metadata[mk] = mv.get<std::string>();
  }
  return metadata;
}

// One tensor's entry, checked: dtype known, shape of sizes, data_offsets [begin, end] holding shape x dtype bytes.
// Whether it ends past the data section is for the caller to tell (a truncated file or a corrupt entry).
TensorEntry parse_entry(const std::string& path, const std::string& key, const nlohmann::json& value) {
  const auto where = [&](const std::string& problem) {
    return std::runtime_error(fmt::format("{}: tensor '{}': {}", path, key, problem));
  };
  if (!value.is_object()) throw where(fmt::format("the entry must be a JSON object, got a {}", value.type_name()));
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!value.contains(field))
      throw where(fmt::format("no \"{}\" (each entry needs dtype, shape and data_offsets)", field));
  TensorEntry e{};
  const auto& jd = value["dtype"];
  if (!jd.is_string()) throw where(fmt::format("\"dtype\" must be a string, got {}", jd.dump()));
  if (!parse_dtype(jd.get<std::string>(), e.dtype))
    throw where(fmt::format("unknown dtype '{}' (tinyformer reads F32, F64, I32, I64)", jd.get<std::string>()));
  const auto& js = value["shape"];
  if (!js.is_array()) throw where(fmt::format("\"shape\" must be an array of sizes, got {}", js.dump()));
  for (const auto& d : js) {
    if (!d.is_number_unsigned()) throw where(fmt::format("\"shape\" {} must hold non-negative integers", js.dump()));
    e.shape.push_back(d.get<std::size_t>());
  }
  const auto& jo = value["data_offsets"];
  if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() || !jo[1].is_number_unsigned())
    throw where(fmt::format("\"data_offsets\" must be [begin, end] with 0 <= begin <= end, got {}", jo.dump()));
  const auto begin = jo[0].get<std::uint64_t>(), end = jo[1].get<std::uint64_t>();
  if (begin > end) throw where(fmt::format("\"data_offsets\" [{}, {}] begin after they end", begin, end));
  e.begin = static_cast<std::size_t>(begin);
  e.end = static_cast<std::size_t>(end);
  std::size_t expected = 0;
  if (!byte_size(e.shape, dtype_size(e.dtype), expected))
    throw where(fmt::format("shape {} is too large", shape_str(e.shape)));
  if (e.end - e.begin != expected)
    throw where(fmt::format("data_offsets [{}, {}] hold {} bytes but shape {} of {} needs {}", begin, end,
                            e.end - e.begin, shape_str(e.shape), dtype_name(e.dtype), expected));
  return e;
}

// Entries (in data order) of which `past_end` end after the data section: a file cut short when the tensors lie end
// to end from 0 (as every writer lays them), a corrupt entry otherwise. Throws either way.
[[noreturn]] void refuse_past_end(const std::string& path, const std::vector<const TensorEntry*>& in_order,
                                  const std::string& past_end, const TensorEntry& e, std::size_t data_size,
                                  std::size_t file_size) {
  bool contiguous = true;
  std::size_t end = 0;
  for (const TensorEntry* t : in_order) {
    contiguous = contiguous && t->begin == end;
    end = t->end;
  }
  if (contiguous)
    throw std::runtime_error(fmt::format("{}: truncated: the header describes {} bytes of tensor data but only {} "
                                         "follow it (the file is {} bytes, {} expected)",
                                         path, end, data_size, file_size, file_size + (end - data_size)));
  throw std::runtime_error(fmt::format("{}: tensor '{}': data_offsets [{}, {}] go past the end of the data section "
                                       "({} bytes)",
                                       path, past_end, e.begin, e.end, data_size));
}

}  // namespace

SafetensorsFile SafetensorsFile::load(const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  InputFile in(path);
  std::size_t data_size = 0;
  const nlohmann::json header = read_header(in, path, data_size);
  std::vector<std::string> past_end;  // tensors whose data_offsets end after the data section
  for (const auto& item : header.items()) {
    if (item.key() == kMetadataKey) {
      f.metadata_ = parse_metadata(item.value(), path);
      continue;
    }
    Entry e = parse_entry(path, item.key(), item.value());
    if (e.end > data_size) past_end.push_back(item.key());
    f.entries_.emplace(item.key(), std::move(e));
    f.names_.push_back(item.key());
  }
  std::sort(f.names_.begin(), f.names_.end(), [&](const std::string& a, const std::string& b) {
    const Entry& ea = f.entries_.at(a);
    const Entry& eb = f.entries_.at(b);
    return ea.begin != eb.begin ? ea.begin < eb.begin : a < b;
  });
  for (std::size_t i = 1; i < f.names_.size(); ++i) {  // the format forbids overlaps: one would read another's bytes
    const Entry& a = f.entries_.at(f.names_[i - 1]);
    const Entry& b = f.entries_.at(f.names_[i]);
    if (b.begin < a.end && b.end > b.begin)
      throw std::runtime_error(
          fmt::format("{}: corrupt safetensors file: tensors '{}' (data_offsets [{}, {}]) and '{}' "
                      "([{}, {}]) overlap; each byte of the data belongs to one tensor",
                      path, f.names_[i - 1], a.begin, a.end, f.names_[i], b.begin, b.end));
  }
  if (!past_end.empty()) {
    std::vector<const TensorEntry*> in_order;
    for (const auto& name : f.names_) in_order.push_back(&f.entries_.at(name));
    refuse_past_end(path, in_order, past_end.front(), f.entries_.at(past_end.front()), data_size, in.size());
  }
  // The data section is exactly the tensors' bytes (as safetensors' own reader requires): bytes after them are
  // refused before anything is read, so that a file of many GiB is not read to be refused.
  std::size_t used = 0;
  for (const auto& [name, e] : f.entries_) used = std::max(used, e.end);
  if (data_size > used)
    throw std::runtime_error(
        fmt::format("{}: corrupt safetensors file: {} bytes follow the {} bytes of tensor data its "
                    "header describes (the file is {} bytes, {} expected)",
                    path, data_size - used, used, in.size(), in.size() - (data_size - used)));
  if (const double available = available_memory(); available > 0 && static_cast<double>(used) > available)
    throw std::runtime_error(fmt::format("{}: its {} of tensor data need more memory than this machine has available "
                                         "({})",
                                         path, format_bytes(static_cast<double>(used)), format_bytes(available)));
  f.data_.resize(used);
  in.read(f.data_.data(), used, "the tensor data");
  return f;
}

const SafetensorsFile::Entry& SafetensorsFile::entry(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string known;
    for (std::size_t i = 0; i < names_.size() && i < 8; ++i) known += (i ? ", " : "") + names_[i];
    if (names_.size() > 8) known += ", ...";
    throw std::runtime_error(fmt::format("{}: no tensor named '{}' (the file has {} tensors: {})", path_, name,
                                         names_.size(), known.empty() ? "none" : known));
  }
  return it->second;
}

DType SafetensorsFile::dtype(const std::string& name) const { return entry(name).dtype; }

const Shape& SafetensorsFile::shape(const std::string& name) const { return entry(name).shape; }

// Element-wise copy of entry `e` into an array of T, converting from the stored dtype with static_cast.
// The callers decide which conversions are allowed.
template <class T>
Array<T> SafetensorsFile::copy_as(const Entry& e) const {
  Array<T> out = Array<T>::from_shape(e.shape);
  const std::uint8_t* src = data_.data() + e.begin;
  const std::size_t n = out.size();
  T* dst = out.data();
  switch (e.dtype) {
    case DType::F32:
      if constexpr (std::is_same_v<T, float>) {
        if (n) std::memcpy(dst, src, n * sizeof(T));
      } else {
        for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(load_at<float>(src + 4 * i));
      }
      break;
    case DType::F64:
      if constexpr (std::is_same_v<T, double>) {
        if (n) std::memcpy(dst, src, n * sizeof(T));
      } else {
        for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(load_at<double>(src + 8 * i));
      }
      break;
    case DType::I32:
      if constexpr (std::is_same_v<T, std::int32_t>) {
        if (n) std::memcpy(dst, src, n * sizeof(T));
      } else {
        for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(load_at<std::int32_t>(src + 4 * i));
      }
      break;
    case DType::I64:
      if constexpr (std::is_same_v<T, std::int64_t>) {
        if (n) std::memcpy(dst, src, n * sizeof(T));
      } else {
        for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(load_at<std::int64_t>(src + 8 * i));
      }
      break;
  }
  return out;
}

Array<float> SafetensorsFile::get_f32(const std::string& name, Conversion conversion) const {
  const Entry& e = entry(name);
  if (!is_float(e.dtype))
    throw std::runtime_error(fmt::format("{}: tensor '{}' is {} (integer) but a float32 array was requested; "
                                         "use get_index or get_i64",
                                         path_, name, dtype_name(e.dtype)));
  if (e.dtype == DType::F64 && conversion != Conversion::allow_narrowing)
    throw std::runtime_error(fmt::format("{}: tensor '{}' is F64 but F32 was requested; reading it as float32 "
                                         "would round it (use get_f64, or pass Conversion::allow_narrowing)",
                                         path_, name));
  return copy_as<float>(e);
}

Array<double> SafetensorsFile::get_f64(const std::string& name) const {
  const Entry& e = entry(name);
  if (!is_float(e.dtype))
    throw std::runtime_error(fmt::format("{}: tensor '{}' is {} (integer) but a float64 array was requested; "
                                         "use get_index or get_i64",
                                         path_, name, dtype_name(e.dtype)));
  return copy_as<double>(e);
}

IndexArray SafetensorsFile::get_index(const std::string& name) const {
  const Entry& e = entry(name);
  if (is_float(e.dtype))
    throw std::runtime_error(fmt::format("{}: tensor '{}' is {} but an integer array (I32 or I64) was requested", path_,
                                         name, dtype_name(e.dtype)));
  if (e.dtype == DType::I64) {
    const std::uint8_t* src = data_.data() + e.begin;
    const std::size_t n = (e.end - e.begin) / 8;
    for (std::size_t i = 0; i < n; ++i) {
      const auto v = load_at<std::int64_t>(src + 8 * i);
      if (v < std::numeric_limits<Index>::min() || v > std::numeric_limits<Index>::max())
        throw std::runtime_error(fmt::format("{}: tensor '{}' (I64) holds {} at flat position {}, outside the int32 "
                                             "range of token ids",
                                             path_, name, v, i));
    }
  }
  return copy_as<Index>(e);
}

Array<std::int64_t> SafetensorsFile::get_i64(const std::string& name) const {
  const Entry& e = entry(name);
  if (is_float(e.dtype))
    throw std::runtime_error(fmt::format("{}: tensor '{}' is {} but an integer array (I32 or I64) was requested", path_,
                                         name, dtype_name(e.dtype)));
  return copy_as<std::int64_t>(e);
}

// ---------------------------------------------------------------------------------------------------------------
// Writing

void SafetensorsWriter::add_raw(const std::string& name, DType dtype, const Shape& shape, const void* data,
                                std::size_t bytes) {
  if (name.empty()) throw std::invalid_argument("SafetensorsWriter::add: the tensor name is empty");
  if (name == kMetadataKey)
    throw std::invalid_argument(
        fmt::format("SafetensorsWriter::add: '{}' is reserved for the metadata; pick another name", name));
  for (const auto& t : tensors_)
    if (t.name == name)
      throw std::invalid_argument(fmt::format("SafetensorsWriter::add: a tensor named '{}' was already added", name));
  Pending p{name, dtype, shape, std::vector<std::uint8_t>(bytes)};
  if (bytes) std::memcpy(p.bytes.data(), data, bytes);
  tensors_.push_back(std::move(p));
}

// The arrays are row-major xarrays with contiguous storage, so data() holds the values in file order.
void SafetensorsWriter::add(const std::string& name, const Array<float>& values) {
  add_raw(name, DType::F32, to_shape(values.shape()), values.data(), values.size() * sizeof(float));
}
void SafetensorsWriter::add(const std::string& name, const Array<double>& values) {
  add_raw(name, DType::F64, to_shape(values.shape()), values.data(), values.size() * sizeof(double));
}
void SafetensorsWriter::add(const std::string& name, const IndexArray& values) {
  add_raw(name, DType::I32, to_shape(values.shape()), values.data(), values.size() * sizeof(Index));
}
void SafetensorsWriter::add(const std::string& name, const Array<std::int64_t>& values) {
  add_raw(name, DType::I64, to_shape(values.shape()), values.data(), values.size() * sizeof(std::int64_t));
}

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

std::string SafetensorsWriter::header() const {
  // ordered_json keeps the insertion order: metadata first, then the tensors in data order.
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata_) m[k] = v;
    h[kMetadataKey] = std::move(m);
  }
  std::size_t offset = 0;
  for (const auto& t : tensors_) {
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["dtype"] = dtype_name(t.dtype);
    e["shape"] = t.shape;
    e["data_offsets"] = {offset, offset + t.bytes.size()};
    h[t.name] = std::move(e);
    offset += t.bytes.size();
  }
  std::string text;
  try {
    text = h.dump();
  } catch (const nlohmann::json::type_error& e) {  // e.g. a name or metadata value that is not valid UTF-8
    throw std::invalid_argument(fmt::format("SafetensorsWriter: cannot encode the header: {}", e.what()));
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  return le_u64_bytes(text.size()) + text;
}

std::string SafetensorsWriter::serialize() const {
  std::string out = header();
  for (const auto& t : tensors_) out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

void SafetensorsWriter::write_atomic(const std::string& path) const {
  AtomicFile file(path);
  file.write(header());
  for (const auto& t : tensors_) file.write(t.bytes.data(), t.bytes.size());
  file.commit();
}

}  // namespace tf::io
