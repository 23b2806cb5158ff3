// Data types between kiln and Triton: one table.
#include "serving/triton/data_types.h"

namespace kiln::triton {
namespace {

struct TypeRow {
  TRITONSERVER_DataType triton;
  const char* config_name;
  const char* protocol_name;
  DLDataType kiln;  // lanes 1; BYTES has none (bits 0)
};

// Booleans: kiln's "bool" is uint1, stored one byte per element as Triton's BOOL is.
constexpr TypeRow kTypes[] = {
    {TRITONSERVER_TYPE_BOOL, "TYPE_BOOL", "BOOL", {kDLUInt, 1, 1}},
    {TRITONSERVER_TYPE_UINT8, "TYPE_UINT8", "UINT8", {kDLUInt, 8, 1}},
    {TRITONSERVER_TYPE_UINT16, "TYPE_UINT16", "UINT16", {kDLUInt, 16, 1}},
    {TRITONSERVER_TYPE_UINT32, "TYPE_UINT32", "UINT32", {kDLUInt, 32, 1}},
    {TRITONSERVER_TYPE_UINT64, "TYPE_UINT64", "UINT64", {kDLUInt, 64, 1}},
    {TRITONSERVER_TYPE_INT8, "TYPE_INT8", "INT8", {kDLInt, 8, 1}},
    {TRITONSERVER_TYPE_INT16, "TYPE_INT16", "INT16", {kDLInt, 16, 1}},
    {TRITONSERVER_TYPE_INT32, "TYPE_INT32", "INT32", {kDLInt, 32, 1}},
    {TRITONSERVER_TYPE_INT64, "TYPE_INT64", "INT64", {kDLInt, 64, 1}},
    {TRITONSERVER_TYPE_FP16, "TYPE_FP16", "FP16", {kDLFloat, 16, 1}},
    {TRITONSERVER_TYPE_FP32, "TYPE_FP32", "FP32", {kDLFloat, 32, 1}},
    {TRITONSERVER_TYPE_FP64, "TYPE_FP64", "FP64", {kDLFloat, 64, 1}},
    {TRITONSERVER_TYPE_BF16, "TYPE_BF16", "BF16", {kDLBfloat, 16, 1}},
    {TRITONSERVER_TYPE_BYTES, "TYPE_STRING", "BYTES", {kDLOpaqueHandle, 0, 0}},
};

}  // namespace

std::optional<TRITONSERVER_DataType> TritonTypeOf(DLDataType dtype) {
  if (dtype.lanes != 1) return std::nullopt;
  for (const TypeRow& row : kTypes) {
    if (row.kiln.bits != 0 && row.kiln.code == dtype.code && row.kiln.bits == dtype.bits) return row.triton;
  }
  return std::nullopt;
}

const char* ConfigTypeName(TRITONSERVER_DataType type) {
  for (const TypeRow& row : kTypes) {
    if (row.triton == type) return row.config_name;
  }
  return "TYPE_INVALID";
}

TRITONSERVER_DataType TypeFromConfigName(const std::string& name) {
  for (const TypeRow& row : kTypes) {
    if (name == row.config_name) return row.triton;
  }
  return TRITONSERVER_TYPE_INVALID;
}

const char* ProtocolTypeName(TRITONSERVER_DataType type) {
  for (const TypeRow& row : kTypes) {
    if (row.triton == type) return row.protocol_name;
  }
  return "INVALID";
}

}  // namespace kiln::triton
