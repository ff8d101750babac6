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
