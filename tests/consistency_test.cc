// The layers agree on the ops: every op but the partitioning annotations has a lowering in the
// host code generator, every op a converter or pass names (OpRef) is registered, and no ONNX op
// type has two converters.
#include <gtest/gtest.h>

#include "backend/codegen/lowering.h"
#include "frontend/onnx/converter.h"
#include "ir/op.h"
#include "runtime/error.h"
#include "transform/pipeline.h"

namespace kiln {
namespace {

TEST(Consistency, EveryOpHasALowering) {
  for (const auto& [name, op] : ir::AllOps()) {
    if (name.rfind("annotation.", 0) == 0) continue;  // PartitionGraph removes them all
    EXPECT_NE(backend::FindLowering(op), nullptr) << "op " << name << " has no lowering in backend/codegen/lowerings.cc";
  }
}

TEST(Consistency, EveryOpNamedByAConverterOrPassExists) {
  // Linking these pulls in every converter and pass, and with them their OpRefs.
  ASSERT_FALSE(frontend::Converters().empty());
  ASSERT_FALSE(transform::BuildPipeline().empty());
  ASSERT_GT(ir::OpRefNames().size(), 40u);
  for (const std::string& name : ir::OpRefNames()) {
    EXPECT_NE(ir::FindOp(name), nullptr) << "an OpRef names '" << name << "', which is not a registered op";
  }
}

TEST(Consistency, NoOnnxOpTypeHasTwoConverters) {
  EXPECT_NO_THROW(frontend::Converters());
  frontend::ConverterTable table;
  frontend::AddMathConverters(table);
  EXPECT_THROW(frontend::AddMathConverters(table), runtime::InternalError);
}

}  // namespace
}  // namespace kiln
