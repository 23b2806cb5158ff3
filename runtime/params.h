// TVM's params format (tvm-formats.md A.2): named NDArrays saved by relay.save_param_dict, read
// by load_params, and the same NDArray records inside the GraphExecutorFactory payload. Every
// field is validated; a bad file gives an Error naming the field and the byte offset.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/ndarray.h"
#include "runtime/stream.h"

namespace kiln::runtime {

constexpr uint64_t kNDArrayListMagic = 0xF7E58D4F05049CB7ULL;
constexpr uint64_t kNDArrayMagic = 0xDD5E40F096B4A13FULL;

using NamedArrays = std::vector<std::pair<std::string, NDArray>>;

void WriteNDArray(ByteWriter& writer, const NDArray& array);
NDArray ReadNDArray(ByteReader& reader);

// An NDArray record without copying its data (which `data` points to, inside the reader's bytes).
struct ArrayHeader {
  std::vector<int64_t> shape;
  DLDataType dtype{};
  std::string_view data;
};
ArrayHeader ReadArrayHeader(ByteReader& reader);

// The bytes of a params file holding `params` in the given order.
std::string SaveParams(const NamedArrays& params);
// Reads a params file; rejects duplicate names and trailing bytes.
NamedArrays LoadParams(std::string_view bytes);

// Names, shapes and dtypes of a params file, validated like LoadParams but without copying data.
struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  DLDataType dtype{};
};
std::vector<ParamInfo> LoadParamInfos(std::string_view bytes);

// Reads a whole file into memory; throws Error naming the path when it cannot.
std::string ReadFile(const std::string& path);

}  // namespace kiln::runtime
