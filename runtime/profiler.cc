// Timing of graph nodes.
#include "runtime/profiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "runtime/error.h"

namespace kiln::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double MicrosecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

std::string StepShapes(const Graph& graph, uint32_t n) {
  const GraphNode& node = graph.nodes[n];
  auto shape_of = [&](uint32_t e) { return DTypeToString(graph.dtypes[e]) + ShapeToString(graph.shapes[e]); };
  std::string text;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    text += (i > 0 ? ", " : "") + shape_of(graph.EntryId(node.inputs[i]));
  }
  text += " -> ";
  for (uint32_t k = 0; k < node.num_outputs; ++k) {
    text += (k > 0 ? ", " : "") + shape_of(graph.EntryId(n, k));
  }
  return text;
}

}  // namespace

ProfileReport ProfileRun(GraphExecutor& executor, int runs) {
  if (runs < 1) throw Error("a profile needs at least one run, got " + std::to_string(runs));
  const Graph& graph = executor.graph();
  executor.PrepareRun();
  size_t steps = executor.NumSteps();
  std::vector<std::vector<double>> durations(steps, std::vector<double>(runs));
  for (int r = 0; r < runs; ++r) {
    for (size_t i = 0; i < steps; ++i) {
      Clock::time_point start = Clock::now();
      executor.RunStep(i);
      durations[i][r] = MicrosecondsBetween(start, Clock::now());
    }
  }
  ProfileReport report;
  report.nodes.reserve(steps);
  for (size_t i = 0; i < steps; ++i) {
    std::vector<double>& d = durations[i];
    std::nth_element(d.begin(), d.begin() + runs / 2, d.end());
    uint32_t n = executor.StepNode(i);
    const GraphNode& node = graph.nodes[n];
    auto implementation = node.attrs.find(kImplementationAttr);
    report.nodes.push_back(NodeTiming{n, node.name, node.func_name,
                                      implementation != node.attrs.end() ? implementation->second : "",
                                      report.total_us, d[runs / 2], StepShapes(graph, n)});
    report.total_us += d[runs / 2];
  }
  return report;
}

std::string ProfileReport::Table() const {
  std::vector<const NodeTiming*> sorted;
  for (const NodeTiming& t : nodes) sorted.push_back(&t);
  std::stable_sort(sorted.begin(), sorted.end(), [](const NodeTiming* a, const NodeTiming* b) {
    return a->duration_us > b->duration_us;
  });
  size_t name_width = 4, function_width = 8, implementation_width = 14;
  for (const NodeTiming* t : sorted) {
    name_width = std::max(name_width, t->name.size());
    function_width = std::max(function_width, t->function.size());
    implementation_width = std::max(implementation_width, t->implementation.size());
  }
  std::string text;
  char line[128];
  auto row = [&](const std::string& name, const std::string& function, const std::string& implementation,
                 const std::string& time, const std::string& percent, const std::string& shapes) {
    text += name + std::string(name_width - name.size() + 2, ' ');
    text += function + std::string(function_width - function.size() + 2, ' ');
    text += implementation + std::string(implementation_width - implementation.size() + 2, ' ');
    std::snprintf(line, sizeof(line), "%12s  %8s  ", time.c_str(), percent.c_str());
    text += line + shapes + "\n";
  };
  row("Node", "Function", "Implementation", "Time (us)", "Time (%)", "Shapes");
  for (const NodeTiming* t : sorted) {
    double share = total_us > 0 ? 100.0 * t->duration_us / total_us : 0.0;
    std::snprintf(line, sizeof(line), "%.3f", t->duration_us);
    std::string time = line;
    std::snprintf(line, sizeof(line), "%.2f", share);
    row(t->name, t->function, t->implementation, time, line, t->shapes);
  }
  std::snprintf(line, sizeof(line), "%.3f", total_us);
  row("Total", "", "", line, "100.00", StrCat(nodes.size(), " nodes"));
  return text;
}

