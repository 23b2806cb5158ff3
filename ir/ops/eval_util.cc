// Strided gathers and broadcasting of constant tensors, row by row.
#include "ir/ops/eval_util.h"

#include <cstring>

namespace kiln::ir {

bool IsEvaluableDType(DLDataType d) {
  if (d.lanes != 1) return false;
  switch (d.code) {
    case kDLFloat: return d.bits == 32 || d.bits == 64;
    case kDLInt: return d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64;
    case kDLUInt: return d.bits == 1 || d.bits == 8 || d.bits == 16 || d.bits == 32;
    default: return false;
  }
}

namespace {

template <typename T>
void CopyRow(const char* from, char* to, int64_t count, int64_t stride) {
  const T* in = reinterpret_cast<const T*>(from);
  T* out = reinterpret_cast<T*>(to);
  for (int64_t i = 0; i < count; ++i) out[i] = in[i * stride];
}

}  // namespace

runtime::NDArray GatherStrided(const runtime::NDArray& src, const std::vector<int64_t>& out_shape,
                               const std::vector<int64_t>& strides, int64_t base) {
  runtime::NDArray out = runtime::NDArray::Empty(out_shape, src.dtype());
  size_t element = runtime::DTypeBytes(src.dtype());
  const char* from = static_cast<const char*>(src.data());
  char* to = static_cast<char*>(out.data());
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  if (total == 0) return out;
  if (out_shape.empty()) {
    std::memcpy(to, from + base * element, element);
    return out;
  }
  int outer_dims = static_cast<int>(out_shape.size()) - 1;
  int64_t row = out_shape.back(), step = strides.back();
  std::vector<int64_t> counter(outer_dims, 0);
  int64_t in = base;
  for (int64_t done = 0; done < total; done += row) {
    const char* in_row = from + in * static_cast<int64_t>(element);
    char* out_row = to + done * static_cast<int64_t>(element);
    if (step == 1) {
      std::memcpy(out_row, in_row, row * element);
    } else if (element == 4) {
      CopyRow<uint32_t>(in_row, out_row, row, step);
    } else if (element == 8) {
      CopyRow<uint64_t>(in_row, out_row, row, step);
    } else if (element == 2) {
      CopyRow<uint16_t>(in_row, out_row, row, step);
    } else {
      runtime::CheckInternal(element == 1, "GatherStrided: element size ", element);
      CopyRow<uint8_t>(in_row, out_row, row, step);
    }
    for (int d = outer_dims - 1; d >= 0; --d) {
      if (++counter[d] < out_shape[d]) {
        in += strides[d];
        break;
      }
      in -= strides[d] * (out_shape[d] - 1);
      counter[d] = 0;
    }
  }
  return out;
}

runtime::NDArray BroadcastArray(const runtime::NDArray& src, const std::vector<int64_t>& out_shape) {
  if (src.shape() == out_shape) return src;
  const std::vector<int64_t>& in_shape = src.shape();
  std::vector<int64_t> in_strides = RowStrides(in_shape);
  std::vector<int64_t> strides(out_shape.size(), 0);
  size_t offset = out_shape.size() - in_shape.size();
  for (size_t d = 0; d < in_shape.size(); ++d) strides[offset + d] = in_shape[d] == 1 ? 0 : in_strides[d];
  return GatherStrided(src, out_shape, strides, 0);
}

}  // namespace kiln::ir
