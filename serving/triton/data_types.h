// Data types between kiln (DLPack's DLDataType) and Triton (TRITONSERVER_DataType and the model
// configuration's "TYPE_*" names). BYTES (TYPE_STRING) has no kiln counterpart, nor do kiln's
// vector lanes and 8-bit floats a Triton one.
#pragma once

#include <dlpack/dlpack.h>

#include <optional>
#include <string>

#include "serving/triton/triton_api.h"

namespace kiln::triton {

// Triton's type of a kiln dtype; nullopt when Triton has none.
std::optional<TRITONSERVER_DataType> TritonTypeOf(DLDataType dtype);
// "TYPE_FP32" for TRITONSERVER_TYPE_FP32; BYTES is "TYPE_STRING", as in the configuration.
const char* ConfigTypeName(TRITONSERVER_DataType type);
// The inverse of ConfigTypeName; TRITONSERVER_TYPE_INVALID for a name it does not know.
TRITONSERVER_DataType TypeFromConfigName(const std::string& name);
// "FP32", the protocol's name (what clients send as "datatype").
const char* ProtocolTypeName(TRITONSERVER_DataType type);

}  // namespace kiln::triton
