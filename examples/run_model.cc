// Runtime demo: loads an exported model library, fills its inputs with seeded random values,
// runs it, and prints the outputs, the latency over repeated runs and the per-node profile.
//
//   kiln_runtime_demo model.so [repeat]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "runtime/graph_executor_module.h"
#include "runtime/module.h"
#include "runtime/profiler.h"
#include "runtime/thread_pool.h"

using namespace kiln::runtime;

namespace {

void FillRandom(NDArray& array, std::mt19937& rng) {
  auto* bytes = static_cast<unsigned char*>(array.data());
  if (array.dtype() == kFloat32) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    auto* values = static_cast<float*>(array.data());
    for (size_t i = 0; i < array.NumBytes() / sizeof(float); ++i) values[i] = uniform(rng);
  } else {
    for (size_t i = 0; i < array.NumBytes(); ++i) bytes[i] = static_cast<unsigned char>(rng() % 4);
  }
}

std::string Preview(const NDArray& array) {
  std::string text;
  if (array.dtype() != kFloat32) return "(" + DTypeToString(array.dtype()) + ")";
  const auto* values = static_cast<const float*>(array.data());
  size_t n = array.NumBytes() / sizeof(float);
  for (size_t i = 0; i < std::min<size_t>(n, 6); ++i) {
    char item[32];
    std::snprintf(item, sizeof(item), "%s%.5g", i > 0 ? ", " : "", values[i]);
    text += item;
  }
  return "[" + text + (n > 6 ? ", ...]" : "]");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s model.so [repeat]\n", argv[0]);
    return 2;
  }
  int repeat = argc > 2 ? std::max(1, std::atoi(argv[2])) : 100;
  try {
    Module lib = LoadModuleFromFile(argv[1]);
    std::shared_ptr<GraphExecutor> exec = GetGraphExecutor(lib.GetFunction("default")(kCPU).AsModule());
    std::printf("model %s: %d inputs (%zu besides parameters), %d outputs, %zu operator calls, "
                "%zu bytes of planned storage, %d threads\n",
                argv[1], exec->NumInputs(), exec->GetInputInfo().size(), exec->NumOutputs(),
                exec->NumSteps(), exec->OwnedStorageBytes(), NumThreads());
    std::mt19937 rng(0);
    for (const TensorInfo& info : exec->GetInputInfo()) {
      NDArray input = NDArray::Empty(info.shape, info.dtype);
      FillRandom(input, rng);
      exec->SetInput(exec->InputIndex(info.name), *input.get());
      std::printf("  input  %-12s %s%s = %s\n", info.name.c_str(), DTypeToString(info.dtype).c_str(),
                  ShapeToString(info.shape).c_str(), Preview(input).c_str());
    }
    exec->Run();
    std::vector<TensorInfo> outputs = exec->GetOutputInfo();
    for (int i = 0; i < exec->NumOutputs(); ++i) {
      std::printf("  output %-12s %s%s = %s\n", outputs[i].name.c_str(),
                  DTypeToString(outputs[i].dtype).c_str(), ShapeToString(outputs[i].shape).c_str(),
                  Preview(exec->GetOutput(i)).c_str());
    }

    std::vector<double> times;
    for (int r = 0; r < repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      exec->Run();
      times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    std::printf("latency over %d runs: median %.2f us, min %.2f us, max %.2f us\n\n", repeat,
                times[times.size() / 2], times.front(), times.back());
    std::printf("%s", ProfileRun(*exec).Table().c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
