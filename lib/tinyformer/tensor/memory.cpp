#include "tinyformer/tensor/memory.hpp"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "tinyformer/tensor/files.hpp"

namespace tf {

namespace {

double read_number_file(const char* path) {
  std::istringstream in(read_system_file(path));
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  return std::strtod(text.c_str(), nullptr);
}

}  // namespace

double available_memory() {
  double available = 0;
  std::istringstream meminfo(read_system_file("/proc/meminfo"));
  std::string line;
  while (std::getline(meminfo, line))
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      double kib = 0;
      if (fields >> kib) available = kib * 1024;
    }
  const double limit = read_number_file("/sys/fs/cgroup/memory.max");
  if (limit > 0) {
    const double left = std::max(0.0, limit - read_number_file("/sys/fs/cgroup/memory.current"));
    available = available > 0 ? std::min(available, left) : left;
  }
  return available;
}

std::string address_space_note() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return "";
  return fmt::format("; this process may map at most {} (ulimit -v)",
                     format_bytes(static_cast<double>(limit.rlim_cur)));
}

std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) bytes /= 1024, ++u;
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  if (bytes >= 1e6) return fmt::format("{:.2g} {}", bytes, units[u]);
  return fmt::format(bytes < 10 ? "{:.1f} {}" : "{:.0f} {}", bytes, units[u]);
}

void keep_freed_memory_in_process() {
  // Blocks up to 1 GiB come from the heap (not mmap), and the heap is never trimmed below 4 GiB free.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 0x7fffffff);
  mallopt(M_ARENA_MAX, 2);  // at most one arena per core: a worker thread's frees stay reusable
}

}  // namespace tf
