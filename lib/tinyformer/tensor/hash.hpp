#pragma once
// FNV-1a 64, the one hash of the project: a SentencePiece model's checksum in a checkpoint's vocabulary
// (docs/formats.md), the fingerprint of a data file, and the values the processes of a run compare.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tf {

// 64-bit FNV-1a of a byte range. `h` continues an earlier hash: fnv1a(b, nb, fnv1a(a, na)) hashes a then b.
std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t h = 0xcbf29ce484222325ULL);
// A hash as its 16 lowercase hex digits, the form checksums and fingerprints are stored and compared in.
std::string hex64(std::uint64_t h);

}  // namespace tf
