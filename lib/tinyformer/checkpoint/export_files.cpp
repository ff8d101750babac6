#include "tinyformer/checkpoint/export_files.hpp"

#include <filesystem>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/io/atomic_file.hpp"

namespace tf::checkpoint {

void write_export_files(const std::string& out_dir, const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  const bool made = !std::filesystem::exists(out_dir, ec);
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw std::runtime_error(fmt::format("--out {}: cannot create the directory: {}", out_dir, ec.message()));
  try {
    std::vector<std::unique_ptr<io::AtomicFile>> outs;  // AtomicFile does not move
    for (const auto& [name, bytes] : files) {
      outs.push_back(std::make_unique<io::AtomicFile>((std::filesystem::path(out_dir) / name).string()));
      outs.back()->write(bytes);
    }
    for (auto& out : outs) out->commit();
  } catch (...) {
    if (made) std::filesystem::remove_all(out_dir, ec);
    throw;
  }
}

}  // namespace tf::checkpoint
