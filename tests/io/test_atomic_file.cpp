// The writers' side of the file gate: what stands at a target and is not a regular file is refused and left as it
// was; a link planted where the temporary goes is not followed; a run dir's lock is held by one process at a time.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "support/temp_dir.hpp"
#include "tinyformer/io/atomic_file.hpp"
#include "tinyformer/tensor/files.hpp"

using namespace tf;
using namespace tf::io;

namespace {

std::string refusal(const std::string& path) {
  try {
    write_file_atomic(path, "new", 3);
  } catch (const FileError& e) {
    return e.what();
  }
  return "written";
}

}  // namespace

TEST_CASE("io: write_file_atomic refuses a directory, a FIFO and a link at the target and leaves each as it was",
          "[io]") {
  test::TempDir dir;
  const std::string base = dir.path().string();
  CHECK(refusal(base + "/new.txt") == "written");
  CHECK(read_regular_file(base + "/new.txt") == "new");
  const std::string sub = base + "/sub";
  std::filesystem::create_directory(sub);
  CHECK(refusal(sub) == sub + ": is a directory; choose another path");
  CHECK(std::filesystem::is_directory(sub));
  const std::string fifo = base + "/pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(refusal(fifo) == fifo + ": is a FIFO (named pipe), not a regular file; choose another path");
  CHECK(std::filesystem::is_fifo(fifo));
  const std::string outside = dir.write("outside.txt", "keep"), link = base + "/link.txt";
  REQUIRE(::symlink(outside.c_str(), link.c_str()) == 0);
  CHECK(refusal(link) == link + ": is a symbolic link (tinyformer writes no file through a link); choose another path");
  CHECK(read_regular_file(outside) == "keep");
  CHECK(std::filesystem::is_symlink(link));
}

TEST_CASE("io: a link planted where the temporary file goes is replaced, not written through", "[io]") {
  test::TempDir dir;
  const std::string outside = dir.write("outside.txt", "keep"), target = dir.path().string() + "/out.txt";
  const std::string temp = target + ".tmp." + std::to_string(::getpid());
  REQUIRE(::symlink(outside.c_str(), temp.c_str()) == 0);
  write_file_atomic(target, "new", 3);
  CHECK(read_regular_file(target) == "new");
  CHECK(read_regular_file(outside) == "keep");
  CHECK_FALSE(std::filesystem::exists(std::filesystem::symlink_status(temp)));
}

TEST_CASE("io: a file written over keeps its permissions, and a new one gets 0666 less the umask", "[io]") {
  test::TempDir dir;
  const std::string target = dir.path().string() + "/private.safetensors";
  const auto mode = [&] {
    struct stat st {};
    REQUIRE(::stat(target.c_str(), &st) == 0);
    return st.st_mode & 07777;
  };
  const mode_t mask = ::umask(022);
  write_file_atomic(target, "one", 3);
  CHECK(mode() == 0644);
  for (const mode_t given : {0600, 0640, 0444, 0755}) {
    REQUIRE(::chmod(target.c_str(), given) == 0);
    write_file_atomic(target, "two", 3);
    CHECK(mode() == given);
    CHECK(read_regular_file(target) == "two");
  }
  ::umask(mask);
}

TEST_CASE("io: AppendFile refuses a FIFO and a link, and appends to a regular file", "[io]") {
  test::TempDir dir;
  const std::string log = dir.path().string() + "/metrics.jsonl";
  {
    AppendFile f(log, true);
    f.write("a\n");
  }
  {
    AppendFile f(log, false);
    f.write("b\n");
  }
  CHECK(read_regular_file(log) == "a\nb\n");
  const std::string fifo = dir.path().string() + "/pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_AS(AppendFile(fifo, false), FileError);
  const std::string link = dir.path().string() + "/link";
  REQUIRE(::symlink(log.c_str(), link.c_str()) == 0);
  CHECK_THROWS_AS(AppendFile(link, false), FileError);
  CHECK(read_regular_file(log) == "a\nb\n");
}

TEST_CASE("io: a LockFile is held by one holder at a time, names its PID, and a dead holder's file is taken over",
          "[io]") {
  test::TempDir dir;
  const std::string path = dir.path().string() + "/tinyformer.lock";
  {
    LockFile first(path);
    CHECK(first.note().empty());
    CHECK(read_regular_file(path) == std::to_string(::getpid()) + "\n");
    try {
      LockFile second(path);  // flock locks belong to an open file: a second open conflicts, even in one process
      FAIL("a second LockFile was granted");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()).find("in use by another tinyformer run (process " + std::to_string(::getpid()) +
                                       ")") != std::string::npos);
    }
  }
  CHECK(read_regular_file(path).empty());       // a clean end leaves no holder
  dir.write("tinyformer.lock", "999999999\n");  // a holder that died: its flock went with it, its PID stayed
  LockFile again(path);
  CHECK(again.note().find("left by process 999999999 which is no longer running") != std::string::npos);
}
