#pragma once
// Opening the files a user names (configs, text and tokens data, checkpoints): only regular files are read, and
// what is not one is named as what it is. A FIFO is refused without blocking (opening it for reading would wait
// for a writer forever).
#include <stdexcept>
#include <string>

namespace tf {

// what() is "<path>: <why>"; why() alone, for callers that word the message their own way.
class FileError : public std::runtime_error {
 public:
  FileError(const std::string& path, const std::string& why) : std::runtime_error(path + ": " + why), why_(why) {}
  const std::string& why() const { return why_; }

 private:
  std::string why_;
};

// A read-only file descriptor of `path`. Throws FileError "<path>: <why>", why being one of: "no such
// file", "a loop of symbolic links", "not readable (permission denied)", "is a directory", "is a FIFO (named pipe),
// not a regular file", "is a socket, not a regular file", "is a device, not a regular file", or the system's error.
int open_regular_file(const std::string& path);
// The whole file (the errors of open_regular_file, or "<path>: read error: ...").
std::string read_regular_file(const std::string& path);

}  // namespace tf
