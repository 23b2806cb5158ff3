// LegalizeNarrowFloats.
#include "transform/legalize_narrow_floats.h"

#include <set>

#include "runtime/dtype.h"

namespace kiln::transform {

using namespace ir;

namespace {

const OpRef kCast("cast");

// float16, bfloat16 and the float8 formats.
bool IsNarrowFloat(const Type& type) {
  if (!type.is_tensor()) return false;
  DLDataType d = type.tensor().dtype;
  return d == DLDataType{kDLFloat, 16, 1} || d == DLDataType{kDLBfloat, 16, 1} || runtime::IsFloat8(d);
}

// Ops that only move or copy elements: they run on the narrow formats as they are.
bool MovesData(const std::string& op) {
  static const std::set<std::string> moves = {"cast",         "reshape",      "squeeze",   "expand_dims",
                                              "transpose",    "concatenate",  "split",     "strided_slice",
                                              "take",         "broadcast_to", "tile",      "copy",
                                              "gather",       "gather_nd",    "layout_transform"};
  return moves.count(op) != 0;
}

Expr CastTo(const Expr& x, const char* dtype) {
  Attrs attrs;
  attrs.Set("dtype", std::string(dtype));
  return Call(kCast, {x}, attrs);
}

Expr CastBack(const Expr& x, const Type& narrow) {
  return CastTo(x, runtime::DTypeToString(narrow.tensor().dtype).c_str());
}

}  // namespace

Expr LegalizeNarrowFloats(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  Expr body = Rewrite(f->body, [](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    const auto* call = original->As<CallNode>();
    if (call == nullptr || call->op == nullptr || MovesData(call->op->name)) return WithInputs(original, inputs);
    const Type& type = original->type();
    bool touches = IsNarrowFloat(type);
    for (size_t k = 0; !type.is_tensor() && k < type.fields().size(); ++k) touches = touches || IsNarrowFloat(type.fields()[k]);
    for (const Expr& in : inputs) touches = touches || IsNarrowFloat(in->type());
    if (!touches) return WithInputs(original, inputs);
    std::vector<Expr> widened;
    for (const Expr& in : inputs) widened.push_back(IsNarrowFloat(in->type()) ? CastTo(in, "float32") : in);
    Expr computed = Call(*call->op, widened, call->attrs);
    if (type.is_tensor()) return IsNarrowFloat(type) ? CastBack(computed, type) : computed;
    // A tuple (topk, split): each float16 field cast back.
    std::vector<Expr> fields;
    for (size_t k = 0; k < type.fields().size(); ++k) {
      Expr field = TupleGetItem(computed, static_cast<int>(k));
      fields.push_back(IsNarrowFloat(type.fields()[k]) ? CastBack(field, type.fields()[k]) : field);
    }
    return Tuple(fields);
  });
  return Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
