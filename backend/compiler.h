// Driving the system C++ compiler: generated sources and the kernel library are compiled to
// objects in parallel on all cores, cached by a hash of their content, flags and compiler (so
// unchanged kernels are not compiled again), then linked into a shared library. Each compile and
// link works in a private directory; cached objects carry a checksum and are compiled again when
// it does not match, so concurrent, killed or damaged compiles never lead to a bad link.
#pragma once

#include <string>
#include <vector>

#include "backend/blob_object.h"
#include "target/target.h"

namespace kiln::backend {

struct CompilerOptions {
  std::string cxx;                  // empty: $CXX, else "c++"
  std::string march = "native";     // -march=<march> (Build sets it from BuildOptions::target)
  std::string mcpu;                 // -mcpu=<mcpu> (targets that use it); empty: none
  std::vector<std::string> flags;   // extra flags
  std::string cache_dir;            // empty: $KILN_CACHE_DIR, else ~/.cache/kiln/objects
  // The tree holding kernels/ and include/kiln/ that generated code is compiled against (an
  // installed Python package ships a copy); empty: the source tree kiln was built from.
  std::string source_dir;
  int jobs = 0;                     // 0: one per hardware thread
};

struct SourceFile {
  std::string name;  // for messages, e.g. "tvmgen_default_fused_add.cc"
  std::string text;
  std::vector<std::string> defines;  // compiled with -D<each>
};

struct CompileReport {
  int compiled = 0;  // objects built now
  int cached = 0;    // objects found in the cache
};

// Object files for `code` (in order), each source compiled after `prelude` (the text they all
// begin with, precompiled once), plus the kernel sources they need (kernel_sources.h). Throws
// Error with the compiler's message when a source does not compile.
std::vector<std::string> CompileObjects(const std::vector<SourceFile>& code, const std::string& prelude,
                                        const CompilerOptions& options, CompileReport* report = nullptr);

// Links objects, an import blob (embedded as `__tvm_dev_mblob`; empty: none) and the image of
// linked parameters (as `__kiln_linked_params`, kernels/linked_params.h; empty: none) into `output`.
void LinkSharedLibrary(const std::vector<std::string>& objects, const std::string& import_blob,
                       const BlobBytes& linked_params, const std::string& output, const CompilerOptions& options);

// The -march value for a target string: "native", "cpu" or "llvm" (the host), "cpu -mcpu=NAME"
// or "llvm -mcpu=NAME" (NAME), or an -march name ("x86-64-v3"). Throws Error for anything else.
std::string MarchForTarget(const std::string& target);

// The vector instruction set the compiler generates code for with -march=<march>, read from its
// predefined macros (__AVX512F__; __AVX2__ with __FMA__). Throws Error with the compiler's
// message when it does not know the name. Asked once per compiler and name in a process.
target::Isa CompilerIsa(const std::string& march, const CompilerOptions& options = {});

// The tree generated code is compiled against when CompilerOptions::source_dir is empty: the copy
// an installation carries beside its binaries, else the source tree kiln was built from.
std::string KernelSourceDir();
// The C++ compiler CompileObjects would run with default options: its path, or why there is none.
std::string CompilerDescription();

// Creates an empty file <directory>/<prefix>XXXXXX<suffix> that no other call or process gets
// (mkstemps) and returns its path.
std::string MakeTempFile(const std::string& directory, const std::string& prefix, const std::string& suffix);

// A stable 64-bit hash (XXH3-64) as 16 hex digits: cache keys and the check of cached objects.
std::string ContentHash(const std::string& data);

}  // namespace kiln::backend
