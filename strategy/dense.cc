// The implementations of nn.dense and how the compiler chooses among them (dense.h).
#include "strategy/dense.h"

#include "kernels/kernels.h"
#include "runtime/error.h"

namespace kiln::strategy {
namespace {

using kernels::KernelConfig;

// Panels of the packed matrix kernel, `panel` output columns each: [N / panel, K, panel].
std::string PanelLayout(int64_t panel) { return "NK" + std::to_string(panel) + "n"; }

bool PackedApplies(const DenseProblem& p, const KernelConfig& config) {
  return p.float32 && p.constant_weight && p.n % config.gemm_panel == 0;
}

std::string PackedLayout(const KernelConfig& config) { return PanelLayout(config.gemm_panel); }

// The kernel's panel is kGemmPanel as it is compiled; every instruction set's is the same.
bool PackedComputes(const DenseProblem& p, const std::string& layout) {
  return p.float32 && layout == PanelLayout(kernels::kGemmPanel);
}

bool GemmApplies(const DenseProblem& p, const KernelConfig&) { return p.float32; }

std::string GemmLayout(const KernelConfig&) { return "NK"; }

bool GemmComputes(const DenseProblem& p, const std::string& layout) { return p.float32 && layout == "NK"; }

static_assert(kernels::kAvx2Config.gemm_panel == kernels::kGemmPanel &&
                  kernels::kAvx512Config.gemm_panel == kernels::kGemmPanel &&
                  kernels::kBaselineConfig.gemm_panel == kernels::kGemmPanel,
              "PackedComputes assumes one panel width for every instruction set");

}  // namespace

DenseProblem DenseProblemOf(const ir::CallNode& call) {
  const ir::TensorType& data = call.args[0]->type().tensor();
  const ir::TensorType& out = call.type().tensor();
  DenseProblem p;
  p.k = data.shape.back();
  p.n = out.shape.back();
  p.rows = p.k == 0 ? 0 : data.NumElements() / p.k;
  p.float32 = data.dtype == runtime::kFloat32 && call.args[1]->type().tensor().dtype == runtime::kFloat32;
  p.constant_weight = call.args[1]->As<ir::ConstantNode>() != nullptr;
  return p;
}

const std::vector<DenseImplementation>& DenseImplementations() {
  static const std::vector<DenseImplementation> list = {
      {"dense.gemm_packed", DenseKernel::kGemmPacked, PackedApplies, PackedLayout, PackedComputes},
      {"dense.gemm", DenseKernel::kGemm, GemmApplies, GemmLayout, GemmComputes},
  };
  return list;
}

const DenseImplementation* ChooseDense(const DenseProblem& problem, const KernelConfig& config) {
  for (const DenseImplementation& implementation : DenseImplementations()) {
    if (implementation.applies(problem, config)) return &implementation;
  }
  return nullptr;
}

const DenseImplementation& DenseImplementationOf(const ir::CallNode& call) {
  DenseProblem problem = DenseProblemOf(call);
  const std::string& layout = call.attrs.GetString("weight_layout");
  const std::string& name = call.attrs.GetString("implementation");
  std::string names;
  for (const DenseImplementation& implementation : DenseImplementations()) {
    names += (names.empty() ? "" : ", ") + std::string(implementation.name);
    if (!name.empty() && name != implementation.name) continue;
    if (implementation.computes(problem, layout)) return implementation;
    runtime::Check(name.empty(), "nn.dense with weight layout ", layout, ": its implementation ", name,
                   " does not compute it");
  }
  runtime::Check(name.empty(), "nn.dense: unknown implementation '", name, "' (known: ", names, ")");
  runtime::Fail("nn.dense with weight layout ", layout, " on ", problem.float32 ? "float32" : "other dtypes",
                " is not supported by the host code generator (float32, weight layout NK or ",
                PanelLayout(kernels::kGemmPanel), ")");
}

}  // namespace kiln::strategy
