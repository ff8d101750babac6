// Opening the files a user names: only regular files, and everything else named as what it is, a FIFO without
// waiting for a writer.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "support/temp_dir.hpp"
#include "tinyformer/tensor/files.hpp"

using namespace tf;

TEST_CASE("tensor: read_regular_file reads a file and names a missing one, a directory, a FIFO and a loop",
          "[tensor]") {
  test::TempDir dir;
  const std::string file = dir.write("a.txt", "hello\nworld");
  CHECK(read_regular_file(file) == "hello\nworld");
  auto why = [](const std::string& path) {
    try {
      read_regular_file(path);
    } catch (const FileError& e) {
      CHECK(std::string(e.what()) == (path.empty() ? std::string("\"\"") : path) + ": " + e.why());
      return e.why();
    }
    return std::string("read");
  };
  CHECK(why(dir.path().string() + "/none") == "no such file");
  CHECK(why(dir.path().string()) == "is a directory");
  const std::string fifo = dir.path().string() + "/pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(why(fifo) == "is a FIFO (named pipe), not a regular file");
  const std::string a = dir.path().string() + "/loop_a", b = dir.path().string() + "/loop_b";
  REQUIRE(::symlink(b.c_str(), a.c_str()) == 0);
  REQUIRE(::symlink(a.c_str(), b.c_str()) == 0);
  CHECK(why(a) == "a loop of symbolic links");
  CHECK(why(file + "/below") == "a part of the path is not a directory");
  CHECK(why("") == "the file name is empty");
}

TEST_CASE("tensor: check_output_path refuses a directory, a FIFO, a device and a link, and names a missing parent",
          "[tensor]") {
  test::TempDir dir;
  const std::string base = dir.path().string();
  auto why = [](const std::string& path) {
    try {
      check_output_path(path);
    } catch (const FileError& e) {
      return e.why();
    }
    return std::string("writable");
  };
  CHECK(why(base + "/new.txt") == "writable");
  CHECK(why(dir.write("old.txt", "x")) == "writable");
  CHECK(why(base) == "is a directory; choose another path");
  const std::string fifo = base + "/pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(why(fifo) == "is a FIFO (named pipe), not a regular file; choose another path");
  const std::string link = base + "/link";
  REQUIRE(::symlink("/dev/null", link.c_str()) == 0);
  CHECK(why(link) == "is a symbolic link (tinyformer writes no file through a link); choose another path");
  CHECK(why("/dev/null") == "is a device, not a regular file; choose another path");
  CHECK(why(base + "/none/new.txt") == "cannot be written: its directory '" + base + "/none': no such file");
  CHECK(why(base + "/old.txt/new.txt") == "cannot be written: '" + base + "/old.txt' is not a directory");
}

TEST_CASE("tensor: printable_message shows control bytes and bytes that are not UTF-8 as \\xNN, joins listings and "
          "cuts long lines",
          "[tensor]") {
  CHECK(printable_message("a\x1b[31mb\x07") == "a\\x1b[31mb\\x07");
  CHECK(printable_message("caf\xc3\xa9 caf\xe9") == "caf\xc3\xa9 caf\\xe9");
  CHECK(printable_message("error\n  listing") == "error; listing");
  CHECK(printable_message("2 problems:\n  a: x\n  b: y") == "2 problems: a: x; b: y");  // a listing is one line too
  CHECK(printable_message("a\nb") == "a\\x0ab");  // a newline in a name or a value: one line still
  CHECK(printable_message(std::string(2000, 'x'), 1000) == std::string(1000, 'x') + " [...]");
  // a lead byte without its continuation byte is not text; the last one, with its continuation, is "é"
  CHECK(printable_message("x" + std::string(10, '\xc3') + "\xa9", 100).find("\\xc3") != std::string::npos);
}

TEST_CASE("tensor: json_too_deep counts brackets and braces outside strings", "[tensor]") {
  CHECK_FALSE(json_too_deep(R"({"a": [1, {"b": "[[[[[[["}]})", 3));
  CHECK(json_too_deep(R"({"a": [1, {"b": [[]]}]})", 3));
  CHECK(json_too_deep(std::string(100000, '['), 64));
  CHECK_FALSE(json_too_deep(R"("\"[[[[")", 1));
}
