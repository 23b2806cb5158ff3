// LegalizeFloat16.
#include "transform/legalize_float16.h"

#include <set>

namespace kiln::transform {

using namespace ir;

namespace {

const OpRef kCast("cast");

const DLDataType kFloat16{kDLFloat, 16, 1};

bool IsFloat16(const Type& type) { return type.is_tensor() && type.tensor().dtype == kFloat16; }

// Ops that only move or copy elements: they run on float16 as they are.
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

}  // namespace

Expr LegalizeFloat16(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  Expr body = Rewrite(f->body, [](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    const auto* call = original->As<CallNode>();
    if (call == nullptr || call->op == nullptr || MovesData(call->op->name)) return WithInputs(original, inputs);
    const Type& type = original->type();
    bool touches = IsFloat16(type);
    for (size_t k = 0; !type.is_tensor() && k < type.fields().size(); ++k) touches = touches || IsFloat16(type.fields()[k]);
    for (const Expr& in : inputs) touches = touches || IsFloat16(in->type());
    if (!touches) return WithInputs(original, inputs);
    std::vector<Expr> widened;
    for (const Expr& in : inputs) widened.push_back(IsFloat16(in->type()) ? CastTo(in, "float32") : in);
    Expr computed = Call(*call->op, widened, call->attrs);
    if (type.is_tensor()) return IsFloat16(type) ? CastTo(computed, "float16") : computed;
    // A tuple (topk, split): each float16 field cast back.
    std::vector<Expr> fields;
    for (size_t k = 0; k < type.fields().size(); ++k) {
      Expr field = TupleGetItem(computed, static_cast<int>(k));
      fields.push_back(IsFloat16(type.fields()[k]) ? CastTo(field, "float16") : field);
    }
    return Tuple(fields);
  });
  return Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
