// The kernel configuration of a target's instruction set (config.h).
#include "strategy/config.h"

namespace kiln::strategy {

const kernels::KernelConfig& ConfigFor(const target::Target& target) {
  switch (target.isa) {
    case target::Isa::kAvx512: return kernels::kAvx512Config;
    case target::Isa::kAvx2: return kernels::kAvx2Config;
    case target::Isa::kBaseline: return kernels::kBaselineConfig;
  }
  return kernels::kBaselineConfig;
}

}  // namespace kiln::strategy
