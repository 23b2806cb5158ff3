// libonnx's shape inference and checker, run by the importer on models of the opsets libonnx
// knows (kiln's own checks hold above them).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>

namespace kiln::frontend {

// Infers shapes into `model` and checks it, at default-domain `opset`; throws Error saying what
// libonnx rejects. Default-domain ops ONNX Runtime runs but libonnx has no schema for are set
// aside while it checks (and restored).
void CheckWithLibonnx(onnx::ModelProto& model, int64_t opset);

}  // namespace kiln::frontend
