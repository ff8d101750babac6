#pragma once
// The process's memory: how freed blocks are kept, what the machine has available, and sizes in words.
#include <cstddef>
#include <string>

namespace tf {

// Keeps freed blocks inside the process instead of returning them to the OS, so the buffers an op
// step frees are handed straight to the next step without page faults. Measured here: without it a
// training step spent half its time in the kernel faulting fresh pages in (glibc unmaps every block of
// 128 KiB or more on free and trims the heap top). Call once at program start; idempotent.
void keep_freed_memory_in_process();

// Array memory (tensor.hpp's ArrayAllocator): `bytes` on a kArrayAlignment (64-byte) boundary (std::bad_alloc when
// there is none), and its release with the same byte count. Freed blocks of up to kCachedBlockBytes are kept by the
// thread that frees them, at most kCachedBytes a thread, and handed out again for the same size: a training step
// allocates the same shapes every step, and glibc's aligned allocation (posix_memalign never takes its per-thread
// cache) was half of the per-step floor. Not under AddressSanitizer, which should see every block freed and reused.
inline constexpr std::size_t kCachedBlockBytes = std::size_t{64} << 10;
inline constexpr std::size_t kCachedBytes = std::size_t{16} << 20;
void* allocate_array_memory(std::size_t bytes);
void free_array_memory(void* p, std::size_t bytes) noexcept;
// Whether freed blocks are kept (false in a build with AddressSanitizer), and the bytes the calling thread keeps now.
bool array_blocks_cached() noexcept;
std::size_t cached_array_bytes() noexcept;

// The bytes this machine can give a new process: /proc/meminfo's MemAvailable, at most what a cgroup v2 memory
// limit leaves (memory.max - memory.current); 0 when neither can be read (a check against it is then skipped).
double available_memory();

// For a std::bad_alloc message: "; this process may map at most 1.4 GiB (ulimit -v)" when an address-space limit is
// set, "" otherwise.
std::string address_space_note();

// 812 GiB, 45 MiB, 1.5 KiB, 512 B.
std::string format_bytes(double bytes);

}  // namespace tf
