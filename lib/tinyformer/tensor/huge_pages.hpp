#pragma once
// A buffer of bytes that a loop streams through again and again (a decoder's packed weights, a bandwidth test):
// mapped fresh from the OS (not from the heap, whose pages may have been touched already, tensor/memory.cpp keeps
// freed memory), 2 MB aligned and, on Linux, advised to be backed by transparent huge pages before any page is
// touched. With 4 KB pages a pass over 100 MB takes a TLB miss every 4 KB. Where the kernel gives no huge pages (THP
// off, memory fragmented) it is an ordinary buffer.
#include <cstddef>

namespace tf {

class HugePageBuffer {
 public:
  explicit HugePageBuffer(std::size_t bytes);  // zero-filled; std::bad_alloc when the OS refuses
  ~HugePageBuffer();
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }  // at least the bytes asked for: whole 2 MB pages

 private:
  std::byte* mapping_ = nullptr;  // what mmap returned
  std::size_t mapped_ = 0;
  std::byte* data_ = nullptr;  // the first 2 MB boundary in it
  std::size_t size_ = 0;
};

}  // namespace tf
