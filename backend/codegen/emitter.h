// Printing a plan as C++: the writer, the element expressions of elementwise ops, and the
// emitters of ops written as loops (LoopOp steps). Emitters work on dense row-major buffers given
// as pointer expressions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backend/codegen/plan.h"
#include "ir/expr.h"

namespace kiln::backend {

// Collects generated code with indentation.
class CodeWriter {
 public:
  void Line(const std::string& text) { text_ += std::string(indent_ * 2, ' ') + text + "\n"; }
  void Open(const std::string& text) { Line(text + " {"); ++indent_; }
  void Close(const std::string& suffix = "") { --indent_; Line("}" + suffix); }
  const std::string& text() const { return text_; }
  // A name not used before in this writer ("t3").
  std::string Fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }
  // The shape dimensions the function takes (kiln_d0, ...; host_codegen.h): its threaded loops
  // pass them on.
  int num_dims() const { return num_dims_; }
  void set_num_dims(int num_dims) { num_dims_ = num_dims; }
  // Whether the function's extents may depend on them (Plan::extents_vary): then nothing it
  // writes may depend on an extent's value other than through its literal.
  bool extents_vary() const { return extents_vary_; }
  void set_extents_vary(bool vary) { extents_vary_ = vary; }
  // With shape dimensions: the elements from which a loop is split across threads, decided when
  // it runs (Plan::parallel_elements); 0 otherwise.
  int64_t parallel_elements() const { return parallel_elements_; }
  void set_parallel_elements(int64_t elements) { parallel_elements_ = elements; }

 private:
  std::string text_;
  int indent_ = 0;
  int counter_ = 0;
  int num_dims_ = 0;
  bool extents_vary_ = false;
  int64_t parallel_elements_ = 0;
};

struct EmitContext {
  CodeWriter& code;
  const ir::CallNode& call;
  std::vector<std::string> inputs;  // pointer expressions, typed (const float* ...)
  std::vector<ir::TensorType> input_types;
  std::vector<std::string> outputs;  // one per output tensor
  std::vector<ir::TensorType> output_types;
  std::string function;  // the generated function's name, for error messages
  bool parallel = false;  // OpenOutputLoops may split its loops across the runtime's threads
};

// Writes the loops computing one op (a LoopOp of the plan).
using OpEmitter = void (*)(EmitContext& context);

// The C++ expression of one output element of an elementwise op from the expressions `v` of its
// input elements, computed in C++ type `t`.
using ElementExpr = std::string (*)(const ir::CallNode& call, const std::vector<std::string>& v, const std::string& t);

// The variable holding a buffer of the plan in the operator function: p<i>, out<i> or t<i>.
std::string BufferName(const PlanBuffer& buffer);

// The C++ type of a dtype ("float", "int64_t", "uint8_t" for bool); throws Error for dtypes the
// generator does not handle.
std::string CType(DLDataType dtype);
// "5LL"
std::string IntLiteral(int64_t value);
// "{1LL, 2LL, 3LL}"
std::string IntList(const std::vector<int64_t>& values);
// The quotient rounded up: "7LL", or in a function whose extents vary "((100LL + 15LL) / 16LL)",
// an expression of the value's literal, which stays right when the value becomes an expression
// of the dimensions (a rounded quotient is not a polynomial of them; backend/generalize_dims.h).
std::string CeilDivText(const CodeWriter& code, int64_t value, int64_t divisor);
// A float literal that reads back bit-exactly ("0.100000001f", "-INFINITY").
std::string FloatLiteral(double value);
// A float literal of the value as float ("0.5f", INFINITY, NAN).
std::string Float32Literal(float value);

// A tensor of `shape` seen as [outer, shape[axis], inner] around the `axis` attribute of `call`
// (negative counts from the back).
struct AxisView {
  int axis = 0;
  int64_t outer = 1, inner = 1;
};
AxisView ViewAroundAxis(const ir::CallNode& call, const std::vector<int64_t>& shape);

// Opens one loop per dimension of `shape` (i0, i1, ...); returns how many CloseLoops closes.
int OpenLoops(CodeWriter& code, const std::vector<int64_t>& shape);
void CloseLoops(CodeWriter& code, int count);

