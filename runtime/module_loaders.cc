// The table of module types that can appear in a library's import blob, and their loaders.
// Add a line here for each new module type (external runtimes, const loader, ...).
#include "runtime/const_loader_module.h"
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

}  // namespace kiln::runtime
