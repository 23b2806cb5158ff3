// ONNX's signal ops whose results follow from constants: the Hann, Hamming and Blackman windows,
// computed at import as ONNX's reference computes them, or as the graph runs when their size is
// given then (dyn.window).
#include "frontend/onnx/converter.h"
#include "kernels/elementwise/scalar_ops.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kCast("cast");
const OpRef kDynWindow("dyn.window");
const OpRef kDynWindowShape("dyn.window_shape");
const OpRef kReshape("reshape");

using Outputs = std::vector<Expr>;

// A window of `size` points from w(n, N1), N1 the size when periodic (the default), else size - 1;
// in the output_datatype attribute's type (float32 by default).
template <typename Window>
Outputs MakeWindow(const NodeContext& c, const char* kind, Window w) {
  DLDataType dtype = OnnxDType(static_cast<int32_t>(c.attr_int("output_datatype", onnx::TensorProto::FLOAT)));
  if (!c.IsConstant(0)) {  // a size given at run time (ir/ops/run_time_sized.cc)
    if (c.input_type(0).NumElements() != 1) c.FailAt("input 0", "the size must be one value");
    Expr size = c.input(0);
    if (c.input_type(0).dtype != DLDataType{kDLInt, 64, 1}) {
      size = c.Op(kCast, {size}, MakeAttrs({{"dtype", std::string("int64")}}));
    }
    size = c.Op(kReshape, {size}, MakeAttrs({{"newshape", std::vector<int64_t>{}}}));
    Attrs attrs = MakeAttrs({{"kind", std::string(kind)}, {"periodic", c.attr_int("periodic", 1) != 0 ? int64_t{1} : 0},
                             {"dtype", runtime::DTypeToString(dtype)}});
    return {SizedAtRunTime(c, kDynWindowShape, kDynWindow, {size}, {size}, attrs, Attrs{})};
  }
  std::vector<int64_t> size = c.ConstantInts(0);
  if (size.size() != 1 || size[0] < 0 || size[0] > (int64_t{1} << 24)) {
    c.FailAt("input 0", "the size must be one value in [0, 2^24]");
  }
  double n1 = static_cast<double>(c.attr_int("periodic", 1) != 0 ? size[0] : size[0] - 1);
  runtime::NDArray values = runtime::NDArray::Empty({size[0]}, DLDataType{kDLFloat, 64, 1});
  for (int64_t n = 0; n < size[0]; ++n) static_cast<double*>(values.data())[n] = w(static_cast<double>(n), n1);
  return {c.Op(kCast, {Constant(values)}, MakeAttrs({{"dtype", runtime::DTypeToString(dtype)}}))};
}

Outputs HannWindow(const NodeContext& c) { return MakeWindow(c, "hann", kernels::scalar::HannWindow); }

Outputs HammingWindow(const NodeContext& c) { return MakeWindow(c, "hamming", kernels::scalar::HammingWindow); }

Outputs BlackmanWindow(const NodeContext& c) { return MakeWindow(c, "blackman", kernels::scalar::BlackmanWindow); }

}  // namespace

void AddSignalConverters(ConverterTable& table) {
  Register(table, "HannWindow", HannWindow, 17);
  Register(table, "HammingWindow", HammingWindow, 17);
  Register(table, "BlackmanWindow", BlackmanWindow, 17);
}

}  // namespace kiln::frontend
