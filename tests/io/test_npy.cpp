// .npy: files NumPy wrote (tests/io/fixtures, made with np.save), byte-identical output, and bad files.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include "io/io_test_support.hpp"
#include "support/helpers.hpp"
#include "tinyformer/io/npy.hpp"

using namespace tf;
using namespace tf::io;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using tf::test::read_bytes;
using tf::test::runtime_error_of;
using tf::test::TempDir;
using tf::test::write_bytes;

namespace {

std::string fixture(const std::string& name) {
  return std::string(TINYFORMER_SOURCE_DIR) + "/tests/io/fixtures/" + name;
}

// The fixtures' values, as written by tests/io/fixtures (np.save, NumPy 1.24):
//   f32_2x3.npy: np.array([[1.5, -2.25, 0.1], [3.0e7, -0.0, 1e-3]], dtype=np.float32)
//   i64_2x4.npy: np.array([[0, 1, 2, 3], [-1, 100, 2147483647, -2147483648]], dtype=np.int64)
//   i32_3.npy:   np.array([7, -8, 123456], dtype=np.int32)
const Array<float> kF32 = {{1.5f, -2.25f, 0.1f}, {3.0e7f, -0.0f, 1e-3f}};
const Array<std::int64_t> kI64 = {{0, 1, 2, 3}, {-1, 100, 2147483647, -2147483647 - 1}};
const IndexArray kI32 = {7, -8, 123456};

// A .npy file with the given version and header dict, padded with spaces and '\n' to a multiple of 64.
std::string npy_file(int major, const std::string& dict, const std::string& data) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append(64 - (prefix + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  for (std::size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

}  // namespace

TEST_CASE("io: npy reads the float32 [2,3] file NumPy wrote, exactly", "[io]") {
  const Array<float> a = read_npy_f32(fixture("f32_2x3.npy"), 2);
  REQUIRE(a.shape() == kF32.shape());
  CHECK((a == kF32));
  CHECK(std::signbit(a(1, 1)));  // -0.0 keeps its sign bit
  // The float64 reader widens float32 exactly.
  CHECK((read_npy_f64(fixture("f32_2x3.npy")) == Array<double>(xt::cast<double>(kF32))));
}

TEST_CASE("io: npy reads the int64 [2,4] and int32 [3] files NumPy wrote, exactly", "[io]") {
  const IndexArray a = read_npy_index(fixture("i64_2x4.npy"), 2);
  CHECK(to_shape(a.shape()) == Shape{2, 4});
  CHECK((a == IndexArray(xt::cast<Index>(kI64))));
  const IndexArray b = read_npy_index(fixture("i32_3.npy"), 1);
  CHECK(to_shape(b.shape()) == Shape{3});
  CHECK((b == kI32));
}

TEST_CASE("io: npy header of a NumPy file: version, dtype, shape, data at byte 128", "[io]") {
  const NpyHeader h = read_npy_header(fixture("i64_2x4.npy"));
  CHECK(h.major_version == 1);
  CHECK(h.minor_version == 0);
  CHECK(h.descr == "<i8");
  CHECK(h.shape == Shape{2, 4});
  CHECK(h.itemsize() == 8);
  CHECK(h.data_offset == 128);
}

TEST_CASE("io: npy writer output is byte-identical to np.save for float32, int64 and int32", "[io]") {
  TempDir dir;
  write_npy(dir.file("f32.npy"), kF32);
  write_npy(dir.file("i64.npy"), kI64);
  write_npy(dir.file("i32.npy"), kI32);
  const std::string ours = read_bytes(dir.file("f32.npy"));
  CHECK_THAT(ours, StartsWith(std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
  CHECK(ours.size() == 128 + 6 * 4);
  CHECK(ours[127] == '\n');
  CHECK(ours == read_bytes(fixture("f32_2x3.npy")));
  CHECK(read_bytes(dir.file("i64.npy")) == read_bytes(fixture("i64_2x4.npy")));
  CHECK(read_bytes(dir.file("i32.npy")) == read_bytes(fixture("i32_3.npy")));
  CHECK(dir.entries() == std::vector<std::string>{"f32.npy", "i32.npy", "i64.npy"});  // no temporary files
}

TEST_CASE("io: npy writer keeps NumPy's spare header room (data at 192 for a rank-16 array, as np.save)", "[io]") {
  // np.save(f, np.full((1,)*16, 2.5, dtype=np.float32)) writes 196 bytes: a 182-byte header length (0xb6),
  // the dict plus 20 spare spaces for growing axis 0 push the data from offset 128 to 192.
  TempDir dir;
  Array<float> a = Array<float>::from_shape(Shape(16, 1));
  a.fill(2.5f);
  write_npy(dir.file("r16.npy"), a);
  const std::string bytes = read_bytes(dir.file("r16.npy"));
  CHECK(bytes.size() == 196);
  CHECK(bytes.substr(0, 10) == std::string("\x93NUMPY\x01\x00\xb6\x00", 10));
  CHECK(bytes.substr(192) == std::string("\x00\x00\x20\x40", 4));  // 2.5f
  CHECK(read_npy_header(dir.file("r16.npy")).data_offset == 192);
}

TEST_CASE("io: npy round trips float64, 0-d and empty arrays", "[io]") {
  TempDir dir;
  const Array<double> d = test::random_array({3, 2, 5}, 7);
  write_npy(dir.file("d.npy"), d);
  CHECK((read_npy_f64(dir.file("d.npy"), 3) == d));
  CHECK(read_npy_header(dir.file("d.npy")).descr == "<f8");

  Array<float> scalar = Array<float>::from_shape({});
  scalar() = -4.25f;
  write_npy(dir.file("s.npy"), scalar);
  CHECK_THAT(read_bytes(dir.file("s.npy")), Contains("'shape': (), }"));
  const Array<float> s = read_npy_f32(dir.file("s.npy"), 0);
  CHECK(s.dimension() == 0);
  CHECK(s() == -4.25f);

  const IndexArray empty = IndexArray::from_shape({0, 4});
  write_npy(dir.file("e.npy"), empty);
  const IndexArray e = read_npy_index(dir.file("e.npy"));
  CHECK(to_shape(e.shape()) == Shape{0, 4});
  CHECK(read_bytes(dir.file("e.npy")).size() % 64 == 0);
}

TEST_CASE("io: npy reads a version 2.0 header and uint8 data", "[io]") {
  TempDir dir;
  const std::string path = dir.file("v2.npy");
  write_bytes(path, npy_file(2, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), }",
                             std::string("\x00\x07\xff\x80", 4)));
  const NpyHeader h = read_npy_header(path);
  CHECK(h.major_version == 2);
  CHECK(h.data_offset == 128);  // 12-byte prefix + 59-character dict + padding + newline
  CHECK((read_npy_index(path) == IndexArray{{0, 7}, {255, 128}}));
}

TEST_CASE("io: npy missing file names the file and the OS error", "[io]") {
  TempDir dir;
  const std::string path = dir.file("tokens.npy");
  CHECK_THAT(runtime_error_of([&] { read_npy_index(path); }), Contains(path + ": no such file"));
}

TEST_CASE("io: npy refuses a file without the magic string or with an unknown version", "[io]") {
  TempDir dir;
  const std::string path = dir.file("x.npy");
  write_bytes(path, "PK\x03\x04 this is a zip, not an npy");
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }), Contains(path) && Contains("not a .npy file"));
  write_bytes(path, "\x93NU");
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }),
             Contains(path) && Contains("not a .npy file: it is only 3 bytes long"));
  std::string v4 = read_bytes(fixture("f32_2x3.npy"));
  v4[6] = 4;
  write_bytes(path, v4);
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }),
             Contains(path) && Contains("unsupported .npy format version 4.0"));
}

