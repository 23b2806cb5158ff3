// Opening a compiled artifact for the command line: an exported library (.so with the graph and
// params inside) or a tvmc-format directory (mod.so + mod.json + mod.params).
#pragma once

#include <memory>
#include <string>

#include "runtime/graph_executor.h"
#include "runtime/module.h"

namespace kiln::tools {

struct Artifact {
  runtime::Module lib;
  std::string graph_json;
  std::string params;  // params blob (the three-file form), or empty
  std::shared_ptr<runtime::GraphExecutor> executor;
  bool debug = false;
};

// Throws Error naming the path when it is neither form.
Artifact OpenArtifact(const std::string& path, bool debug = false);

}  // namespace kiln::tools
