#include "tinyformer/io/atomic_file.hpp"

#include "tinyformer/tensor/files.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace tf::io {

namespace {

std::string directory_of(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

// The temporary files being written now, for remove_temporaries_in_progress (a signal handler): fixed slots of
// NUL-terminated paths, claimed and released with atomics (no allocation, no lock).
constexpr std::size_t kSlots = 8, kSlotBytes = 4096;
std::atomic<bool> g_slot_used[kSlots];
char g_slot_path[kSlots][kSlotBytes];

int claim_slot(const std::string& path) {
  if (path.size() >= kSlotBytes) return -1;
  for (std::size_t i = 0; i < kSlots; ++i) {
    if (!g_slot_used[i].load() && !g_slot_used[i].exchange(true)) {
      std::memcpy(g_slot_path[i], path.c_str(), path.size() + 1);
      return static_cast<int>(i);
    }
  }
  return -1;  // more than kSlots files at once: that one is left to remove_stale_temporaries
}

void release_slot(int slot) {
  if (slot < 0) return;
  g_slot_path[slot][0] = '\0';
  g_slot_used[slot].store(false);
}

// "<name>.tmp.<pid>" of a process that is no longer running.
bool stale_temporary(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return false;
  const std::string pid_text = name.substr(prefix.size());
  if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
    return false;
  const auto pid = static_cast<pid_t>(std::stol(pid_text));
  const bool alive = pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM;
  return !alive;
}

}  // namespace

void remove_temporaries_in_progress() noexcept {
  for (std::size_t i = 0; i < kSlots; ++i)
    if (g_slot_used[i].load() && g_slot_path[i][0] != '\0') ::unlink(g_slot_path[i]);
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw std::runtime_error("write: the output path is empty");
  // The gate: a device, FIFO, directory, socket or link at the target is refused, not replaced or followed.
  if (const std::string problem = output_target_problem(path_); !problem.empty())
    throw FileError(path_, problem + "; choose another path");
  temp_path_ = fmt::format("{}.tmp.{}", path_, static_cast<long>(::getpid()));
  slot_ = claim_slot(temp_path_);
  // O_EXCL | O_NOFOLLOW: a name planted where the temporary goes (a link to a file elsewhere) is never written
  // through. One left by this same process id (an earlier run whose pid came round again) is removed first.
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  fd_ = ::open(temp_path_.c_str(), kFlags, 0666);
  if (fd_ < 0 && errno == EEXIST && ::unlink(temp_path_.c_str()) == 0) fd_ = ::open(temp_path_.c_str(), kFlags, 0666);
  if (fd_ < 0) {
    const int err = errno;
    release_slot(slot_);
    throw std::runtime_error(
        fmt::format("{}: cannot create the temporary file '{}': {}", path_, temp_path_, std::strerror(err)));
  }
  // The file it replaces keeps its permissions (a checkpoint the user made private with chmod 600 stays so), as a
  // file written in place would; a new file gets 0666 less the umask.
  struct stat old {};
  if (::stat(path_.c_str(), &old) == 0 && S_ISREG(old.st_mode) && ::fchmod(fd_, old.st_mode & 0777) != 0) {
    const int err = errno;
    discard();
    throw std::runtime_error(fmt::format("{}: cannot give the temporary file '{}' the permissions of the file it "
                                         "replaces: {}",
                                         path_, temp_path_, std::strerror(err)));
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
  release_slot(slot_);
  slot_ = -1;
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
  release_slot(slot_);
  slot_ = -1;

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
    std::error_code rm;
    if (stale_temporary(it->path().filename().string(), prefix) && fs::remove(it->path(), rm))
      removed.push_back(it->path().string());
  }
  return removed;
}

std::vector<std::string> remove_stale_temporaries_in(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto tmp = name.rfind(".tmp.");
    std::error_code rm;
    if (tmp != std::string::npos && tmp > 0 && stale_temporary(name, name.substr(0, tmp + 5)) &&
        fs::remove(it->path(), rm))
      removed.push_back(it->path().string());
  }
  return removed;
}

AppendFile::AppendFile(std::string path, bool truncate) : path_(std::move(path)) {
  if (const std::string problem = output_target_problem(path_); !problem.empty())
    throw FileError(path_, problem + "; choose another path");
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (truncate ? O_TRUNC : 0);
  fd_ = ::open(path_.c_str(), flags, 0666);
  if (fd_ < 0) {
    const int err = errno;
    throw FileError(path_, fmt::format("cannot be written: {}", std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {  // replaced between the check and the open
    ::close(fd_);
    fd_ = -1;
    throw FileError(path_, "is not a regular file; choose another path");
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::write(const std::string& bytes) {
  const char* p = bytes.data();
  std::size_t size = bytes.size();
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      throw FileError(path_, fmt::format("writing failed: {}", std::strerror(err)));
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

namespace {

// Whether process `pid` runs (a zombie, which has ended and waits for its parent to collect it, does not).
bool process_running(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  const std::string stat = read_system_file(fmt::format("/proc/{}/stat", pid));
  const std::size_t paren = stat.rfind(')');  // "pid (comm) S ...": the state follows the command's name
  return paren == std::string::npos || paren + 2 >= stat.size() || (stat[paren + 2] != 'Z' && stat[paren + 2] != 'X');
}

long pid_in(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return 0;
  const long pid = std::strtol(text, nullptr, 10);
  return pid > 0 ? pid : 0;
}

}  // namespace

LockFile::LockFile(std::string path) : path_(std::move(path)) {
  if (const std::string problem = output_target_problem(path_); !problem.empty())
    throw FileError(path_, problem + "; it is the run dir's lock file: remove it");
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666);
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw FileError(path_, fmt::format("cannot open the run dir's lock file: {}", std::strerror(err)));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const long holder = pid_in(fd_);
    ::close(fd_);
    fd_ = -1;
    const std::string dir = directory_of(path_);
    if (err == EWOULDBLOCK)
      throw std::runtime_error(fmt::format(
          "{} is in use by another tinyformer run{} (it holds {}); wait for it to end or choose another --out", dir,
          holder > 0 ? fmt::format(" (process {})", holder) : std::string(), path_));
    throw FileError(path_, fmt::format("cannot lock the run dir: {}", std::strerror(err)));
  }
  const long before = pid_in(fd_);
  if (before > 0 && before != static_cast<long>(::getpid()) && process_running(before)) {
    // The flock was free, but the process named in the file is running: a run that does not hold the lock the way
    // this one does (another host over a network file system, another program). It is never taken over.
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(fmt::format("{} is in use by process {}, which is running and named in {} (it holds no "
                                         "lock on it); wait for it to end or choose another --out (remove the file if "
                                         "process {} is not a tinyformer run)",
                                         directory_of(path_), before, path_, before));
  }
  if (before > 0 && before != static_cast<long>(::getpid()))
    note_ = fmt::format("took over the lock of {}, left by process {} which is no longer running", directory_of(path_),
                        before);
  const std::string pid = fmt::format("{}\n", static_cast<long>(::getpid()));
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw FileError(path_, fmt::format("cannot write the run dir's lock file: {}", std::strerror(err)));
  }
}

LockFile::~LockFile() {
  if (fd_ < 0) return;
  [[maybe_unused]] const int r = ::ftruncate(fd_, 0);  // a clean end leaves no holder behind
  ::close(fd_);
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
      throw std::runtime_error(
          fmt::format("{}: truncated: the file ended at offset {} while reading {}", path_, position_, what));
    p += n;
    size -= static_cast<std::size_t>(n);
    position_ += static_cast<std::uint64_t>(n);
  }
}

}  // namespace tf::io
