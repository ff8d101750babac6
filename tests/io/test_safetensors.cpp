// safetensors: round trips, the exact byte layout, one test per kind of bad file, and atomic replacement.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

#include "io/io_test_support.hpp"
#include "support/helpers.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/io/safetensors.hpp"

using namespace tf;
using namespace tf::io;
using Catch::Matchers::Contains;
using tf::test::le_u64;
using tf::test::read_bytes;
using tf::test::runtime_error_of;
using tf::test::TempDir;
using tf::test::write_bytes;

namespace {

// A safetensors file from a JSON header (padded here) and raw data bytes.
std::string raw_file(const std::string& json, const std::string& data) {
  std::string header = json;
  header.append((8 - header.size() % 8) % 8, ' ');
  return le_u64(header.size()) + header + data;
}

}  // namespace

TEST_CASE("io: safetensors round trip keeps F32, F64, I32, I64 values, shapes and metadata", "[io]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");

  const Array<float> w = test::random_array_f({3, 4}, 1);
  const Array<double> g = test::random_array({2, 2, 2}, 2);
  const IndexArray ids = {5, -1, 0, 2147483647, -2147483647 - 1};
  const Array<std::int64_t> big = {{1, -2, 3}, {std::int64_t{1} << 40, -(std::int64_t{1} << 50), 0}};

  SafetensorsWriter writer;
  writer.add("transformer.h.0.attn.c_attn.weight", w);
  writer.add("grad", g);
  writer.add("ids", ids);
  writer.add("big", big);
  writer.set_metadata("format", "pt");
  writer.set_metadata("step", "1200");
  writer.write_atomic(path);
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});  // no temporary file left

  const SafetensorsFile f = SafetensorsFile::load(path);
  CHECK(f.names() == std::vector<std::string>{"transformer.h.0.attn.c_attn.weight", "grad", "ids", "big"});
  CHECK(f.has("grad"));
  CHECK_FALSE(f.has("nope"));
  CHECK(f.dtype("transformer.h.0.attn.c_attn.weight") == DType::F32);
  CHECK(f.dtype("grad") == DType::F64);
  CHECK(f.dtype("ids") == DType::I32);
  CHECK(f.dtype("big") == DType::I64);
  CHECK(f.shape("grad") == Shape{2, 2, 2});
  CHECK(f.shape("big") == Shape{2, 3});

  CHECK((f.get_f32("transformer.h.0.attn.c_attn.weight") == w));
  CHECK((f.get_f64("grad") == g));
  CHECK((f.get_index("ids") == ids));
  CHECK((f.get_i64("big") == big));
  CHECK(f.metadata() == std::map<std::string, std::string>{{"format", "pt"}, {"step", "1200"}});

  // Exact widenings are allowed without asking.
  CHECK((f.get_f64("transformer.h.0.attn.c_attn.weight") == Array<double>(xt::cast<double>(w))));
  CHECK((f.get_i64("ids") == Array<std::int64_t>(xt::cast<std::int64_t>(ids))));
}

TEST_CASE("io: safetensors keeps 0-d scalars and empty tensors", "[io]") {
  TempDir dir;
  const std::string path = dir.file("s.safetensors");
  Array<float> scalar = Array<float>::from_shape({});
  scalar() = 2.5f;
  const Array<double> empty = Array<double>::from_shape({0, 3});
  SafetensorsWriter writer;
  writer.add("scalar", scalar);
  writer.add("empty", empty);
  writer.write_atomic(path);

  const SafetensorsFile f = SafetensorsFile::load(path);
  CHECK(f.shape("scalar").empty());
  CHECK(f.get_f32("scalar")() == 2.5f);
  CHECK(f.shape("empty") == Shape{0, 3});
  CHECK(f.get_f64("empty").size() == 0);
  CHECK(f.metadata().empty());
}

