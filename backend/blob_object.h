// Data embedded in a library as symbols: an ELF relocatable object holding each blob in a section
// of its own, written directly (what the assembler makes of .incbin, without writing the bytes to
// a file for it first and running it: a model's parameters are written once before the link).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::backend {

// Bytes given as pieces at their offsets, zeros between them: a model's parameters are written
// from where they lie, never gathered into one buffer first.
struct BlobBytes {
  uint64_t size = 0;
  std::vector<std::pair<uint64_t, std::string_view>> pieces;  // by offset, apart, inside `size`
  static BlobBytes Of(std::string_view bytes) { return {bytes.size(), {{0, bytes}}}; }
};

struct Blob {
  std::string symbol;
  BlobBytes bytes;  // the symbol's contents; the pieces' memory outlives the call
  // Writable and hidden (read only by the library's own code), else read-only and exported.
  bool hidden_writable = false;
};

// Writes `blobs` (each 64-byte aligned, a global object symbol of its size) to the object file
// `path`, for the machine of `model_object` (an object the compiler made, 64-bit little-endian
// ELF). Throws Error when the model is not such an object or the file cannot be written.
void WriteBlobObject(const std::string& path, const std::vector<Blob>& blobs, const std::string& model_object);

}  // namespace kiln::backend
