// The kernel library's files as kernels/sources.txt lists them, and which of its sources (and
// which instances of its kernel templates) the code of one model library needs: a library
// compiles only those, so that its first build takes the time of the kernels it calls.
#pragma once

#include <string>
#include <vector>

#include "backend/compiler.h"

namespace kiln::backend {

struct KernelList {
  struct Source {
    std::string path;                    // from the source root
    std::vector<std::string> kernels;    // the kernels it defines; none: every library needs it
    std::vector<std::string> templates;  // kernel templates it defines, one object per instance
  };
  std::vector<Source> sources;
  std::vector<std::string> headers;  // part of every object's cache key
};

// Reads <root>/kernels/sources.txt. Throws Error when it cannot be read or lists no source.
KernelList ReadKernelList(const std::string& root);

// The kernel sources that `code` needs, read from `root`: the sources listed without kernels, and
// each source one of whose kernels `code` or a kernel source it needs calls (by name, followed by
// "("); for a template, the source once per instance named (Conv2DNCHWc<16, 0, 16, 1, 16>), compiled
// with -DKILN_INSTANTIATE=<its arguments> and -DKILN_INSTANTIATE_<the template's name> (a source
// may define several templates).
std::vector<SourceFile> KernelSourcesFor(const std::vector<SourceFile>& code, const KernelList& list,
                                         const std::string& root);

}  // namespace kiln::backend
