// Timing of graph nodes.
#include "runtime/profiler.h"

#include <algorithm>
#include <chrono>
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

ProfileReport ProfileRun(GraphExecutor& executor) {
  const Graph& graph = executor.graph();
  ProfileReport report;
  report.nodes.reserve(executor.NumSteps());
  Clock::time_point run_start = Clock::now();
  for (size_t i = 0; i < executor.NumSteps(); ++i) {
    Clock::time_point start = Clock::now();
    executor.RunStep(i);
    Clock::time_point end = Clock::now();
    uint32_t n = executor.StepNode(i);
    report.nodes.push_back(NodeTiming{n, graph.nodes[n].name, graph.nodes[n].func_name,
                                      MicrosecondsBetween(run_start, start),
                                      MicrosecondsBetween(start, end), StepShapes(graph, n)});
  }
  for (const NodeTiming& t : report.nodes) report.total_us += t.duration_us;
  return report;
}

std::string ProfileReport::Table() const {
  std::vector<const NodeTiming*> sorted;
  for (const NodeTiming& t : nodes) sorted.push_back(&t);
  std::stable_sort(sorted.begin(), sorted.end(), [](const NodeTiming* a, const NodeTiming* b) {
    return a->duration_us > b->duration_us;
  });
  size_t name_width = 4, function_width = 8;
  for (const NodeTiming* t : sorted) {
    name_width = std::max(name_width, t->name.size());
    function_width = std::max(function_width, t->function.size());
  }
  std::string text;
  char line[128];
  auto row = [&](const std::string& name, const std::string& function, const std::string& time,
                 const std::string& percent, const std::string& shapes) {
    text += name + std::string(name_width - name.size() + 2, ' ');
    text += function + std::string(function_width - function.size() + 2, ' ');
    std::snprintf(line, sizeof(line), "%12s  %8s  ", time.c_str(), percent.c_str());
    text += line + shapes + "\n";
  };
  row("Node", "Function", "Time (us)", "Time (%)", "Shapes");
  for (const NodeTiming* t : sorted) {
    double share = total_us > 0 ? 100.0 * t->duration_us / total_us : 0.0;
    std::snprintf(line, sizeof(line), "%.3f", t->duration_us);
    std::string time = line;
    std::snprintf(line, sizeof(line), "%.2f", share);
    row(t->name, t->function, time, line, t->shapes);
  }
  std::snprintf(line, sizeof(line), "%.3f", total_us);
  row("Total", "", line, "100.00", StrCat(nodes.size(), " nodes"));
  return text;
}

std::string ProfileReport::ChromeTrace() const {
  nlohmann::json events = nlohmann::json::array();
  for (const NodeTiming& t : nodes) {
    events.push_back({{"name", t.name}, {"cat", "op"}, {"ph", "X"}, {"ts", t.start_us},
                      {"dur", t.duration_us}, {"pid", 1}, {"tid", 1},
                      {"args", {{"function", t.function}, {"shapes", t.shapes}}}});
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump(1);
}

std::vector<std::vector<double>> RunIndividual(GraphExecutor& executor, int number, int repeat,
                                               int min_repeat_ms) {
  Check(number > 0 && repeat > 0 && min_repeat_ms >= 0,
        "run_individual: number and repeat must be positive and min_repeat_ms not negative");
  std::vector<std::vector<double>> times(executor.NumSteps());
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

}  // namespace kiln::runtime
