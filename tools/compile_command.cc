// kiln compile MODEL.onnx [--input-shapes name:[d,...]] [--dims N=MIN..MAX[:STEP]] [--target T] [-O N] [--disabled-pass P]
//                         [-o OUT.so | -o DIR --format tvmc]
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "backend/build.h"
#include "backend/partition.h"
#include "frontend/onnx/onnx_import.h"
#include "runtime/error.h"
#include "tools/cli_args.h"
#include "tools/commands.h"

namespace kiln::tools {

using runtime::Check;
using runtime::Fail;

namespace {

const std::vector<OptionSpec> kOptions = {
    {"--input-shapes", "", true, "input shapes: \"name:[1,3,224,224] other:[1,128]\"; a name for a dimension --dims gives: \"x:[N,3,224,224]\""},
    {"--dims", "", true, "the range of a dimension decided at run time (ONNX dim_params too): a batch (axis 0), \"N=1..8\", or a shape dimension, \"S=1..512\", \"H=320..1280:32\" (values in steps of 32)"},
    {"--target", "", true, "native or cpu (default), an -march value (x86-64-v3, skylake-avx512, ...), or \"cpu -mcpu=CPU\" / \"llvm -mcpu=CPU\""},
    {"--opt-level", "-O", true, "optimization level 0-3 (default 3)"},
    {"--disabled-pass", "", true, "a pass not to run (repeatable; comma-separated lists too)"},
    {"--required-pass", "", true, "a pass to run whatever the opt level (repeatable)"},
    {"--pass-config", "", true, "a pass config key=value, e.g. relay.FuseOps.max_depth=8 (repeatable)"},
    {"--print-ir-after", "", true, "print the IR after this pass, or after all (repeatable)"},
    {"--print-pass-times", "", false, "print how long each pass took"},
    {"--byoc", "", true, "hand what this external codegen runs to it: dnnl or ccompiler (repeatable)"},
    {"--byoc-min-ops", "", true, "a region of fewer ops than this stays on kiln's host code (default 1)"},
    {"--output", "-o", true, "output library (.so), or directory with --format tvmc"},
    {"--format", "-f", true, "so (default): one library; tvmc: DIR/mod.so + mod.json + mod.params"},
    {"--help", "-h", false, "show this help"},
};

// Whether `digits` is a whole number of at most 9 digits, leading zeros not counted: what a
// dimension or a range bound on the command line may be (no extent of a model's tensor comes
// near 10^9).
bool SmallWholeNumber(const std::string& digits) {
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  return digits.size() - std::min(digits.find_first_not_of('0'), digits.size() - 1) <= 9;
}

// "name:[1,3,224,224] b:[N, 128]" (entries separated by spaces or commas) into `import`'s input
// shapes and the names of dimensions decided at run time.
void ParseInputShapes(const std::string& text, frontend::OnnxImportOptions& import) {
  std::map<std::string, std::vector<int64_t>> shapes;  // this option's (a later option's replace them)
  std::map<std::string, std::map<int, std::string>> names;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i >= text.size()) break;
    size_t open = text.find('[', i), close = text.find(']', i);
    Check(open != std::string::npos && close != std::string::npos && open < close,
          "--input-shapes: expected name:[d0,d1,...], got '", text.substr(i), "'");
    std::string name = text.substr(i, open - i);
    Check(!name.empty() && name.back() == ':', "--input-shapes: expected 'name:' before '[' in '", text.substr(i), "'");
    name.pop_back();
    std::vector<int64_t> dims;
    std::string body = text.substr(open + 1, close - open - 1);
    size_t j = 0;
    while (j < body.size()) {
      size_t end = body.find(',', j);
      std::string dim = body.substr(j, end == std::string::npos ? std::string::npos : end - j);
      size_t first = dim.find_first_not_of(' ');
      if (first != std::string::npos) {
        dim = dim.substr(first, dim.find_last_not_of(' ') - first + 1);
        bool number = !dim.empty() && dim.find_first_not_of("0123456789") == std::string::npos;
        bool named = !dim.empty() && !std::isdigit(static_cast<unsigned char>(dim[0])) &&
                     dim.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
                         std::string::npos;
        Check(number || named, "--input-shapes: dimension '", dim, "' of '", name,
              "' is neither a whole number nor a name (letters, digits, _) whose range --dims gives");
        Check(!number || SmallWholeNumber(dim),
              "--input-shapes: dimension '", dim, "' of '", name, "' is too large (at most 9 digits)");
        if (named) names[name][static_cast<int>(dims.size())] = dim;
        dims.push_back(named ? -1 : std::stoll(dim));
      }
      if (end == std::string::npos) break;
      j = end + 1;
    }
    Check(shapes.emplace(name, dims).second, "--input-shapes gives '", name, "' twice");
    i = close + 1;
  }
  for (auto& [name, dims] : shapes) {
    import.input_shapes[name] = std::move(dims);
    import.input_dim_names.erase(name);
    if (names.count(name) != 0) import.input_dim_names[name] = names[name];
  }
}