// A buffer a parallel loop's function reads or writes: its name in the operator function and its
// element type ("const float").
struct ParallelBuffer {
  std::string name, type;
};
// Adds a buffer once (read-only unless some use writes it).
void AddParallelBuffer(std::vector<ParallelBuffer>* buffers, const std::string& name, const ir::TensorType& type,
                       bool writable);
// Opens `ParallelFor(tasks, body, context_)` with the body a captureless lambda over [begin_, end_):
// the buffers travel in an array of pointers and are declared again inside under their names
// (static tables stay visible), and so do the shape dimensions kiln_d<i> (CodeWriter::num_dims).
// The body must not return; CloseParallelFor closes it, and the operator function fails when a
// task did. `tasks` is an expression (IntLiteral, CeilDivText, ...); `elements`, the loop's, split
// it across threads or not when it runs, in a function with shape dimensions
// (CodeWriter::parallel_elements).
void OpenParallelFor(CodeWriter& code, const std::vector<ParallelBuffer>& buffers, const std::string& tasks,
                     int64_t elements);
void OpenParallelFor(CodeWriter& code, const std::vector<ParallelBuffer>& buffers, int64_t tasks, int64_t elements);
void CloseParallelFor(CodeWriter& code);

// A loop nest over `shape` (one dimension or more) split into tasks of its inner dimensions, those
// from first_inner on (`inner` elements: at least 64 where that leaves at least 16 tasks and an
// outer dimension). In a function whose extents vary (`code`) a task is one row, the last
// dimension: the split cannot depend on extents known only at run time.
struct TaskSplit {
  int first_inner = 0;
  int64_t inner = 1;
  int64_t tasks = 0;
};
TaskSplit SplitIntoTasks(const CodeWriter& code, const std::vector<int64_t>& shape);
// Inside OpenParallelFor's body: the loop over its tasks, each task's outer indices, and the inner
// loops, declaring i0, i1, ... (and `counter`, the flat index of the task's first element, when
// not empty); `at_index(d)`, when given, writes what depends on indices 0..d only, once they are
// declared. Returns how many CloseLoops closes.
int OpenTaskLoops(CodeWriter& code, const std::vector<int64_t>& shape, const TaskSplit& split,
                  const std::string& counter, const std::function<void(int)>& at_index = nullptr);

// Opens loops i0, i1, ... over the output's shape in order, with `counter` (declared here) its flat
// index; when c.parallel, the output is split across the runtime's threads in tasks of its inner
// dimensions (OpenParallelFor: the body must not return). CloseOutputLoops closes what this opened.
struct OutputLoops {
  int open = 0;
  bool parallel = false;
};
OutputLoops OpenOutputLoops(EmitContext& c, const std::string& counter);
// The loops over the output's first `loop_dims` axes only (the body handles the axes after them
// at once): `counter` counts those loops' steps.
OutputLoops OpenOutputLoops(EmitContext& c, const std::string& counter, int loop_dims);
void CloseOutputLoops(EmitContext& c, const OutputLoops& loops);

// Declares int64_t `name` = `value`, counted from the end of an axis of length `extent` when
// negative; the function fails naming the op when it is outside [0, extent).
void ReadIndex(EmitContext& c, const std::string& name, const std::string& value, int64_t extent);

// Declares a static table of `values` (each printed by `print`) in the generated code; returns its
// fresh name, made from `prefix`. `values` must not be empty.
template <typename T, typename Print>
std::string StaticTable(EmitContext& c, const std::string& type, const std::string& prefix, const std::vector<T>& values,
                        Print print) {
  std::string name = c.code.Fresh(prefix);
  std::string text = "static const " + type + " " + name + "[] = {";
  for (size_t i = 0; i < values.size(); ++i) text += (i > 0 ? (i % 16 == 0 ? ",\n    " : ", ") : "") + print(values[i]);
  c.code.Line(text + "};");
  return name;
}

