// The implementations of nn.dense (data [..., K] x weight [N, K]^T), in one ordered list as for
// convolutions (conv2d.h): AlterOpLayout asks which to use and packs a constant weight for it,
// writing its name into the call's `implementation` attribute; lowering calls the kernel of the
// named implementation, or of the first that computes the call as it is laid out.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"
#include "kernels/kernel_config.h"

namespace kiln::strategy {

struct DenseProblem {
  int64_t rows = 0, n = 0, k = 0;  // data [rows..., K] as [rows, K]; weight [N, K]
  bool float32 = false;            // data and weight
  bool constant_weight = false;    // the weight is a constant, so it can be packed at build time
};
// The problem of `call`, in any weight layout.
DenseProblem DenseProblemOf(const ir::CallNode& call);

enum class DenseKernel {
  kGemm,        // Gemm with the weight [N, K] read transposed
  kGemmPacked,  // GemmPacked with the weight in panels (kernels.h)
};

struct DenseImplementation {
  const char* name;
  DenseKernel kernel;
  bool (*applies)(const DenseProblem& problem, const kernels::KernelConfig& config);
  // The weight layout it wants.
  std::string (*weight_layout)(const kernels::KernelConfig& config);
  // Whether its kernel computes `problem` with the weight in `weight_layout`.
  bool (*computes)(const DenseProblem& problem, const std::string& weight_layout);
};

// Preferred first; the last applies to every float32 dense layer.
const std::vector<DenseImplementation>& DenseImplementations();

// The first implementation that applies; null when none does.
const DenseImplementation* ChooseDense(const DenseProblem& problem, const kernels::KernelConfig& config);

// As Conv2DImplementationOf (conv2d.h), for a dense layer.
const DenseImplementation& DenseImplementationOf(const ir::CallNode& call);

}  // namespace kiln::strategy
