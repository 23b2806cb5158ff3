// Data embedded in a library as symbols: an ELF relocatable object holding each blob in a section
// of its own, written directly (what the assembler makes of .incbin, without writing the bytes to
// a file for it first and running it: a model's parameters are written once before the link).
#pragma once

#include <string>
#include <vector>

namespace kiln::backend {

struct Blob {
  std::string symbol;
  const std::string* bytes;  // the symbol's contents; outlives the call
  // Writable and hidden (read only by the library's own code), else read-only and exported.
  bool hidden_writable = false;
};

// Writes `blobs` (each 64-byte aligned, a global object symbol of its size) to the object file
// `path`, for the machine of `model_object` (an object the compiler made, 64-bit little-endian
// ELF). Throws Error when the model is not such an object or the file cannot be written.
void WriteBlobObject(const std::string& path, const std::vector<Blob>& blobs, const std::string& model_object);

}  // namespace kiln::backend
