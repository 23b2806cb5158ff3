// Checks of a shared library file before the dynamic loader maps it. Loading a library runs it, so
// a library is trusted code; but a damaged one (cut short in a copy, bytes changed on disk, built
// for another machine, not a library at all) must give an error naming the file and the problem,
// not a Bus error inside dlopen.
//
// Every ELF file gets structural checks: its headers, the program and section headers, the
// dynamic section and the tables it names, relocation targets, and the extent of the import blob
// symbol (`__tvm_dev_mblob`) all lie inside the file and inside what gets mapped. Libraries kiln
// exports also end in a checksum trailer covering every byte before it, so damage anywhere in
// them is caught; libraries built by Apache TVM (no trailer) get the structural checks only.
#pragma once

#include <string>
#include <vector>

namespace kiln::runtime {

// The trailer after a kiln library's ELF contents: the magic, the number of bytes it covers (all
// bytes before the trailer) and their XXH3-64 hash, each 8 bytes (integers little-endian). The
// dynamic loader reads only what the headers point at, so the trailer is invisible to it.
constexpr char kLibraryChecksumMagic[9] = "KILNSUM1";
constexpr size_t kLibraryChecksumTrailerSize = 24;

// Before the checksum trailer, a kiln library records the instruction-set extensions its code may
// use: their names, comma-separated, then that text's length (8 bytes, little-endian) and this
// magic. Loading it on a CPU without one of them is an error naming them, not an illegal
// instruction in the middle of a run. (Libraries without the record load as before.)
constexpr char kLibraryIsaMagic[9] = "KILNISA1";

// The extensions a library can record (x86-64; none elsewhere): each one's name, as GCC's
// __builtin_cpu_supports spells it, and the macro the compiler defines when it may use it.
struct CpuFeature {
  const char* name;
  const char* macro;
};
const std::vector<CpuFeature>& RecordableCpuFeatures();

// Appends the record of `features` (names of RecordableCpuFeatures) to the library at `path`
// (just linked, before AppendLibraryChecksum).
void AppendLibraryIsa(const std::string& path, const std::vector<std::string>& features);

// Appends the checksum trailer to the library at `path` (just linked, not yet loaded).
void AppendLibraryChecksum(const std::string& path);

// Throws Error ("cannot load library '<path>': ...") when `path` is not an ELF shared library for
// this machine, is cut short or is damaged, or records instructions this CPU does not have.
void CheckLibraryFile(const std::string& path);

}  // namespace kiln::runtime
