// The profiling executor's measurements: per-node timings of one run (sorted table, Chrome trace
// JSON that opens in Perfetto or chrome://tracing), TVM's run_individual, and whole-run benchmarks.
#pragma once

#include <string>
#include <vector>

#include "runtime/graph_executor.h"

namespace kiln::runtime {

struct NodeTiming {
  uint32_t node = 0;
  std::string name;
  std::string function;
  std::string implementation;  // the node's kiln_implementation attribute; empty when it has none
  double start_us = 0;  // since the start of the run
  double duration_us = 0;
  std::string shapes;  // "in0, in1 -> out0"
};

struct ProfileReport {
  std::vector<NodeTiming> nodes;  // in execution order
  double total_us = 0;

  // One row per node, slowest first: Node, Function, Implementation, Time (us), Time (%), Shapes;
  // then a total.
  std::string Table() const;
  // Chrome trace event JSON ("X" events, microseconds).
  std::string ChromeTrace() const;
};

// Runs the graph `runs` times (at least 1), timing every step; a node's duration is its median over
// the runs (a noisy machine's preemptions stay out of it) and its start the sum of the durations
// before it, so the nodes tile a run of their medians.
ProfileReport ProfileRun(GraphExecutor& executor, int runs = 1);

// Per step, `repeat` measurements, each the mean microseconds of `number` runs of that step alone;
// a measurement is repeated with more runs until it lasts at least `min_repeat_ms`.
std::vector<std::vector<double>> RunIndividual(GraphExecutor& executor, int number, int repeat,
                                               int min_repeat_ms);

// Timing of whole runs (TVM's time_evaluator behind GraphModule.benchmark): one warm-up run, then
// `repeat` measurements, each the mean seconds of `number` runs; a measurement is repeated with
// more runs until it lasts at least `min_repeat_ms`. With `end_to_end`, every run also copies the
// given inputs in and every output out (into arrays allocated before timing); otherwise the
// inputs are set once, before timing.
struct BenchmarkOptions {
  int number = 1;
  int repeat = 5;
  int min_repeat_ms = 0;
  bool end_to_end = false;
};

struct BenchmarkResult {
  std::vector<double> results;  // seconds per run, one per measurement
  double mean = 0, median = 0, min = 0, max = 0, std = 0;  // of `results`; std is the population's

  // "Execution time summary:" and a row of mean, median, max, min and std in milliseconds.
  std::string Summary() const;
};

// Throws Error for non-positive number/repeat, a negative min_repeat_ms or a bad input (checked
// before anything runs).
BenchmarkResult Benchmark(GraphExecutor& executor, const BenchmarkOptions& options,
                          const NamedArrays& inputs = {});
// The statistics of measurements (seconds); throws Error when there are none.
BenchmarkResult SummarizeTimes(std::vector<double> seconds);

}  // namespace kiln::runtime
