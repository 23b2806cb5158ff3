// Structured mutations of ONNX models for the importer's fuzzer: each one takes a valid model a
// small step towards the kinds of damage an untrusted model can carry (inputs that name nothing or
// form cycles, attributes of the wrong type, negative or huge dims, raw data of the wrong length,
// external data pointing outside the model's folder, other ops and opsets). libFuzzer's byte-level
// mutations rarely produce these from a serialized protobuf; the custom mutator applies them.
#pragma once

#include <onnx/onnx_pb.h>

#include <random>

namespace kiln::fuzz {

// Applies one randomly chosen mutation that fits the model (a few attempts); returns false when
// none applied (e.g. a model without nodes or initializers).
bool MutateOnnxModel(onnx::ModelProto& model, std::mt19937_64& rng);

}  // namespace kiln::fuzz
