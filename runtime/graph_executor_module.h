// The graph executor as a module with TVM's packed functions (set_input, run, get_output, ...),
// the form that `lib["default"](dev)` and the C API hand out. The debug form adds profiling.
//
// Packed functions beyond TVM's: get_input_info / get_output_info return a JSON string
// {"shape": {name: [dims]}, "dtype": {name: "float32"}}; get_input_name(i); set_num_threads(n) and
// get_num_threads() (the executor's own thread count, 0: the process's); and, in the debug
// form, profile() (table), profile_chrome_trace() (trace JSON of the last profile) and
// run_individual(number, repeat, min_repeat_ms) returning a JSON list of per-node lists of
// microseconds.
#pragma once

#include <memory>

#include "runtime/graph_executor.h"
#include "runtime/module.h"

namespace kiln::runtime {

Module CreateGraphExecutorModule(std::shared_ptr<GraphExecutor> executor, bool debug = false);
// The executor behind a module made by CreateGraphExecutorModule; throws Error for other modules.
std::shared_ptr<GraphExecutor> GetGraphExecutor(const Module& module);
// Devices from packed arguments starting at `first`: DLDevice values or (type, id) int pairs.
std::vector<DLDevice> DevicesFromArgs(const Args& args, int first);

}  // namespace kiln::runtime
