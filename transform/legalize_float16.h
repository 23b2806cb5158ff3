// LegalizeFloat16: float16 tensors are stored as float16 but computed in float32. Each call of
// an op that computes (anything but a cast or a data movement) on float16 gets its float16
// arguments cast to float32 and its float16 result cast back, so kernels and generated code
// see only float32 arithmetic; the result is rounded to float16 once per op, as ONNX's float16
// ops are.
//
// May run: first (before anything that folds or fuses).
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr LegalizeFloat16(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
