// Fuzzes the ONNX importer on untrusted model bytes: protobuf parse, ONNX's checker and shape
// inference, kiln's conversion and the IR's type inference, then the pass pipeline at -O3 on
// what it imported (no codegen). Any input is either imported and optimized or rejected with
// kiln::runtime::Error (not InternalError); a crash, a sanitizer report, another exception type,
// a hang or unbounded memory is a finding. Inputs that parse as a ModelProto get
// structured mutations (onnx_mutations.h) from the custom mutator; the rest libFuzzer's own.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "frontend/onnx/onnx_import.h"
#include "fuzz/onnx_mutations.h"
#include "runtime/error.h"
#include "transform/pipeline.h"

namespace {

constexpr size_t kMaxModelBytes = 256 << 10;  // larger inputs are skipped: seeds are a few KB

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Huge shapes must be refused, not allocated (runtime::MaxTensorBytes reads this).
  setenv("KILN_MAX_TENSOR_BYTES", "67108864", /*overwrite=*/1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxModelBytes) return 0;
  try {
    kiln::ir::Expr main = kiln::frontend::ImportOnnxBytes(std::string_view(reinterpret_cast<const char*>(data), size));
    static const kiln::transform::PassContext context;  // -O3
    static const kiln::target::Target target = kiln::target::HostTarget();
    std::ostringstream log;
    kiln::transform::RunPipeline(main, {context, target}, log);
  } catch (const kiln::runtime::InternalError&) {
    throw;  // a bug in kiln by its own account: a finding
  } catch (const kiln::runtime::Error&) {
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::mt19937_64 rng(seed);
  onnx::ModelProto model;
  // One time in four libFuzzer's byte mutations even for a model that parses: they damage the
  // protobuf encoding itself.
  if (rng() % 4 != 0 && model.ParseFromArray(data, static_cast<int>(size)) &&
      kiln::fuzz::MutateOnnxModel(model, rng)) {
    std::string bytes = model.SerializeAsString();
    if (bytes.size() <= max_size) {
      std::memcpy(data, bytes.data(), bytes.size());
      return bytes.size();
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
