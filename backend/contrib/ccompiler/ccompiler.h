// The ccompiler external codegen (TVM's example C codegen, made to run real models): it claims
// float32 elementwise arithmetic with broadcasting (add, subtract, multiply, divide, maximum,
// minimum), nn.relu, exp, log, sqrt, tanh, sigmoid, negative, abs, nn.bias_add and nn.dense, and
// emits for each external function one C++ source (a C source module) with plain loops: the
// packed function `<symbol>`(inputs..., outputs...) and, when the function has constants,
// `__init_<symbol>`(constants...), which copies them into the library's own storage.
// Intermediate values live in the calling thread's workspace, so concurrent calls share only the
// constants, written once before any call.
#pragma once

#include <string>

#include "backend/external_codegen.h"

namespace kiln::backend {

bool CCompilerSupports(const ir::CallNode& call);
ExternalModule CCompilerGenerate(const std::string& symbol, const ir::Expr& function);

}  // namespace kiln::backend
