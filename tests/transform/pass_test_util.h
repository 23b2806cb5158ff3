// Helpers for pass tests written in IR text: run one pass and compare with the expected text.
#pragma once

#include <gtest/gtest.h>

#include "backend/constant_evaluator.h"
#include "ir/text.h"
#include "transform/pass.h"

namespace kiln::transform {

inline PassEnvironment TestEnvironment(const PassContext& context) {
  return PassEnvironment{context, [](const ir::Expr& function) {
                           backend::CompilerOptions options;
                           return backend::EvaluateConstantFunction(function, options);
                         }};
}

inline void ExpectPass(PassFunction pass, const std::string& before, const std::string& expected) {
  PassContext context;
  ir::Expr actual = pass(ir::ParseFunction(before), TestEnvironment(context));
  ir::Expr want = ir::ParseFunction(expected);
  EXPECT_TRUE(ir::StructurallyEqual(actual, want)) << "got:\n" << ir::PrintFunction(actual) << "expected:\n"
                                                   << ir::PrintFunction(want);
}

}  // namespace kiln::transform
