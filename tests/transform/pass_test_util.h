// Helpers for pass tests written in IR text: run one pass and compare with the expected text.
#pragma once

#include <gtest/gtest.h>

#include "ir/text.h"
#include "transform/pass.h"

namespace kiln::transform {

inline void ExpectPass(PassFunction pass, const std::string& before, const std::string& expected) {
  PassContext context;
  ir::Expr actual = pass(ir::ParseFunction(before), PassEnvironment{context});
  ir::Expr want = ir::ParseFunction(expected);
  EXPECT_TRUE(ir::StructurallyEqual(actual, want)) << "got:\n" << ir::PrintFunction(actual) << "expected:\n"
                                                   << ir::PrintFunction(want);
}

}  // namespace kiln::transform