// The loop of an ElementwiseLoop step of `plan`.
void EmitElementwiseLoop(CodeWriter& code, const ElementwiseLoop& loop, const Plan& plan);
// Writes a GatherLoop step (gather_emitter.cc).
void EmitGatherLoop(CodeWriter& code, const GatherLoop& loop, const Plan& plan);
// The longest run of consecutive output elements of `call`, a data-movement op, that the gather
// loop may copy from consecutive input elements: any run of that length (or a divisor of it) that
// starts at a multiple of it in the output starts at a multiple of it in the input. 0 for an op
// that a gather loop does not compute.
int64_t GatherRunBound(const ir::CallNode& call);

// Where a strided_slice of an input of shape `in` starts on each axis and its step there.
struct SliceGeometry {
  std::vector<int64_t> start, step;
};
SliceGeometry SliceGeometryOf(const ir::CallNode& call, const std::vector<int64_t>& in);

// The emitters of each op family.
void EmitReduce(EmitContext& context);
void EmitArgReduce(EmitContext& context);
void EmitGlobalAvgPool2D(EmitContext& context);
void EmitMaxPool2DWithIndices(EmitContext& context);
void EmitTranspose(EmitContext& context);
void EmitConcatenate(EmitContext& context);
void EmitStridedSlice(EmitContext& context);
void EmitTake(EmitContext& context);
void EmitSplit(EmitContext& context);
void EmitPad(EmitContext& context);
void EmitTrilu(EmitContext& context);
void EmitTile(EmitContext& context);
void EmitGather(EmitContext& context);
void EmitGatherNd(EmitContext& context);
void EmitScatterElements(EmitContext& context);
void EmitScatterNd(EmitContext& context);
void EmitOneHot(EmitContext& context);
void EmitCumsum(EmitContext& context);
void EmitLayoutTransform(EmitContext& context);
void EmitResize(EmitContext& context);
void EmitNonZero(EmitContext& context);
void EmitCompress(EmitContext& context);
// Running sums (cumsum's attributes) along the middle of [outer, extent, inner], each a C++
// expression: literals for a fixed axis, variables for one given at run time.
void EmitCumsumLoops(EmitContext& context, const std::string& outer, const std::string& extent,
                     const std::string& inner);
// Shared by the emitters of ops whose shapes input values decide (run_time_shape_emitter.cc):
// "\"<function>: <op>\"", the place their kernels' messages name;
std::string OpWhere(const EmitContext& context);
// declares `name`, an int64_t array of `type`'s static shape padded in front with 1s to `rank` axes;
void DeclareStaticShape(EmitContext& context, const std::string& name, const ir::TensorType& type, int64_t rank);
// declares `name`, an array of input `i`'s values in C++ type `type`; returns their count.
int64_t DeclareInputValues(EmitContext& context, size_t i, const std::string& name, const std::string& type = "int64_t");
void EmitDynReshape(EmitContext& context);
void EmitDynSqueeze(EmitContext& context);
void EmitDynUnsqueeze(EmitContext& context);
void EmitDynReduce(EmitContext& context);
void EmitDynStridedSlice(EmitContext& context);
void EmitDynTopk(EmitContext& context);
void EmitDynSplit(EmitContext& context);
void EmitDynCumsum(EmitContext& context);
void EmitDynExpandShape(EmitContext& context);
void EmitDynTileShape(EmitContext& context);
void EmitDynPadShape(EmitContext& context);
void EmitDynValuesShape(EmitContext& context);
void EmitDynRangeShape(EmitContext& context);
void EmitDynExpand(EmitContext& context);
void EmitDynTile(EmitContext& context);
void EmitDynPad(EmitContext& context);
void EmitDynConstantOfShape(EmitContext& context);
void EmitDynRange(EmitContext& context);
void EmitDynResizeShape(EmitContext& context);
void EmitDynOneHotShape(EmitContext& context);
void EmitDynOneHot(EmitContext& context);
void EmitDynWindowShape(EmitContext& context);
void EmitDynWindow(EmitContext& context);
void EmitDynCenterCropPadShape(EmitContext& context);
void EmitDynCenterCropPad(EmitContext& context);
void EmitDynAffineGridShape(EmitContext& context);
void EmitDynAffineGrid(EmitContext& context);
void EmitDynResize(EmitContext& context);
void EmitTfIdfVectorizer(EmitContext& context);

}  // namespace kiln::backend
