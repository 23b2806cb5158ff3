// LegalizeNarrowFloats: float16, bfloat16 and float8 tensors are stored in their format but
// computed in float32. Each call of an op that computes (anything but a cast or a data movement)
// on such a tensor gets those arguments cast to float32 and such a result cast back, so kernels
// and generated code see only float32 arithmetic; the result is rounded to its format once per
// op, as ONNX's ops on these types are.
//
// May run: first (before anything that folds or fuses).
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr LegalizeNarrowFloats(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
