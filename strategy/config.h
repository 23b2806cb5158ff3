// The kernel configuration (kernels/kernel_config.h) of the instruction set a target has: what
// the kernel selection reads about the target.
#pragma once

#include "kernels/kernel_config.h"
#include "target/target.h"

namespace kiln::strategy {

const kernels::KernelConfig& ConfigFor(const target::Target& target);

}  // namespace kiln::strategy
