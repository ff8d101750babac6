#pragma once
// Process-wide memory settings for training loops.

namespace tf {

// Keeps freed blocks inside the process instead of returning them to the OS, so the buffers an op
// step frees are handed straight to the next step without page faults. Measured here: without it a
// training step spent half its time in the kernel faulting fresh pages in (glibc unmaps every block of
// 128 KiB or more on free and trims the heap top). Call once at program start; idempotent.
void keep_freed_memory_in_process();

}  // namespace tf
