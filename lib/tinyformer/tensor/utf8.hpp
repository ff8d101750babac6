#pragma once
// UTF-8 text checks shared by the config loader and the text data source (both read user files).
#include <cstddef>
#include <string>
#include <vector>

namespace tf {

// Splits UTF-8 `bytes` into characters (one string of 1-4 bytes per code point). Strict: overlong forms,
// surrogates, code points above U+10FFFF, stray continuation bytes and truncated sequences are invalid.
// Returns std::string::npos on success, else the byte offset where the first invalid sequence starts
// (`chars` then holds the characters before it).
std::size_t utf8_split(const std::string& bytes, std::vector<std::string>& chars);

// "line 3, column 7 (byte offset 41, byte 0xc3)": where byte `offset` of `bytes` is, for an error message
// (lines and columns from 1, columns counted in bytes).
std::string byte_position_str(const std::string& bytes, std::size_t offset);

}  // namespace tf