// "N=1..8", "H=32..1280:32" (several separated by spaces or commas) into `import`'s dimension
// ranges.
void ParseDims(const std::string& text, frontend::OnnxImportOptions& import) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i >= text.size()) break;
    size_t end = std::min(text.find_first_of(" ,", i), text.size());
    std::string entry = text.substr(i, end - i);
    size_t eq = entry.find('='), dots = entry.find("..");
    size_t colon = std::min(entry.find(':', dots == std::string::npos ? 0 : dots), entry.size());
    Check(eq != std::string::npos && eq > 0 && dots != std::string::npos && dots > eq &&
              SmallWholeNumber(entry.substr(eq + 1, dots - eq - 1)) &&
              SmallWholeNumber(entry.substr(dots + 2, colon - dots - 2)) &&
              (colon == entry.size() || SmallWholeNumber(entry.substr(colon + 1))),
          "--dims: expected NAME=MIN..MAX or NAME=MIN..MAX:STEP (for example N=1..8, H=32..1280:32), got '", entry,
          "'");
    frontend::DimRange range{std::stoll(entry.substr(eq + 1, dots - eq - 1)),
                             std::stoll(entry.substr(dots + 2, colon - dots - 2)),
                             colon == entry.size() ? 1 : std::stoll(entry.substr(colon + 1))};
    Check(import.dims.emplace(entry.substr(0, eq), range).second, "--dims gives '", entry.substr(0, eq), "' twice");
    i = end;
  }
}

std::string HumanBytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

int CompileCommand(const std::vector<std::string>& args) {
  CliArgs cli(args, kOptions);
  if (cli.Has("--help")) {
    std::printf("%s", Usage("compile", "MODEL.onnx [options]", kOptions).c_str());
    return 0;
  }
  Check(cli.positionals().size() == 1, "kiln compile needs one model file (see kiln compile --help)");
  std::string model = cli.positionals()[0];
  std::string format = cli.Get("--format", "so");
  Check(format == "so" || format == "tvmc", "--format must be so or tvmc, got '", format, "'");
  std::string output = cli.Get("--output");
  if (output.empty()) {
    std::string stem = std::filesystem::path(model).stem().string();
    output = format == "so" ? stem + ".so" : stem + "_tvmc";
  }
  backend::BuildOptions options;
  transform::PassContext& passes = options.pass_context;
  passes.opt_level = cli.GetInt("--opt-level", 3);
  Check(passes.opt_level >= 0 && passes.opt_level <= 3, "-O must be 0 to 3, got ", passes.opt_level);
  options.target = backend::ResolveTarget(cli.Get("--target", "native"), options.compiler);
  auto names = [&](const char* option) {
    std::set<std::string> out;
    for (const std::string& list : cli.GetAll(option)) {
      for (size_t i = 0; i <= list.size();) {
        size_t comma = std::min(list.find(',', i), list.size());
        if (comma > i) out.insert(list.substr(i, comma - i));
        i = comma + 1;
      }
    }
    return out;
  };
  passes.disabled_passes = names("--disabled-pass");
  passes.required_passes = names("--required-pass");
  passes.print_ir_after = names("--print-ir-after");
  passes.print_pass_times = cli.Has("--print-pass-times");
  passes.CheckPassNames(transform::PassNames());
  for (const std::string& entry : cli.GetAll("--pass-config")) {
    size_t eq = entry.find('=');
    Check(eq != std::string::npos, "--pass-config needs key=value, got '", entry, "'");
    passes.SetConfig(entry.substr(0, eq), entry.substr(eq + 1));
  }

  frontend::OnnxImportOptions import;
  for (const std::string& text : cli.GetAll("--input-shapes")) ParseInputShapes(text, import);
  for (const std::string& text : cli.GetAll("--dims")) ParseDims(text, import);
  auto start = std::chrono::steady_clock::now();
  ir::Expr main;
  ir::DimSamples samples;
  {
    ProgressStep step("importing " + model);
    main = frontend::ImportOnnxFile(model, import, &samples);
  }
  transform::PartitionOptions partition;
  partition.min_region_ops = cli.GetInt("--byoc-min-ops", 1);
  for (const std::string& codegen : names("--byoc")) {
    Check(samples.empty(), "--byoc: external codegens take fixed shapes only; compile without --byoc, or without ",
          "shape dimensions");
    ProgressStep step("partitioning for " + codegen);
    main = backend::PartitionForCodegen(main, codegen, {}, partition);
  }
  options.dim_samples = &samples;
  backend::BuildReport report;
  std::unique_ptr<backend::ExecutorFactory> factory;
  {
    ProgressStep step("generating and compiling operators");
    factory = std::make_unique<backend::ExecutorFactory>(backend::Build(main, options, &report, &std::cerr));
  }
  {
    ProgressStep step("linking " + output);
    if (format == "so") {
      factory->ExportLibrary(output);
    } else {
      factory->ExportThreeFiles(output);
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr,
               "kiln: %s -> %s in %.1f s: %d ops imported, %d operator calls of %d distinct functions "
               "(%d objects compiled, %d cached); intermediate tensors: %s planned, %s unshared; target %s\n",
               model.c_str(), output.c_str(), seconds, report.imported_ops, report.primitive_calls,
               report.primitive_functions, report.compile.compiled, report.compile.cached,
               HumanBytes(report.planned_bytes).c_str(), HumanBytes(report.unshared_bytes).c_str(),
               options.target.ToString().c_str());
  return 0;
}

ProgressStep::ProgressStep(std::string what) : what_(std::move(what)), start_(std::chrono::steady_clock::now()) {}

double ProgressStep::Seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

ProgressStep::~ProgressStep() {
  double seconds = Seconds();
  if (seconds > 1.0 && !std::uncaught_exceptions()) std::fprintf(stderr, "kiln: %s: %.1f s\n", what_.c_str(), seconds);
}

}  // namespace kiln::tools
