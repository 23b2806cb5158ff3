// ONNX's shape inference (libonnx 1.12, as Debian ships it) crashes or runs out of memory on some
// malformed models. In convPoolShapeInference a Conv whose weight has another rank than its input
// reads past a vector, and a Conv or pool with a stride of 0 divides by zero; a Split without
// outputs divides by zero; an Expand, Reshape or ConstantOfShape whose shape input is declared with
// 2^62 elements makes an output of that rank; LayerNormalization reads X's dims before the first
// when its axis lies outside X's rank (a scalar X). GuardedSchemaRegistry hands ONNX's schemas to
// InferShapes with those ops' inference functions wrapped in checks that fail inference instead,
// on the shapes inference itself has found (so intermediate values are covered too).
#pragma once

#include <onnx/defs/schema.h>

#include <map>
#include <memory>
#include <mutex>

namespace kiln::frontend {

class GuardedSchemaRegistry final : public onnx::ISchemaRegistry {
 public:
  static const GuardedSchemaRegistry& Instance();

  const onnx::OpSchema* GetSchema(const std::string& key, int max_inclusive_version,
                                  const std::string& domain) const override;

 private:
  mutable std::mutex mutex_;
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
};

}  // namespace kiln::frontend
