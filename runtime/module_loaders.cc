// The table of module types that can appear in a library's import blob, and their loaders.
// Add a line here for each new module type (external runtimes, const loader, ...). Runtimes that
// live in libraries of their own (libkiln_dnnl) are listed with their file.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "runtime/const_loader_module.h"
#include "runtime/error.h"
#include "runtime/graph_executor_factory.h"
#include "runtime/module.h"

namespace kiln::runtime {

BinaryLoader FindBinaryLoader(const std::string& type_key) {
  struct Entry { const char* type_key; BinaryLoader loader; };
  static constexpr Entry kLoaders[] = {
      {"GraphExecutorFactory", &LoadGraphExecutorFactory},
      {"GraphRuntimeFactory", &LoadGraphExecutorFactory},  // name before TVM v0.8
      {"const_loader", &LoadConstLoaderModule},
      {"metadata", &LoadConstLoaderModule},  // its name before TVM v0.9
  };
  for (const Entry& entry : kLoaders) {
    if (type_key == entry.type_key) return entry.loader;
  }
  return nullptr;
}

bool LoadRuntimeLibraryFor(const std::string& type_key, std::string* why) {
  struct Entry { const char* type_key; const char* file; const char* what; };
  static constexpr Entry kLibraries[] = {
      {"dnnl_json", "libkiln_dnnl.so", "oneDNN (kiln built with KILN_USE_DNNL=ON)"},
  };
  for (const Entry& entry : kLibraries) {
    if (type_key != entry.type_key) continue;
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    // OpenMP (libgomp, under oneDNN) reads this when it loads: its workers spin about 10 us for the
    // next primitive, then sleep and leave kiln's cores alone. Sleeping at once (PASSIVE) costs a
    // wake-up per primitive: mobilenet_v2 in oneDNN ran 7.5 ms instead of 4.9.
    if (getenv("OMP_WAIT_POLICY") == nullptr) setenv("GOMP_SPINCOUNT", "10000", /*overwrite=*/0);
    std::string directory;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&LoadRuntimeLibraryFor), &info) != 0 && info.dli_fname != nullptr) {
      directory = info.dli_fname;
      directory = directory.substr(0, directory.find_last_of('/') + 1);
    }
    std::string errors;
    for (const std::string& candidate : {directory + entry.file, std::string(entry.file)}) {
      if (dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr) return true;  // stays loaded
      const char* error = dlerror();
      errors += StrCat("\n  ", candidate, ": ", error != nullptr ? error : "not loadable");
    }
    *why = StrCat("its '", type_key, "' module runs on ", entry.what, ", whose runtime library ", entry.file,
                  " could not be loaded:", errors);
    return false;
  }
  return false;
}

}  // namespace kiln::runtime