TEST_CASE("io: npy refuses truncated data and trailing bytes", "[io]") {
  TempDir dir;
  const std::string path = dir.file("cut.npy");
  const std::string full = read_bytes(fixture("f32_2x3.npy"));
  write_bytes(path, full.substr(0, full.size() - 2));
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }), Contains(path) && Contains("truncated") &&
                                                                Contains("shape [2, 3] of '<f4' needs 24 bytes") &&
                                                                Contains("only 22 follow"));
  write_bytes(path, full.substr(0, 60));  // cut inside the header
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }),
             Contains(path) && Contains("truncated: the header length says 118 bytes but only 50 follow"));
  write_bytes(path, full + "x");
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }),
             Contains(path) && Contains("1 unexpected bytes after the data"));
}

TEST_CASE("io: npy refuses fortran_order True, big-endian and unsupported dtypes", "[io]") {
  TempDir dir;
  const std::string path = dir.file("x.npy");
  const std::string data(24, '\0');
  write_bytes(path, npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data));
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }), Contains(path) && Contains("fortran_order is True"));
  write_bytes(path, npy_file(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", data));
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }), Contains(path) && Contains("unsupported dtype '>f4'"));
  write_bytes(path, npy_file(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", data));
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }), Contains(path) && Contains("unsupported dtype '<c8'"));
}

