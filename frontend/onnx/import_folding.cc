// Evaluating cheap ops on constants with plain loops, element by element.
#include "frontend/onnx/import_folding.h"

#include <cmath>
#include <cstring>
#include <functional>

#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::NDArray;

namespace {

constexpr int64_t kMaxFoldedElements = int64_t{1} << 26;

bool IsFloat(DLDataType d) { return d.code == kDLFloat; }

double ReadDouble(const NDArray& a, int64_t i) {
  const char* p = static_cast<const char*>(a.data());
  DLDataType d = a.dtype();
  switch (d.code) {
    case kDLFloat:
      if (d.bits == 32) return reinterpret_cast<const float*>(p)[i];
      if (d.bits == 64) return reinterpret_cast<const double*>(p)[i];
      break;
    case kDLInt:
      if (d.bits == 64) return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
      if (d.bits == 32) return reinterpret_cast<const int32_t*>(p)[i];
      if (d.bits == 16) return reinterpret_cast<const int16_t*>(p)[i];
      if (d.bits == 8) return reinterpret_cast<const int8_t*>(p)[i];
      break;
    case kDLUInt:
      if (d.bits == 8 || d.bits == 1) return reinterpret_cast<const uint8_t*>(p)[i];
      if (d.bits == 16) return reinterpret_cast<const uint16_t*>(p)[i];
      if (d.bits == 32) return reinterpret_cast<const uint32_t*>(p)[i];
      break;
  }
  throw runtime::Error("cannot fold values of dtype " + runtime::DTypeToString(d));
}

int64_t ReadInt(const NDArray& a, int64_t i) {
  DLDataType d = a.dtype();
  if (d.code == kDLInt && d.bits == 64) return static_cast<const int64_t*>(a.data())[i];
  return static_cast<int64_t>(ReadDouble(a, i));
}

void Write(NDArray& a, int64_t i, double value, int64_t int_value, bool exact_int) {
  char* p = static_cast<char*>(a.data());
  DLDataType d = a.dtype();
  int64_t iv = exact_int ? int_value : static_cast<int64_t>(value);
  switch (d.code) {
    case kDLFloat:
      if (d.bits == 32) { reinterpret_cast<float*>(p)[i] = static_cast<float>(value); return; }
      if (d.bits == 64) { reinterpret_cast<double*>(p)[i] = value; return; }
      break;
    case kDLInt:
      if (d.bits == 64) { reinterpret_cast<int64_t*>(p)[i] = iv; return; }
      if (d.bits == 32) { reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(iv); return; }
      if (d.bits == 16) { reinterpret_cast<int16_t*>(p)[i] = static_cast<int16_t>(iv); return; }
      if (d.bits == 8) { reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(iv); return; }
      break;
    case kDLUInt:
      if (d.bits == 1) { reinterpret_cast<uint8_t*>(p)[i] = value != 0 || iv != 0; return; }
      if (d.bits == 8) { reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(iv); return; }
      if (d.bits == 16) { reinterpret_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(iv); return; }
      if (d.bits == 32) { reinterpret_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(iv); return; }
      break;
  }
  throw runtime::Error("cannot fold values of dtype " + runtime::DTypeToString(d));
}

// Calls visit(out_index, in_index) for every element of `out_shape`; in_index comes from
// per-dimension input strides plus a base offset.
void ForEachIndex(const std::vector<int64_t>& out_shape, const std::vector<int64_t>& in_strides, int64_t base,
                  const std::function<void(int64_t, int64_t)>& visit) {
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  std::vector<int64_t> counter(out_shape.size(), 0);
  int64_t in = base;
  for (int64_t out = 0; out < total; ++out) {
    visit(out, in);
    for (int d = static_cast<int>(out_shape.size()) - 1; d >= 0; --d) {
      if (++counter[d] < out_shape[d]) {
        in += in_strides[d];
        break;
      }
      in -= in_strides[d] * (out_shape[d] - 1);
      counter[d] = 0;
    }
  }
}

std::vector<int64_t> RowStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

// Strides reading `in_shape` broadcast to `out_shape` (numpy rules).
std::vector<int64_t> BroadcastReadStrides(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape) {
  std::vector<int64_t> strides(out_shape.size(), 0);
  std::vector<int64_t> in_strides = RowStrides(in_shape);
  size_t offset = out_shape.size() - in_shape.size();
  for (size_t d = 0; d < in_shape.size(); ++d) strides[offset + d] = in_shape[d] == 1 ? 0 : in_strides[d];
  return strides;
}

NDArray Gather(const NDArray& src, const std::vector<int64_t>& out_shape, const std::vector<int64_t>& strides, int64_t base) {
  NDArray out = NDArray::Empty(out_shape, src.dtype());
  size_t elem = runtime::DTypeBytes(src.dtype());
  const char* from = static_cast<const char*>(src.data());
  char* to = static_cast<char*>(out.data());
  ForEachIndex(out_shape, strides, base, [&](int64_t o, int64_t i) { std::memcpy(to + o * elem, from + i * elem, elem); });
  return out;
}

NDArray Evaluate(const CallNode& call, const std::vector<NDArray>& args) {
  const std::string& op = call.op->name;
  const TensorType& out_type = call.type().tensor();
  const Attrs& attrs = call.attrs;
  if (op == "reshape" || op == "squeeze" || op == "expand_dims" || op == "copy") {
    return args[0].Clone().CreateView(out_type.shape, out_type.dtype);
  }
  if (op == "transpose") {
    std::vector<int64_t> axes = attrs.GetInts("axes");
    const auto& in_shape = args[0].shape();
    if (axes.empty()) {
      for (int64_t d = static_cast<int64_t>(in_shape.size()) - 1; d >= 0; --d) axes.push_back(d);
    }
    std::vector<int64_t> in_strides = RowStrides(in_shape), strides;
    for (int64_t a : axes) strides.push_back(in_strides[a < 0 ? a + static_cast<int64_t>(in_shape.size()) : a]);
    return Gather(args[0], out_type.shape, strides, 0);
  }
  if (op == "broadcast_to") return Gather(args[0], out_type.shape, BroadcastReadStrides(args[0].shape(), out_type.shape), 0);
  if (op == "strided_slice") {
    const auto& in_shape = args[0].shape();
    std::vector<int64_t> axes = attrs.GetInts("axes");
    const auto& begin = attrs.GetInts("begin");
    const auto& steps = attrs.GetInts("strides");
    if (axes.empty()) {
      for (size_t i = 0; i < begin.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    std::vector<int64_t> in_strides = RowStrides(in_shape), strides = in_strides;
    int64_t base = 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(in_shape.size()) : axes[i];
      int64_t s = steps.empty() ? 1 : steps[i];
      int64_t b = begin[i] < 0 ? begin[i] + in_shape[a] : begin[i];
      b = s > 0 ? std::min(std::max<int64_t>(b, 0), in_shape[a]) : std::min(std::max<int64_t>(b, -1), in_shape[a] - 1);
      base += b * in_strides[a];
      strides[a] = s * in_strides[a];
    }
    return Gather(args[0], out_type.shape, strides, base);
  }
  if (op == "concatenate") {
    NDArray out = NDArray::Empty(out_type.shape, out_type.dtype);
    int axis = static_cast<int>(attrs.GetInt("axis"));
    if (axis < 0) axis += out_type.ndim();
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= out_type.shape[d];
    for (int d = axis + 1; d < out_type.ndim(); ++d) inner *= out_type.shape[d];
    size_t elem = runtime::DTypeBytes(out_type.dtype);
    int64_t offset = 0;
    for (const NDArray& a : args) {
      int64_t block = a.shape()[axis] * inner;
      for (int64_t j = 0; j < outer; ++j) {
        std::memcpy(static_cast<char*>(out.data()) + (j * out_type.shape[axis] * inner + offset) * elem,
                    static_cast<const char*>(a.data()) + j * block * elem, block * elem);
      }
      offset += block;
    }
    return out;
  }
  if (op == "take") {
    const auto& data_shape = args[0].shape();
    int axis = static_cast<int>(attrs.GetInt("axis"));
    if (axis < 0) axis += static_cast<int>(data_shape.size());
    int64_t outer = 1, inner = 1, n = data_shape[axis];
    for (int d = 0; d < axis; ++d) outer *= data_shape[d];
    for (size_t d = axis + 1; d < data_shape.size(); ++d) inner *= data_shape[d];
    int64_t count = 1;
    for (int64_t d : args[1].shape()) count *= d;
    NDArray out = NDArray::Empty(out_type.shape, out_type.dtype);
    size_t elem = runtime::DTypeBytes(out_type.dtype);
    for (int64_t j = 0; j < outer; ++j) {
      for (int64_t k = 0; k < count; ++k) {
        int64_t index = ReadInt(args[1], k);
        if (index < 0) index += n;
        runtime::Check(index >= 0 && index < n, "take: index ", ReadInt(args[1], k), " is out of range for size ", n);
        std::memcpy(static_cast<char*>(out.data()) + (j * count + k) * inner * elem,
                    static_cast<const char*>(args[0].data()) + (j * n + index) * inner * elem, inner * elem);
      }
    }
    return out;
  }
  // Elementwise with broadcasting (small tensors only: this keeps per-element indices).
  runtime::Check(out_type.NumElements() <= (int64_t{1} << 22), "too large to fold elementwise");
  NDArray out = NDArray::Empty(out_type.shape, out_type.dtype);
  std::vector<std::vector<int64_t>> strides;
  for (const NDArray& a : args) strides.push_back(BroadcastReadStrides(a.shape(), out_type.shape));
  int64_t total = out_type.NumElements();
  std::vector<std::vector<int64_t>> index(args.size(), std::vector<int64_t>(total));
  for (size_t k = 0; k < args.size(); ++k) {
    ForEachIndex(out_type.shape, strides[k], 0, [&](int64_t o, int64_t i) { index[k][o] = i; });
  }
  bool ints = !IsFloat(args[0].dtype()) && (args.size() < 2 || !IsFloat(args[1].dtype()));
  for (int64_t o = 0; o < total; ++o) {
    auto d = [&](size_t k) { return ReadDouble(args[k], index[k][o]); };
    auto i = [&](size_t k) { return ReadInt(args[k], index[k][o]); };
    double v = 0;
    int64_t iv = 0;
    bool exact = false;
    if (op == "cast") {
      v = d(0);
      iv = IsFloat(args[0].dtype()) ? static_cast<int64_t>(v) : i(0);
      exact = !IsFloat(args[0].dtype());
    } else if (op == "add" || op == "subtract" || op == "multiply" || op == "divide" || op == "maximum" ||
               op == "minimum") {
      if (ints) {
        int64_t a = i(0), b = i(1);
        runtime::Check(op != "divide" || b != 0, "division by zero in a constant expression");
        iv = op == "add" ? a + b : op == "subtract" ? a - b : op == "multiply" ? a * b
             : op == "divide" ? a / b : op == "maximum" ? std::max(a, b) : std::min(a, b);
        exact = true;
      } else {
        double a = d(0), b = d(1);
        v = op == "add" ? a + b : op == "subtract" ? a - b : op == "multiply" ? a * b
            : op == "divide" ? a / b : op == "maximum" ? std::max(a, b) : std::min(a, b);
        if (!IsFloat(out_type.dtype)) throw runtime::Error("mixed int/float arithmetic");
      }
    } else if (op == "equal" || op == "less" || op == "greater" || op == "less_equal" || op == "greater_equal") {
      bool r;
      if (ints) {
        int64_t a = i(0), b = i(1);
        r = op == "equal" ? a == b : op == "less" ? a < b : op == "greater" ? a > b : op == "less_equal" ? a <= b : a >= b;
      } else {
        double a = d(0), b = d(1);
        r = op == "equal" ? a == b : op == "less" ? a < b : op == "greater" ? a > b : op == "less_equal" ? a <= b : a >= b;
      }
      v = r;
      iv = r;
      exact = true;
    } else if (op == "where") {
      bool c = i(0) != 0;
      v = c ? d(1) : d(2);
      iv = c ? i(1) : i(2);
      exact = !IsFloat(out_type.dtype);
    } else if (op == "negative") {
      v = -d(0);
      iv = -i(0);
      exact = !IsFloat(out_type.dtype);
    } else {
      throw runtime::Error("not foldable");
    }
    Write(out, o, v, iv, exact);
  }
  return out;
}

bool Foldable(const std::string& op) {
  static const char* const kOps[] = {"reshape", "squeeze", "expand_dims", "copy", "transpose", "broadcast_to",
                                     "strided_slice", "concatenate", "take", "cast", "add", "subtract", "multiply",
                                     "divide", "maximum", "minimum", "equal", "less", "greater", "less_equal",
                                     "greater_equal", "where", "negative"};
  for (const char* name : kOps) {
    if (op == name) return true;
  }
  return false;
}

}  // namespace

Expr FoldIfConstant(const Expr& expr) {
  const auto* call = expr->As<CallNode>();
  if (call == nullptr || call->op == nullptr || !Foldable(call->op->name) || !expr->type().is_tensor()) return expr;
  if (expr->type().tensor().NumElements() > kMaxFoldedElements) return expr;
  std::vector<NDArray> args;
  for (const Expr& arg : call->args) {
    const auto* c = arg->As<ConstantNode>();
    if (c == nullptr) return expr;
    args.push_back(c->value);
  }
  try {
    return Constant(Evaluate(*call, args));
  } catch (const runtime::Error&) {
    return expr;  // a dtype or case the folder does not handle: keep the call
  }
}

}  // namespace kiln::frontend