TEST_CASE("io: safetensors writer output matches a hand-built file byte for byte", "[io]") {
  // Tensors in the order added (z before a), offsets contiguous, header padded with spaces to a multiple of 8.
  const std::string json = R"({"__metadata__":{"format":"pt"},)"
                           R"("z":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("a":{"dtype":"I64","shape":[1],"data_offsets":[8,16]}})";
  REQUIRE(json.size() == 139);                                   // 139 characters -> 5 spaces of padding -> 144 = 0x90
  const std::string data = std::string("\x00\x00\x80\x3f", 4)    // 1.0f
                           + std::string("\x00\x00\x00\xc0", 4)  // -2.0f
                           + std::string("\x07\x00\x00\x00\x00\x00\x00\x00", 8);  // int64 7
  const std::string expected = std::string("\x90\x00\x00\x00\x00\x00\x00\x00", 8) + json + "     " + data;

  SafetensorsWriter writer;
  writer.add("z", Array<float>{1.0f, -2.0f});
  writer.add("a", Array<std::int64_t>{7});
  writer.set_metadata("format", "pt");
  const std::string bytes = writer.serialize();
  CHECK(bytes.size() == 8 + 144 + 16);
  CHECK(bytes.substr(0, 8) == expected.substr(0, 8));      // the little-endian u64 header length, 144
  CHECK(bytes.substr(8, 144) == expected.substr(8, 144));  // the JSON text and its padding
  CHECK(bytes == expected);

  // The hand-built file reads back, names in file order.
  TempDir dir;
  const std::string path = dir.file("hand.safetensors");
  write_bytes(path, expected);
  const SafetensorsFile f = SafetensorsFile::load(path);
  CHECK(f.names() == std::vector<std::string>{"z", "a"});
  CHECK((f.get_f32("z") == Array<float>{1.0f, -2.0f}));
  CHECK((f.get_i64("a") == Array<std::int64_t>{7}));
  CHECK(f.metadata().at("format") == "pt");

  // And write_atomic writes exactly serialize().
  writer.write_atomic(dir.file("w.safetensors"));
  CHECK(read_bytes(dir.file("w.safetensors")) == expected);
}

TEST_CASE("io: safetensors load of a missing file names the file and says it is missing", "[io]") {
  TempDir dir;
  const std::string path = dir.file("absent.safetensors");
  const std::string msg = runtime_error_of([&] { SafetensorsFile::load(path); });
  CHECK_THAT(msg, Contains(path + ": no such file"));
}

TEST_CASE("io: safetensors load refuses a file shorter than the 8-byte length field", "[io]") {
  TempDir dir;
  const std::string path = dir.file("short.safetensors");
  write_bytes(path, std::string("\x10\x00\x00\x00\x00", 5));
  const std::string msg = runtime_error_of([&] { SafetensorsFile::load(path); });
  CHECK_THAT(msg, Contains(path) && Contains("5 bytes long") && Contains("8-byte header length"));
}

TEST_CASE("io: safetensors load refuses a header length past the end of the file", "[io]") {
  TempDir dir;
  const std::string path = dir.file("len.safetensors");
  write_bytes(path, le_u64(1000) + "{}      ");
  const std::string msg = runtime_error_of([&] { SafetensorsFile::load(path); });
  CHECK_THAT(msg, Contains(path) && Contains("says 1000 bytes but only 8 bytes follow"));
}

TEST_CASE("io: safetensors load refuses a truncated file (data cut off)", "[io]") {
  TempDir dir;
  SafetensorsWriter writer;
  writer.add("w", Array<float>{1, 2, 3, 4});
  const std::string full = writer.serialize();
  const std::string path = dir.file("cut.safetensors");
  write_bytes(path, full.substr(0, full.size() - 3));
  const std::string msg = runtime_error_of([&] { SafetensorsFile::load(path); });
  CHECK_THAT(msg, Contains(path) && Contains("truncated: the header describes 16 bytes of tensor data but only 13 "
                                             "follow it (the file is " +
                                             std::to_string(full.size() - 3) + " bytes, " +
                                             std::to_string(full.size()) + " expected)"));
}

TEST_CASE("io: safetensors load reports a corrupt JSON header with the parser's message", "[io]") {
  TempDir dir;
  const std::string path = dir.file("json.safetensors");
  write_bytes(path, raw_file(R"({"w": {"dtype": "F32", "shape": [1],)", std::string(4, '\0')));
  const std::string msg = runtime_error_of([&] { SafetensorsFile::load(path); });
  CHECK_THAT(msg, Contains(path) && Contains("not valid JSON") && Contains("parse error"));

  write_bytes(path, raw_file("[1, 2]", ""));
  CHECK_THAT(runtime_error_of([&] { SafetensorsFile::load(path); }),
             Contains(path) && Contains("must be a JSON object"));
}

