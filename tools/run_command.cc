// kiln run ARTIFACT [--inputs in.npz] [--outputs out.npz] [--fill-mode zeros|ones|random]
//                   [--print-time] [--repeat N] [--number N] [--print-top K] [--profile]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <set>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/profiler.h"
#include "tools/artifact.h"
#include "tools/cli_args.h"
#include "tools/commands.h"
#include "tools/npz.h"

namespace kiln::tools {

using runtime::Check;
using runtime::Fail;
using runtime::NDArray;

namespace {

const std::vector<OptionSpec> kOptions = {
    {"--inputs", "-i", true, "input arrays by name (.npz written by numpy.savez)"},
    {"--outputs", "-o", true, "write the outputs to this .npz (output_0, output_1, ...)"},
    {"--fill-mode", "", true, "inputs not given: zeros, ones or random (default random, seeded)"},
    {"--print-time", "", false, "time the runs and print mean, median, max, min and std in ms"},
    {"--repeat", "", true, "timed measurements with --print-time, profiled runs with --profile (default 10)"},
    {"--number", "", true, "runs per measurement (default 1)"},
    {"--print-top", "", true, "print the K largest values of output 0 with their indices"},
    {"--profile", "", false, "print every node's median time over the profiled runs (profiling executor)"},
    {"--help", "-h", false, "show this help"},
};

void Fill(NDArray& array, const std::string& mode, std::mt19937& rng) {
  DLDataType d = array.dtype();
  size_t elem = runtime::DTypeBytes(d);
  size_t count = array.NumBytes() / elem;
  char* data = static_cast<char*>(array.data());
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (size_t i = 0; i < count; ++i) {
    double v = mode == "zeros" ? 0.0 : mode == "ones" ? 1.0 : uniform(rng);
    if (d.code == kDLFloat && d.bits == 32) reinterpret_cast<float*>(data)[i] = static_cast<float>(v);
    else if (d.code == kDLFloat && d.bits == 64) reinterpret_cast<double*>(data)[i] = v;
    else if (d.code == kDLInt && d.bits == 64) reinterpret_cast<int64_t*>(data)[i] = static_cast<int64_t>(mode == "random" ? v * 100 : v);
    else if (d.code == kDLInt && d.bits == 32) reinterpret_cast<int32_t*>(data)[i] = static_cast<int32_t>(mode == "random" ? v * 100 : v);
    else if (elem == 1) reinterpret_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(mode == "random" ? v * 2 : v);
    else Fail("cannot fill an input of dtype ", runtime::DTypeToString(d));
  }
}

void PrintTimes(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  double median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  double var = 0;
  for (double t : ms) var += (t - mean) * (t - mean);
  double std_dev = std::sqrt(var / ms.size());
  std::printf("Execution time summary:\n");
  std::printf(" %-12s %-12s %-12s %-12s %-12s\n", "mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)");
  std::printf(" %-12.4f %-12.4f %-12.4f %-12.4f %-12.4f\n", mean, median, ms.back(), ms.front(), std_dev);
}

void PrintTop(const NDArray& out, int k) {
  Check(out.dtype() == runtime::kFloat32, "--print-top needs a float32 output");
  const float* v = static_cast<const float*>(out.data());
  size_t n = out.NumBytes() / sizeof(float);
  std::vector<size_t> index(n);
  std::iota(index.begin(), index.end(), 0);
  size_t top = std::min<size_t>(k, n);
  std::partial_sort(index.begin(), index.begin() + top, index.end(), [&](size_t a, size_t b) { return v[a] > v[b]; });
  std::printf("Top %zu of output 0:\n", top);
  for (size_t i = 0; i < top; ++i) std::printf("  %6zu  %g\n", index[i], v[index[i]]);
}

}  // namespace

int RunCommand(const std::vector<std::string>& args) {
  CliArgs cli(args, kOptions);
  if (cli.Has("--help")) {
    std::printf("%s", Usage("run", "ARTIFACT [options]", kOptions).c_str());
    return 0;
  }
  Check(cli.positionals().size() == 1, "kiln run needs one artifact (a .so from kiln compile, or a tvmc directory)");
  std::string fill = cli.Get("--fill-mode", "random");
  Check(fill == "zeros" || fill == "ones" || fill == "random", "--fill-mode must be zeros, ones or random, got '", fill, "'");
  Artifact artifact = OpenArtifact(cli.positionals()[0]);
  runtime::GraphExecutor& exec = *artifact.executor;

  std::set<std::string> given;
  if (cli.Has("--inputs")) {
    for (auto& [name, array] : ReadNpz(cli.Get("--inputs"))) {
      int index = exec.InputIndex(name);
      DLDataType want = exec.GetInput(index).dtype(), got = array.dtype();
      bool narrow = (want.code == kDLBfloat && want.bits == 16) || runtime::IsFloat8(want);
      if (narrow && got.code == kDLUInt && got.bits == want.bits) array = array.CreateView(array.shape(), want);
      exec.SetInput(index, *array.get());
      given.insert(name);
    }
  }
  std::mt19937 rng(0);
  for (const runtime::TensorInfo& info : exec.GetInputInfo()) {
    if (given.count(info.name) != 0) continue;
    NDArray array = NDArray::Empty(info.shape, info.dtype);
    Fill(array, fill, rng);
    exec.SetInput(exec.InputIndex(info.name), *array.get());
  }
  exec.Run();

  if (cli.Has("--print-time")) {
    int repeat = cli.GetInt("--repeat", 10), number = cli.GetInt("--number", 1);
    Check(repeat > 0 && number > 0, "--repeat and --number must be positive");
    std::vector<double> ms;
    for (int r = 0; r < repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      for (int n = 0; n < number; ++n) exec.Run();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / number);
    }
    PrintTimes(ms);
  }
  if (cli.Has("--profile")) {
    int runs = cli.GetInt("--repeat", 10);
    Check(runs > 0, "--repeat must be positive");
    std::printf("%s", runtime::ProfileRun(exec, runs).Table().c_str());
  }
  if (cli.Has("--print-top")) PrintTop(exec.GetOutput(0), cli.GetInt("--print-top", 5));
  if (cli.Has("--outputs")) {
    NamedArrayList outputs;
    for (int i = 0; i < exec.NumOutputs(); ++i) outputs.emplace_back("output_" + std::to_string(i), exec.GetOutput(i).Clone());
    WriteNpz(cli.Get("--outputs"), outputs);
  }
  return 0;
}

}  // namespace kiln::tools
