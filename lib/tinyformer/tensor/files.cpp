#include "tinyformer/tensor/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace tf {

namespace {

std::string open_error(int err) {
  switch (err) {
    case ENOENT:
      return "no such file";
    case ELOOP:
      return "a loop of symbolic links";
    case EACCES:
      return "not readable (permission denied)";
    case ENOTDIR:
      return "a part of the path is not a directory";
    default:
      return std::strerror(err);
  }
}

std::string not_regular(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is a device, not a regular file";
}

}  // namespace

int open_regular_file(const std::string& path) {
  if (path.empty()) throw FileError("\"\"", "the file name is empty");
  // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer; it is refused just below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    throw FileError(path, err == EISDIR ? "is a directory" : open_error(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string why = S_ISREG(st.st_mode) ? std::string(std::strerror(errno)) : not_regular(st.st_mode);
    ::close(fd);
    throw FileError(path, why);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string read_regular_file(const std::string& path) {
  const int fd = open_regular_file(path);
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw FileError(path, fmt::format("read error: {}", std::strerror(err)));
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return bytes;
}

}  // namespace tf
