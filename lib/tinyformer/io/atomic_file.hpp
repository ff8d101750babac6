#pragma once
// Atomic file replacement, shared by every writer in io/: the bytes go to "<path>.tmp.<pid>" in the same
// directory (with the permissions of a file it replaces), the file is fsync'ed, renamed over `path`, and the
// directory is fsync'ed. A reader therefore
// sees either the old file or the complete new one, never a half-written file. On any failure the temporary
// file is removed, a previous file at `path` is left untouched, and std::runtime_error names the path and
// the OS error (strerror).
//
// The readers' counterpart, InputFile, opens a file and reads exact byte counts with errors that name the
// file and what was being read ("the header", "the data").
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tf::io {

class AtomicFile {
 public:
  // Creates the temporary file; throws if it cannot be created (e.g. the directory does not exist).
  explicit AtomicFile(std::string path);
  // Without commit() (an exception in between, for example) the temporary file is removed.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends `size` bytes (retries short writes and EINTR).
  void write(const void* data, std::size_t size);
  void write(const std::string& bytes) { write(bytes.data(), bytes.size()); }
  // fsync, close, rename over the target path, fsync the directory. At most once.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);  // removes the temp file, then throws
  void discard() noexcept;

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  int slot_ = -1;  // the temporary's place in remove_temporaries_in_progress's list
  bool committed_ = false;
};

// The whole file in one call.
void write_file_atomic(const std::string& path, const void* data, std::size_t size);

// Removes the "<path>.tmp.<pid>" files of writers that died before their rename (kill -9, a crash); files of
// processes still running are kept. Returns the names removed.
std::vector<std::string> remove_stale_temporaries(const std::string& path);
// The same for every "<name>.tmp.<pid>" file directly in `dir`.
std::vector<std::string> remove_stale_temporaries_in(const std::string& dir);

// Unlinks the temporary files of the AtomicFiles open in this process right now. Async-signal-safe: for a signal
// handler that ends the process with _exit (the targets keep their previous contents).
void remove_temporaries_in_progress() noexcept;

// A log that grows by lines (metrics.jsonl): opened through the same gate (a device, FIFO, directory or link at
// `path` is refused with FileError naming it, O_NOFOLLOW), created if missing, emptied first if `truncate`. Every
// write() goes to the file at once; a failed one throws FileError "<path>: writing failed: <why>".
class AppendFile {
 public:
  AppendFile() = default;
  AppendFile(std::string path, bool truncate);
  ~AppendFile();
  AppendFile(AppendFile&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) { other.fd_ = -1; }
  AppendFile& operator=(AppendFile&& other) noexcept {
    std::swap(path_, other.path_);
    std::swap(fd_, other.fd_);
    return *this;
  }
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  void write(const std::string& bytes);

 private:
  std::string path_;
  int fd_ = -1;
};

// A run dir's lock: an flock held on `path` (created if missing, through the gate) for the object's lifetime, with
// the holder's process id written in the file. A second process is refused with std::runtime_error naming the
// holder's PID. The file of a holder that died (the kernel dropped its flock) is taken over; note() says so. A file
// that names a process still running is never taken over, even when no flock is held on it (another host's run over
// a network file system, another program): refused naming that process.
class LockFile {
 public:
  LockFile() = default;
  explicit LockFile(std::string path);
  ~LockFile();
  LockFile(LockFile&& other) noexcept : path_(std::move(other.path_)), note_(std::move(other.note_)), fd_(other.fd_) {
    other.fd_ = -1;
  }
  LockFile& operator=(LockFile&& other) noexcept {
    std::swap(path_, other.path_);
    std::swap(note_, other.note_);
    std::swap(fd_, other.fd_);
    return *this;
  }
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

  const std::string& note() const { return note_; }

 private:
  std::string path_, note_;
  int fd_ = -1;
};

class InputFile {
 public:
  // Throws std::runtime_error "<path>: <why>" for what is not a readable regular file (tensor/files.hpp).
  explicit InputFile(std::string path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  std::uint64_t position() const { return position_; }
  // Reads exactly `size` bytes; throws "<path>: truncated: <what> needs N bytes at offset P but the file
  // is S bytes long", or the OS error.
  void read(void* data, std::size_t size, const char* what);

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t position_ = 0;
};

}  // namespace tf::io
