#include "tinyformer/tensor/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
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

std::string read_regular_file(const std::string& path) { return read_regular_file(path, UINT64_MAX, ""); }

std::string read_regular_file(const std::string& path, std::uint64_t limit, const std::string& what) {
  const int fd = open_regular_file(path);
  struct stat st {};
  if (::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) > limit) {
    ::close(fd);
    throw FileError(
        path, fmt::format("is {} bytes; {} is at most {} bytes", static_cast<long long>(st.st_size), what, limit));
  }
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
    if (bytes.size() > limit) {  // the file grew while being read
      ::close(fd);
      throw FileError(path, fmt::format("grew past {} bytes while being read; {} is at most that", limit, what));
    }
  }
  ::close(fd);
  return bytes;
}

std::string read_system_file(const std::string& path) {
  try {
    return read_regular_file(path, std::uint64_t{1} << 24, "a system file");
  } catch (const FileError&) {
    return "";
  }
}

std::string output_target_problem(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  if (S_ISLNK(st.st_mode)) return "is a symbolic link (tinyformer writes no file through a link)";
  if (S_ISREG(st.st_mode)) return "";
  return not_regular(st.st_mode);
}

void check_output_path(const std::string& path) {
  if (path.empty()) throw FileError("\"\"", "the output file name is empty");
  const std::string problem = output_target_problem(path);
  if (!problem.empty()) throw FileError(path, problem + "; choose another path");
  const std::string::size_type slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    throw FileError(path, fmt::format("cannot be written: its directory '{}': {}", dir, open_error(err)));
  }
  if (!S_ISDIR(st.st_mode)) throw FileError(path, fmt::format("cannot be written: '{}' is not a directory", dir));
  if (::access(dir.c_str(), W_OK) != 0) {
    const int err = errno;
    throw FileError(path, fmt::format("cannot be written: its directory '{}' is not writable ({})", dir,
                                      err == EACCES ? "permission denied" : std::strerror(err)));
  }
}

void check_output_dir(const std::string& dir, const std::vector<std::string>& files) {
  if (dir.empty()) throw FileError("\"\"", "the output directory name is empty");
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      throw FileError(dir, (S_ISREG(st.st_mode) ? std::string("is a file") : not_regular(st.st_mode)) +
                               "; the output must be a directory");
    for (const std::string& name : files) {
      std::string path = dir;
      path += '/';
      path += name;
      check_output_path(path);
    }
    return;
  }
  // Missing: the nearest part of the path that exists must be a directory it can be created in.
  std::string part = dir;
  while (!part.empty() && part.back() == '/') part.pop_back();
  for (;;) {
    const std::string::size_type slash = part.find_last_of('/');
    part = slash == std::string::npos ? "." : slash == 0 ? "/" : part.substr(0, slash);
    if (::lstat(part.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode) && ::stat(part.c_str(), &st) != 0)
      throw FileError(dir, fmt::format("cannot be created: '{}' is a symbolic link to nothing", part));
    if (!S_ISDIR(st.st_mode)) throw FileError(dir, fmt::format("cannot be created: '{}' is not a directory", part));
    if (::access(part.c_str(), W_OK) != 0) {
      const int err = errno;
      throw FileError(dir, fmt::format("cannot be created: '{}' is not writable ({})", part,
                                       err == EACCES ? "permission denied" : std::strerror(err)));
    }
    return;
  }
}

void reopen_closed_standard_streams() noexcept {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int null_fd = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);  // the lowest free number: `fd`
    if (null_fd >= 0 && null_fd != fd) {
      ::dup2(null_fd, fd);
      ::close(null_fd);
    }
  }
}

std::string exception_text(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "out of memory";
  return e.what();
}

std::string printable_message(const std::string& text, std::size_t max_line) {
  std::string out, line;
  const auto end_line = [&] {
    if (line.size() > max_line) {
      std::size_t cut = max_line;
      while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
      line = line.substr(0, cut) + " [...]";
    }
    out += line;
    line.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    // The length of the UTF-8 character a lead byte starts (0: not a lead byte).
    const std::size_t n = byte < 0x80                    ? 1
                          : byte >= 0xC2 && byte <= 0xDF ? 2
                          : byte >= 0xE0 && byte <= 0xEF ? 3
                          : byte >= 0xF0 && byte <= 0xF4 ? 4
                                                         : 0;
    bool whole = n > 0 && i + n <= text.size();
    for (std::size_t k = 1; whole && k < n; ++k) whole = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (c == '\n' && text.compare(i + 1, 2, "  ") == 0) {  // an indented listing joins the line: "n problems: a; b"
      std::size_t next = i + 1;
      while (next < text.size() && text[next] == ' ') ++next;
      line += !line.empty() && line.back() == ':' ? " " : "; ";
      i = next - 1;
    } else if (byte < 0x20 || byte == 0x7f || !whole) {  // a control byte, or a byte that is not UTF-8 text
      line += fmt::format("\\x{:02x}", byte);
    } else {
      line.append(text, i, n);
      i += n - 1;
    }
  }
  end_line();
  return out;
}

}  // namespace tf
