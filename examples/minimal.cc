// Load an exported model library and run it from C++ (kiln's runtime API).
#include <cstdio>
#include <vector>

#include "runtime/graph_executor_module.h"
#include "runtime/module.h"

using namespace kiln::runtime;

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: %s model.so\n", argv[0]), 2;
  try {
    Module lib = LoadModuleFromFile(argv[1]);                      // graph, params and code
    Module gmod = lib.GetFunction("default")(kCPU).AsModule();     // as TVM: lib["default"](dev)
    std::shared_ptr<GraphExecutor> exec = GetGraphExecutor(gmod);  // or use gmod's packed functions

    TensorInfo input = exec->GetInputInfo().at(0);
    NDArray x = NDArray::Empty(input.shape, input.dtype);
    std::vector<float> values(x.NumBytes() / sizeof(float), 1.0f);
    x.CopyFromBytes(values.data(), x.NumBytes());
    exec->SetInput(exec->InputIndex(input.name), *x.get());
    exec->Run();

    NDArray y = exec->GetOutput(0);
    std::printf("output 0: shape %s, first value %g\n", ShapeToString(y.shape()).c_str(),
                static_cast<const float*>(y.data())[0]);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
