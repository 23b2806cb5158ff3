// Fuzzes the graph JSON parser: any input either parses into a graph that survives a write and
// re-parse unchanged, or is rejected with kiln::runtime::Error. Anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/error.h"
#include "runtime/graph_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::runtime::Graph graph;
  try {
    graph = kiln::runtime::ParseGraphJson(text);
  } catch (const kiln::runtime::Error&) {
    return 0;
  }
  std::string written = kiln::runtime::WriteGraphJson(graph);
  kiln::runtime::Graph again = kiln::runtime::ParseGraphJson(written);  // must not throw
  if (kiln::runtime::WriteGraphJson(again) != written) __builtin_trap();
  return 0;
}
