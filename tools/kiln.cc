// The `kiln` command line: compile, run and inspect models. A thin shell over the library.
#include <cstdio>
#include <cstring>

#include "backend/compiler.h"
#include "runtime/error.h"
#include "backend/external_codegen.h"
#include "runtime/version.h"
#include "tools/commands.h"

namespace {

const char* kUsage =
    "usage: kiln <command> [options]\n"
    "  compile MODEL.onnx   compile a model into a library (kiln compile --help)\n"
    "  run ARTIFACT         run a compiled model (kiln run --help)\n"
    "  inspect ARTIFACT     show a compiled model's inputs, outputs, operators and memory plan\n"
    "  --version            the version, where the kernel sources are, and the C++ compiler\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::printf("%s", kUsage);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  if (command == "--version") {
    std::printf("kiln %s\nkernel sources: %s\nC++ compiler: %s\n", kiln::runtime::Version(),
                kiln::backend::KernelSourceDir().c_str(), kiln::backend::CompilerDescription().c_str());
    std::string codegens;
    for (const kiln::backend::ExternalCodegen& c : kiln::backend::ExternalCodegens()) {
      codegens += (codegens.empty() ? "" : ", ") + c.name + (c.enabled() ? "" : " (not enabled in this build)");
    }
    std::printf("external codegens (--byoc): %s\n", codegens.c_str());
    return 0;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "compile") return kiln::tools::CompileCommand(args);
    if (command == "run") return kiln::tools::RunCommand(args);
    if (command == "inspect") return kiln::tools::InspectCommand(args);
    std::fprintf(stderr, "kiln: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 2;
  } catch (const kiln::runtime::Error& e) {
    std::fprintf(stderr, "kiln: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "kiln: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {  // not one of kiln's errors: a bug in kiln
    std::fprintf(stderr, "kiln: error: %s\n", kiln::runtime::InternalError(e.what()).what());
    return 1;
  }
}
