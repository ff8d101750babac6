#pragma once
// The process's memory: how freed blocks are kept, what the machine has available, and sizes in words.
#include <string>

namespace tf {

// Keeps freed blocks inside the process instead of returning them to the OS, so the buffers an op
// step frees are handed straight to the next step without page faults. Measured here: without it a
// training step spent half its time in the kernel faulting fresh pages in (glibc unmaps every block of
// 128 KiB or more on free and trims the heap top). Call once at program start; idempotent.
void keep_freed_memory_in_process();

// The bytes this machine can give a new process: /proc/meminfo's MemAvailable, at most what a cgroup v2 memory
// limit leaves (memory.max - memory.current); 0 when neither can be read (a check against it is then skipped).
double available_memory();

// For a std::bad_alloc message: "; this process may map at most 1.4 GiB (ulimit -v)" when an address-space limit is
// set, "" otherwise.
std::string address_space_note();

// 812 GiB, 45 MiB, 1.5 KiB, 512 B.
std::string format_bytes(double bytes);

}  // namespace tf
