#pragma once
// The gate of every file tinyformer opens. Reading: only regular files are read, and what is not one is named as
// what it is; a FIFO is refused without blocking (opening it for reading would wait for a writer forever).
// Writing (io/atomic_file.hpp writes through here): a target that exists and is not a regular file (a directory,
// FIFO, device or socket) or that is a symbolic link is refused with its path, so that `--out /dev/null` never
// replaces a device and a link planted in a run dir never leads a write elsewhere. No other file in lib/ or apps/
// opens a file (tests/app/cli_file_gate.sh checks that with grep).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

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
// The whole file, or FileError "<path>: is <n> bytes; <what> is at most <limit> bytes" before reading it.
std::string read_regular_file(const std::string& path, std::uint64_t limit, const std::string& what);
// A file of the system (/proc/meminfo, /proc/cpuinfo): its text, or "" when it cannot be read.
std::string read_system_file(const std::string& path);

// What stands at `path` now, for a message: "" when nothing or a regular file is there, else "is a directory",
// "is a FIFO (named pipe), not a regular file", "is a device, not a regular file", "is a socket, not a regular
// file" or "is a symbolic link (tinyformer writes no file through a link)".
std::string output_target_problem(const std::string& path);
// Throws FileError "<path>: <problem>" when output_target_problem finds one, or when the directory the file would
// go in is missing, not a directory, or not writable. Called before a command writes anything (a plan of its
// outputs), and by every writer again when it opens the file.
void check_output_path(const std::string& path);
// For a directory a command will create (if missing) and write `files` into: throws FileError naming `dir` (and the
// first part of it that exists and is not a writable directory: a file, a dangling link, a read-only directory), or
// one of the files refused by check_output_path. Called before the command reads its inputs.
void check_output_dir(const std::string& dir, const std::vector<std::string>& files);

// Whether `text` nests [ ] and { } deeper than `max_depth` (strings skipped). Checked before parsing text that came
// from a file: a header of 100,000 '[' would otherwise be built, and destroyed, recursively (a stack overflow).
inline bool json_too_deep(const std::string& text, std::size_t max_depth = 64) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

// fds 0, 1 and 2 that are closed at start-up are opened on /dev/null, so that the first file opened does not take
// the number of stdout or stderr (progress lines would go into metrics.jsonl). Call first thing in main.
void reopen_closed_standard_streams() noexcept;

// The text of `e` inside another message: e.what(), except "out of memory" for std::bad_alloc, whose what() is the name
// of its C++ class.
std::string exception_text(const std::exception& e);

// One line a user sees: control bytes and bytes that are not UTF-8 shown as \xNN, an indented listing joined
// ("2 problems:\n  a\n  b" -> "2 problems: a; b"), the line cut to `max_line` bytes.
std::string printable_message(const std::string& text, std::size_t max_line = 1000);

}  // namespace tf