TEST_CASE("io: a corrupt JSON header gives a short message, not the text the parser read", "[io]") {
  TempDir dir;
  const std::string path = dir.file("long.safetensors");
  write_bytes(path, raw_file("{\"" + std::string(20000, 'x'), ""));  // an unterminated 20 kB string
  const std::string msg = runtime_error_of([&] { SafetensorsFile::load(path); });
  CHECK_THAT(msg, Contains(path) && Contains("not valid JSON") && Contains("last read: '...xxxx"));
  CHECK(msg.size() < 400 + path.size());
}

TEST_CASE("io: a number too large for a double in the header is refused like any bad JSON", "[io]") {
  // Found by fuzz_safetensors: nlohmann::json throws out_of_range (not parse_error) for such a number.
  TempDir dir;
  const std::string path = dir.file("huge_number.safetensors");
  write_bytes(path, raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,1e2060]}})", std::string(4, '\0')));
  CHECK_THAT(runtime_error_of([&] { SafetensorsFile::load(path); }),
             Contains(path) && Contains("not valid JSON") && Contains("number overflow parsing '1e2060'"));
}

TEST_CASE("io: safetensors load refuses an entry without dtype, shape or data_offsets", "[io]") {
  TempDir dir;
  const std::string path = dir.file("field.safetensors");
  write_bytes(path, raw_file(R"({"w":{"dtype":"F32","shape":[2]}})", std::string(8, '\0')));
  CHECK_THAT(runtime_error_of([&] { SafetensorsFile::load(path); }),
             Contains(path) && Contains("tensor 'w'") && Contains("no \"data_offsets\""));
  write_bytes(path, raw_file(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", std::string(8, '\0')));
  CHECK_THAT(runtime_error_of([&] { SafetensorsFile::load(path); }), Contains(path) && Contains("no \"shape\""));
  write_bytes(path, raw_file(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0')));
  CHECK_THAT(runtime_error_of([&] { SafetensorsFile::load(path); }), Contains(path) && Contains("no \"dtype\""));
  write_bytes(path, raw_file(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, '\0')));
  CHECK_THAT(runtime_error_of([&] { SafetensorsFile::load(path); }),
             Contains(path) && Contains("non-negative integers"));
}

TEST_CASE("io: safetensors load refuses an unknown dtype and lists the supported ones", "[io]") {
  TempDir dir;
  const std::string path = dir.file("f16.safetensors");
  write_bytes(path, raw_file(R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", std::string(4, '\0')));
  CHECK_THAT(runtime_error_of([&] { SafetensorsFile::load(path); }), Contains(path) && Contains("tensor 'w'") &&
                                                                         Contains("unknown dtype 'F16'") &&
                                                                         Contains("F32, F64, I32, I64"));
}

TEST_CASE("io: safetensors load refuses data_offsets past the end of the data section", "[io]") {
  TempDir dir;
  const std::string path = dir.file("past.safetensors");
  write_bytes(path, raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(8, '\0')));
  CHECK_THAT(runtime_error_of([&] { SafetensorsFile::load(path); }),
             Contains(path) && Contains("data_offsets [4, 12] go past the end of the data section (8 bytes)"));
}

TEST_CASE("io: safetensors load refuses data_offsets that do not match shape x dtype size", "[io]") {
  TempDir dir;
  const std::string path = dir.file("size.safetensors");
  write_bytes(path, raw_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')));
  CHECK_THAT(runtime_error_of([&] { SafetensorsFile::load(path); }),
             Contains(path) && Contains("hold 8 bytes but shape [3] of F32 needs 12"));
}

TEST_CASE("io: safetensors getters refuse the wrong dtype unless the conversion is asked for", "[io]") {
  TempDir dir;
  const std::string path = dir.file("dtype.safetensors");
  SafetensorsWriter writer;
  writer.add("d", Array<double>{0.1, -3.0});
  writer.add("w", Array<float>{1.5f});
  writer.add("ids", IndexArray{1, 2});
  writer.add("huge", Array<std::int64_t>{1, std::int64_t{1} << 33});
  writer.write_atomic(path);
  const SafetensorsFile f = SafetensorsFile::load(path);

  CHECK_THAT(runtime_error_of([&] { f.get_f32("d"); }),
             Contains(path) && Contains("tensor 'd' is F64 but F32 was requested") && Contains("allow_narrowing"));
  CHECK((f.get_f32("d", Conversion::allow_narrowing) == Array<float>{0.1f, -3.0f}));

  CHECK_THAT(runtime_error_of([&] { f.get_f32("ids"); }), Contains(path) && Contains("tensor 'ids' is I32"));
  CHECK_THAT(runtime_error_of([&] { f.get_f64("ids"); }), Contains(path) && Contains("tensor 'ids' is I32"));
  CHECK_THAT(runtime_error_of([&] { f.get_index("w"); }),
             Contains(path) && Contains("tensor 'w' is F32 but an integer array"));
  CHECK_THAT(runtime_error_of([&] { f.get_i64("d"); }), Contains(path) && Contains("tensor 'd' is F64"));

  // I64 -> int32 token ids only when every value fits.
  CHECK_THAT(runtime_error_of([&] { f.get_index("huge"); }),
             Contains(path) && Contains("8589934592 at flat position 1") && Contains("int32"));
  CHECK(f.get_i64("huge")(1) == (std::int64_t{1} << 33));

  CHECK_THAT(runtime_error_of([&] { f.get_f32("missing"); }),
             Contains(path) && Contains("no tensor named 'missing'") && Contains("d, w, ids, huge"));
}

TEST_CASE("io: safetensors writer refuses empty, reserved and duplicate names", "[io]") {
  SafetensorsWriter writer;
  writer.add("w", Array<float>{1});
  CHECK_THROWS_AS(writer.add("w", Array<double>{1}), std::invalid_argument);
  CHECK_THROWS_AS(writer.add("__metadata__", Array<float>{1}), std::invalid_argument);
  CHECK_THROWS_AS(writer.add("", Array<float>{1}), std::invalid_argument);
  CHECK(writer.size() == 1);
}

TEST_CASE("io: safetensors write_atomic into a missing directory throws naming the path and leaves nothing", "[io]") {
  TempDir dir;
  const std::string path = (dir.path() / "no_such_dir" / "model.safetensors").string();
  SafetensorsWriter writer;
  writer.add("w", Array<float>{1, 2});
  const std::string msg = runtime_error_of([&] { writer.write_atomic(path); });
  CHECK_THAT(msg, Contains(path) && Contains("No such file or directory"));
  CHECK(dir.entries().empty());
}

TEST_CASE("io: safetensors write_atomic replaces an existing file only when it succeeds", "[io]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  SafetensorsWriter v1;
  v1.add("w", Array<float>{1});
  v1.write_atomic(path);
  SafetensorsWriter v2;
  v2.add("w", Array<float>{2, 3});
  v2.write_atomic(path);  // success: replaced
  CHECK((SafetensorsFile::load(path).get_f32("w") == Array<float>{2, 3}));
  const std::string v2_bytes = read_bytes(path);

  // A write that stops before commit (an exception between writes, say) leaves the old file and no temp file.
  {
    AtomicFile partial(path);
    partial.write("garbage", 7);
    CHECK(std::filesystem::exists(partial.temp_path()));
  }
  CHECK(read_bytes(path) == v2_bytes);
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});

  // A target that is a directory is refused before anything is written (the one writer, io/atomic_file): the error
  // names it, the directory and its contents are untouched, and no temporary file is left.
  const std::string taken = dir.file("taken.safetensors");
  std::filesystem::create_directory(taken);
  write_bytes(taken + "/keep.txt", "keep");
  const std::string msg = runtime_error_of([&] { v1.write_atomic(taken); });
  CHECK_THAT(msg, Contains(taken) && Contains("is a directory"));
  CHECK(std::filesystem::is_directory(taken));
  CHECK(read_bytes(taken + "/keep.txt") == "keep");
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors", "taken.safetensors"});
  CHECK(read_bytes(path) == v2_bytes);
}