TEST_CASE("io: npy refuses a malformed header dict", "[io]") {
  TempDir dir;
  const std::string path = dir.file("x.npy");
  const std::string data(24, '\0');
  write_bytes(path, npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", data));
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }),
             Contains(path) && Contains("malformed .npy header") && Contains("non-negative integer in the shape"));
  write_bytes(path, npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", data));
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }), Contains(path) && Contains("unexpected key 'x'"));
  write_bytes(path, npy_file(1, "{'descr': '<f4', 'shape': (2, 3)}", data));
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(path); }), Contains(path) && Contains("lacks 'fortran_order'"));
  // Either quote style, any key order, no trailing comma: still fine.
  write_bytes(path, npy_file(1, "{\"shape\": (2,3), \"fortran_order\": False, \"descr\": \"<f4\"}", data));
  Array<float> zeros = Array<float>::from_shape({2, 3});
  zeros.fill(0.0f);
  CHECK((read_npy_f32(path) == zeros));
}

TEST_CASE("io: npy readers refuse the wrong dtype and the wrong rank", "[io]") {
  TempDir dir;
  CHECK_THAT(runtime_error_of([&] { read_npy_index(fixture("f32_2x3.npy")); }),
             Contains("f32_2x3.npy: dtype '<f4' but an integer array was expected (int32 '<i4', int64 '<i8'"));
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(fixture("i32_3.npy")); }),
             Contains("i32_3.npy: dtype '<i4' but a float array was expected"));
  write_npy(dir.file("d.npy"), Array<double>{1.0, 2.0});
  CHECK_THAT(runtime_error_of([&] { read_npy_f32(dir.file("d.npy")); }),
             Contains(dir.file("d.npy")) && Contains("dtype '<f8' but float32 ('<f4') was expected"));
  CHECK_THAT(runtime_error_of([&] { read_npy_index(fixture("i64_2x4.npy"), 3); }),
             Contains("i64_2x4.npy: rank 2 but rank 3 was expected (shape [2, 4])"));
}

TEST_CASE("io: npy int64 token ids outside the int32 range are refused", "[io]") {
  TempDir dir;
  const std::string path = dir.file("big.npy");
  write_npy(path, Array<std::int64_t>{3, std::int64_t{1} << 40});
  CHECK_THAT(runtime_error_of([&] { read_npy_index(path); }),
             Contains(path) && Contains("value 1099511627776 at flat position 1 is outside the int32 range"));
}

TEST_CASE("io: npy write into a missing directory or over a directory throws and leaves nothing", "[io]") {
  TempDir dir;
  const std::string missing = (dir.path() / "nope" / "a.npy").string();
  CHECK_THAT(runtime_error_of([&] { write_npy(missing, kF32); }),
             Contains(missing) && Contains("No such file or directory"));
  CHECK(dir.entries().empty());

  const std::string taken = dir.file("taken.npy");
  std::filesystem::create_directory(taken);
  CHECK_THAT(runtime_error_of([&] { write_npy(taken, kI32); }), Contains(taken) && Contains("is a directory"));
  CHECK(std::filesystem::is_directory(taken));
  CHECK(dir.entries() == std::vector<std::string>{"taken.npy"});

  // An existing file is replaced on success.
  const std::string path = dir.file("a.npy");
  write_npy(path, kI32);
  write_npy(path, IndexArray{1});
  CHECK((read_npy_index(path) == IndexArray{1}));
  CHECK(dir.entries() == std::vector<std::string>{"a.npy", "taken.npy"});
}
