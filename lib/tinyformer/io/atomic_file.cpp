#include "tinyformer/io/atomic_file.hpp"

#include "tinyformer/tensor/files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace tf::io {

namespace {

std::string directory_of(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw std::runtime_error("write: the output path is empty");
  temp_path_ = fmt::format("{}.tmp.{}", path_, static_cast<long>(::getpid()));
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    throw std::runtime_error(fmt::format("{}: cannot create the temporary file '{}': {}", path_, temp_path_,
                                         std::strerror(err)));
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
}

void AtomicFile::fail(const std::string& what, int err) {
  discard();
  throw std::runtime_error(fmt::format("{}: {}: {}", path_, what, std::strerror(err)));
}

void AtomicFile::write(const void* data, std::size_t size) {
  if (committed_ || fd_ < 0)
    throw std::logic_error(fmt::format("{}: write after commit or after a failed write", path_));
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(fmt::format("writing '{}' failed", temp_path_), errno);
    }
    if (n == 0) fail(fmt::format("writing '{}' made no progress", temp_path_), EIO);
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  if (committed_ || fd_ < 0) throw std::logic_error(fmt::format("{}: commit called twice or after a failure", path_));
  if (::fsync(fd_) != 0) fail(fmt::format("fsync of '{}' failed", temp_path_), errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(fmt::format("closing '{}' failed", temp_path_), errno);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    fail(fmt::format("cannot rename '{}' over it", temp_path_), errno);
  committed_ = true;
  temp_path_.clear();

  // Make the rename itself durable. The new file is already in place, so a failure here says so.
  const std::string dir = directory_of(path_);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    const int err = errno;
    throw std::runtime_error(fmt::format("{}: written, but the directory '{}' could not be opened to fsync it: {}",
                                         path_, dir, std::strerror(err)));
  }
  // EINVAL: the file system does not support fsync on directories; nothing more can be done there.
  if (::fsync(dfd) != 0 && errno != EINVAL) {
    const int err = errno;
    ::close(dfd);
    throw std::runtime_error(
        fmt::format("{}: written, but fsync of the directory '{}' failed: {}", path_, dir, std::strerror(err)));
  }
  ::close(dfd);
}

void write_file_atomic(const std::string& path, const void* data, std::size_t size) {
  AtomicFile file(path);
  file.write(data, size);
  file.commit();
}

std::vector<std::string> remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const std::string prefix = target.filename().string() + ".tmp.";
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(directory_of(path), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
      continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    const bool alive = pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM;
    std::error_code rm;
    if (!alive && fs::remove(it->path(), rm)) removed.push_back(it->path().string());
  }
  return removed;
}

InputFile::InputFile(std::string path) : path_(std::move(path)) {
  fd_ = open_regular_file(path_);
  struct stat st {};
  ::fstat(fd_, &st);
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read(void* data, std::size_t size, const char* what) {
  if (size > size_ - std::min(position_, size_))
    throw std::runtime_error(fmt::format("{}: truncated: {} needs {} bytes at offset {} but the file is {} bytes long",
                                         path_, what, size, position_, size_));
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::read(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      throw std::runtime_error(fmt::format("{}: reading {} failed: {}", path_, what, std::strerror(err)));
    }
    if (n == 0)
      throw std::runtime_error(fmt::format("{}: truncated: the file ended at offset {} while reading {}", path_,
                                           position_, what));
    p += n;
    size -= static_cast<std::size_t>(n);
    position_ += static_cast<std::uint64_t>(n);
  }
}

}  // namespace tf::io
