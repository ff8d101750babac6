#include "tinyformer/tensor/huge_pages.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace tf {

namespace {
constexpr std::size_t kHuge = std::size_t{2} << 20;
std::size_t whole_pages(std::size_t bytes) { return (std::max<std::size_t>(bytes, 1) + kHuge - 1) / kHuge * kHuge; }
}  // namespace

#ifdef __linux__
HugePageBuffer::HugePageBuffer(std::size_t bytes) : mapped_(whole_pages(bytes) + kHuge), size_(whole_pages(bytes)) {
  void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  mapping_ = static_cast<std::byte*>(p);
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  data_ = mapping_ + (kHuge - address % kHuge) % kHuge;
  madvise(data_, size_, MADV_HUGEPAGE);  // a hint; the pages are zero and untouched until written
}

HugePageBuffer::~HugePageBuffer() { munmap(mapping_, mapped_); }
#else
HugePageBuffer::HugePageBuffer(std::size_t bytes) : mapped_(whole_pages(bytes)), size_(whole_pages(bytes)) {
  mapping_ = static_cast<std::byte*>(std::aligned_alloc(kHuge, mapped_));
  if (!mapping_) throw std::bad_alloc();
  data_ = mapping_;
  for (std::size_t i = 0; i < size_; ++i) data_[i] = std::byte{0};
}

HugePageBuffer::~HugePageBuffer() { std::free(mapping_); }
#endif

}  // namespace tf
