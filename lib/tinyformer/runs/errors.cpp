#include "tinyformer/runs/errors.hpp"

#include <cerrno>
#include <filesystem>
#include <new>
#include <regex>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tinyformer/tensor/tensor.hpp"

namespace tf::runs {

namespace {

ErrorKind kind_of_errno(int err) {
  switch (err) {
    case ENOENT:
      return ErrorKind::not_found;
    case EISDIR:
      return ErrorKind::is_directory;
    case EACCES:
    case EPERM:
      return ErrorKind::permission;
    default:
      return ErrorKind::file;
  }
}

ErrorKind kind_of_file_error(const FileError& e) {
  const std::string& why = e.why();  // "no such file", or "cannot read the config file: no such file"
  const auto says = [&](const char* what) {
    const std::size_t at = why.find(what);
    return at == 0 || (at != std::string::npos && why.compare(at - 2, 2, ": ") == 0);
  };
  if (says("no such file")) return ErrorKind::not_found;
  if (says("is a directory")) return ErrorKind::is_directory;
  if (says("not readable")) return ErrorKind::permission;
  return ErrorKind::file;
}

// The kind and the raw text of `e`, before the text is cleaned.
std::pair<ErrorKind, std::string> classify(const std::exception& e) {
  if (const auto* own = dynamic_cast<const Error*>(&e)) return {own->kind(), e.what()};
  if (const auto* fs_error = dynamic_cast<const std::filesystem::filesystem_error*>(&e)) {
    std::string text = fs_error->code().message();
    if (!fs_error->path1().empty()) text = fmt::format("{}: {}", fs_error->path1().string(), text);
    return {kind_of_errno(fs_error->code().value()), text};
  }
  if (dynamic_cast<const std::bad_alloc*>(&e))
    return {ErrorKind::memory, "out of memory (the sizes asked for need more memory than the machine has; use "
                               "smaller sizes)"};
  if (dynamic_cast<const nlohmann::json::exception*>(&e))
    return {ErrorKind::value, std::string("a JSON value is not what tinyformer expects: ") + e.what()};
  if (const auto* file_error = dynamic_cast<const FileError*>(&e)) return {kind_of_file_error(*file_error), e.what()};
  if (const auto* system_error = dynamic_cast<const std::system_error*>(&e)) {
    std::string text = e.what();
    // fmt::print's error when stdout cannot be written (the other prints go to stderr, which is the error's line)
    if (text.rfind("cannot write to file: ", 0) == 0) text = "cannot write to stdout: " + text.substr(22);
    return {kind_of_errno(system_error->code().value()), text};
  }
  if (dynamic_cast<const std::out_of_range*>(&e) || dynamic_cast<const IndexError*>(&e))  // x[5] of 3 rows
    return {ErrorKind::index, e.what()};
  if (dynamic_cast<const std::invalid_argument*>(&e) || dynamic_cast<const std::domain_error*>(&e) ||
      dynamic_cast<const std::length_error*>(&e))
    return {ErrorKind::value, e.what()};
  return {ErrorKind::other, e.what()};
}

// The internals a message may carry from a lower layer or a library, removed. Each pattern runs only where its
// marker is in the text, and on at most a few KB (the line is cut to 1 KB anyway): std::regex backtracks.
std::string without_internals(std::string text) {
  if (text.size() > 4 * kMaxMessage) text.resize(4 * kMaxMessage);
  if (text.find("[json.exception.") != std::string::npos) {  // also when wrapped
    static const std::regex json_prefix(R"(\[json\.exception\.[a-z_]+\.[0-9]+\] )");
    text = std::regex_replace(text, json_prefix, "");
  }
  if (text.find("::") != std::string::npos) {
    static const std::regex internal_prefix(R"(\b[A-Z][A-Za-z_]*(<[a-z]+>)?::[a-z_]+: )");
    text = std::regex_replace(text, internal_prefix, "");
  }
  // A third-party source location and its failed condition: SentencePiece's "trainer_interface.cc(428)
  // [!sentences_.empty()] ", and the status code word before it ("Internal: ").
  if (text.find(".cc(") != std::string::npos || text.find(".cpp(") != std::string::npos ||
      text.find(".h(") != std::string::npos) {
    static const std::regex source_location(
        R"(((Internal|Invalid argument|Not found|Unknown|Out of range|Failed precondition): )?[A-Za-z_0-9./-]{1,200}\.(cc|cpp|h)\([0-9]+\) ?(\[[^\]]{0,200}\] ?)?)");
    text = std::regex_replace(text, source_location, "");
  }
  return text;
}

}  // namespace

std::pair<ErrorKind, std::string> user_error(const std::exception& e) {
  auto [kind, text] = classify(e);
  text = without_internals(std::move(text));
  if (text.empty()) text = "an error without a message (a bug: please report the command that gave it)";
  return {kind, printable_message(text, kMaxMessage)};
}

std::string user_message(const std::exception& e) { return user_error(e).second; }

void rethrow_for_user(const std::exception& e) {
  auto [kind, message] = user_error(e);
  if (dynamic_cast<const dist::CollectiveError*>(&e)) throw dist::CollectiveError(message);
  throw Error(kind, message);
}

std::string unknown_error_message() {
  return "an error that is not one of tinyformer's (a bug: please report the command that gave it)";
}

}  // namespace tf::runs