std::string ProfileReport::ChromeTrace() const {
  nlohmann::json events = nlohmann::json::array();
  for (const NodeTiming& t : nodes) {
    events.push_back({{"name", t.name}, {"cat", "op"}, {"ph", "X"}, {"ts", t.start_us},
                      {"dur", t.duration_us}, {"pid", 1}, {"tid", 1},
                      {"args", {{"function", t.function}, {"implementation", t.implementation}, {"shapes", t.shapes}}}});
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump(1);
}

std::vector<std::vector<double>> RunIndividual(GraphExecutor& executor, int number, int repeat,
                                               int min_repeat_ms) {
  Check(number > 0 && repeat > 0 && min_repeat_ms >= 0,
        "run_individual: number and repeat must be positive and min_repeat_ms not negative");
  std::vector<std::vector<double>> times(executor.NumSteps());
  executor.PrepareRun();
  for (size_t i = 0; i < executor.NumSteps(); ++i) {
    executor.RunStep(i);  // warm up
    for (int r = 0; r < repeat; ++r) {
      int runs = number;
      while (true) {
        Clock::time_point start = Clock::now();
        for (int k = 0; k < runs; ++k) executor.RunStep(i);
        double elapsed = MicrosecondsBetween(start, Clock::now());
        if (elapsed >= min_repeat_ms * 1000.0 || runs >= (1 << 24)) {
          times[i].push_back(elapsed / runs);
          break;
        }
        runs *= 2;
      }
    }
  }
  return times;
}

BenchmarkResult SummarizeTimes(std::vector<double> seconds) {
  Check(!seconds.empty(), "benchmark: no measurements to summarize");
  BenchmarkResult r;
  r.results = seconds;
  std::sort(seconds.begin(), seconds.end());
  size_t n = seconds.size();
  r.min = seconds.front();
  r.max = seconds.back();
  r.median = n % 2 == 1 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  for (double t : seconds) r.mean += t / static_cast<double>(n);
  double variance = 0;
  for (double t : seconds) variance += (t - r.mean) * (t - r.mean) / static_cast<double>(n);
  r.std = std::sqrt(variance);
  return r;
}

std::string BenchmarkResult::Summary() const {
  char text[256];
  std::snprintf(text, sizeof(text),
                "Execution time summary:\n %-12s %-12s %-12s %-12s %-12s\n %-12.4f %-12.4f %-12.4f %-12.4f %-12.4f\n",
                "mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)", mean * 1e3, median * 1e3,
                max * 1e3, min * 1e3, std * 1e3);
  return text;
}

BenchmarkResult Benchmark(GraphExecutor& executor, const BenchmarkOptions& options, const NamedArrays& inputs) {
  Check(options.number > 0 && options.repeat > 0 && options.min_repeat_ms >= 0,
        "benchmark: number and repeat must be positive and min_repeat_ms not negative, got number=",
        options.number, " repeat=", options.repeat, " min_repeat_ms=", options.min_repeat_ms);
  std::vector<std::pair<int, const DLTensor*>> bound;
  for (const auto& [name, array] : inputs) {
    Check(array.defined(), "benchmark: input '", name, "' is an empty array");
    bound.emplace_back(executor.InputIndex(name), array.get());
  }
  // Every input is checked (and set) before the first run.
  for (const auto& [index, tensor] : bound) executor.SetInput(index, *tensor);
  std::vector<NDArray> outputs;
  if (options.end_to_end) {
    for (int i = 0; i < executor.NumOutputs(); ++i) {
      NDArray view = executor.GetOutput(i);
      outputs.push_back(NDArray::Empty(view.shape(), view.dtype()));
    }
  }
  auto run_once = [&]() {
    if (options.end_to_end) {
      for (const auto& [index, tensor] : bound) executor.SetInput(index, *tensor);
    }
    executor.Run();
    for (size_t i = 0; i < outputs.size(); ++i) executor.CopyOutputTo(static_cast<int>(i), *outputs[i].get());
  };
  run_once();  // warm up
  std::vector<double> seconds;
  for (int r = 0; r < options.repeat; ++r) {
    int runs = options.number;
    while (true) {
      Clock::time_point start = Clock::now();
      for (int k = 0; k < runs; ++k) run_once();
      double elapsed_us = MicrosecondsBetween(start, Clock::now());
      if (elapsed_us >= options.min_repeat_ms * 1000.0 || runs >= (1 << 24)) {
        seconds.push_back(elapsed_us * 1e-6 / runs);
        break;
      }
      runs *= 2;
    }
  }
  return SummarizeTimes(std::move(seconds));
}

}  // namespace kiln::runtime
