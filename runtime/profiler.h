// The profiling executor's measurements: per-node timings of one run (sorted table, Chrome trace
// JSON that opens in Perfetto or chrome://tracing) and TVM's run_individual.
#pragma once

#include <string>
#include <vector>

#include "runtime/graph_executor.h"

namespace kiln::runtime {

struct NodeTiming {
  uint32_t node = 0;
  std::string name;
  std::string function;
  double start_us = 0;  // since the start of the run
  double duration_us = 0;
  std::string shapes;  // "in0, in1 -> out0"
};

struct ProfileReport {
  std::vector<NodeTiming> nodes;  // in execution order
  double total_us = 0;

  // One row per node, slowest first: Node, Function, Time (us), Time (%), Shapes; then a total.
  std::string Table() const;
  // Chrome trace event JSON ("X" events, microseconds).
  std::string ChromeTrace() const;
};

// Runs the graph once, timing every step.
ProfileReport ProfileRun(GraphExecutor& executor);

// Per step, `repeat` measurements, each the mean microseconds of `number` runs of that step alone;
// a measurement is repeated with more runs until it lasts at least `min_repeat_ms`.
std::vector<std::vector<double>> RunIndividual(GraphExecutor& executor, int number, int repeat,
                                               int min_repeat_ms);

}  // namespace kiln::runtime
