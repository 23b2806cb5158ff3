// Generating the C++ of one operator function.
#include "backend/codegen/host_codegen.h"

#include <map>
#include <set>
#include <unordered_map>

#include "backend/codegen/emitter.h"
#include "runtime/error.h"
#include "transform/pattern.h"

namespace kiln::backend {

using namespace ir;

namespace {

struct Buffer {
  std::string pointer;  // a typed pointer variable
  TensorType type;
};

std::string SpecFor(const TensorType& t, const std::string& shape_name) {
  return "{" + std::to_string(t.dtype.code) + ", " + std::to_string(t.dtype.bits) + ", " + std::to_string(t.ndim()) +
         ", " + shape_name + "}";
}

// One tensor a function returns: result `index` of value `value`.
struct OutputRef {
  Expr value;
  size_t index;
};

// The tensors a function returns, in output order (a tuple's fields, a tuple-valued call's
// results, or the single tensor).
std::vector<OutputRef> OutputsOf(const Expr& body) {
  std::vector<OutputRef> outputs;
  auto add = [&](const Expr& e) {
    if (const auto* item = e->As<TupleGetItemNode>()) {
      outputs.push_back({item->tuple, static_cast<size_t>(item->index)});
    } else if (e->type().is_tuple()) {
      for (size_t r = 0; r < e->type().fields().size(); ++r) outputs.push_back({e, r});
    } else {
      outputs.push_back({e, 0});
    }
  };
  if (const auto* tuple = body->As<TupleNode>()) {
    for (const Expr& field : tuple->fields) add(field);
  } else {
    add(body);
  }
  return outputs;
}

const OpRef kMultiply("multiply");
const OpRef kSigmoid("sigmoid");

// The value x * sigmoid(x) when `x`'s readers are exactly that sigmoid (read only there) and
// that multiply; null otherwise.
const CallNode* SwishOf(const Expr& x, const std::unordered_map<const ExprNode*, std::vector<Expr>>& readers,
                        const std::set<const ExprNode*>& returned, Expr* sigmoid, Expr* multiply) {
  static const transform::Pattern value = transform::Wildcard();
  static const transform::Pattern sigmoid_of_value = transform::IsOp(kSigmoid, {value});
  static const transform::Pattern swish = transform::IsOp(kMultiply, {value, sigmoid_of_value}).Commutative();
  auto it = readers.find(x.get());
  if (it == readers.end() || it->second.size() != 2) return nullptr;
  for (const Expr& reader : it->second) {
    std::optional<transform::Match> match = transform::MatchPattern(swish, reader);
    if (!match || (*match)[value] != x) continue;
    Expr sig = (*match)[sigmoid_of_value];
    auto sig_readers = readers.find(sig.get());
    if (sig_readers == readers.end() || sig_readers->second.size() != 1 || returned.count(sig.get()) != 0) continue;
    *sigmoid = sig;
    *multiply = reader;
    return reader->As<CallNode>();
  }
  return nullptr;
}

// The ops that read `anchor`'s result one after another, each the only reader of the one before
// and none returned before the last, whose other operands are parameters (so they can move up
// to the anchor), as links: the ops one FusedOp (in `ops`) stands for, its result last. A link
// is one op, or the sigmoid and multiply of x * sigmoid(x).
std::vector<std::vector<Expr>> EpilogueChain(const Expr& anchor,
                                             const std::unordered_map<const ExprNode*, std::vector<Expr>>& readers,
                                             const std::set<const ExprNode*>& returned,
                                             const std::unordered_map<const ExprNode*, std::vector<Buffer>>& buffers,
                                             std::vector<FusedOp>* ops) {
  std::vector<std::vector<Expr>> links;
  Expr current = anchor;
  while (returned.count(current.get()) == 0 && current->type().is_tensor()) {
    Expr sigmoid, multiply;
    if (const CallNode* swish = SwishOf(current, readers, returned, &sigmoid, &multiply)) {
      ops->push_back(FusedOp{swish, "", {}, false, true});
      links.push_back({sigmoid, multiply});
      current = multiply;
      continue;
    }
    auto it = readers.find(current.get());
    if (it == readers.end() || it->second.size() != 1) break;
    const Expr& next = it->second[0];
    const auto* call = next->As<CallNode>();
    if (call == nullptr || call->op == nullptr || call->args.size() > 2) break;
    FusedOp op{call, "", {}, false, false};
    bool ok = true;
    for (size_t i = 0; i < call->args.size(); ++i) {
      if (call->args[i] == current) continue;
      ok = ok && call->args[i]->kind() == ExprKind::kVar && op.operand.empty();
      if (!ok) break;
      const Buffer& b = buffers.at(call->args[i].get()).at(0);
      op = FusedOp{call, b.pointer, b.type, i == 0, false};
    }
    if (!ok) break;
    ops->push_back(op);
    links.push_back({next});
    current = next;
  }
  return links;
}

// Emits the run of elementwise ops that starts at order[begin] as one loop: the ops that follow
// it in order while each is elementwise, has the first one's output shape, is not in an earlier
// kernel's epilogue, and reads only values computed before the run or in it. A member gets a
// buffer only when something outside the run reads it or the function returns it. Returns the
// position after the run.
template <typename Allocate>
size_t EmitElementwiseRun(const std::vector<Expr>& order, size_t begin,
                          const std::unordered_map<const ExprNode*, std::vector<Expr>>& readers,
                          const std::set<const ExprNode*>& returned, const std::set<const ExprNode*>& fused,
                          std::unordered_map<const ExprNode*, std::vector<Buffer>>& buffers, Allocate allocate,
                          CodeWriter& code) {
  const TensorType& shape_type = order[begin]->type().tensor();
  std::unordered_map<const ExprNode*, int> members;
  std::vector<Expr> run;
  size_t end = begin;
  for (; end < order.size(); ++end) {
    if (order[end]->kind() == ExprKind::kVar) continue;  // parameters have their buffers
    const auto* call = order[end]->As<CallNode>();
    if (call == nullptr || call->op == nullptr || FindLowering(*call->op)->element == nullptr) break;
    if (fused.count(order[end].get()) != 0) break;  // computed in an earlier kernel's epilogue
    if (!order[end]->type().is_tensor() || order[end]->type().tensor().shape != shape_type.shape) break;
    bool ready = true;
    for (const Expr& arg : call->args) ready = ready && (members.count(arg.get()) != 0 || buffers.count(arg.get()) != 0);
    if (!ready) break;
    members[order[end].get()] = static_cast<int>(run.size());
    run.push_back(order[end]);
  }
  std::vector<ElementwiseMember> group;
  for (const Expr& e : run) {
    const auto* call = e->As<CallNode>();
    ElementwiseMember member{call, {}, {}, {}, "", e->type().tensor()};
    for (const Expr& arg : call->args) {
      auto inside = members.find(arg.get());
      member.member_inputs.push_back(inside == members.end() ? -1 : inside->second);
      const Buffer* b = inside == members.end() ? &buffers.at(arg.get()).at(0) : nullptr;
      member.inputs.push_back(b != nullptr ? b->pointer : "");
      member.input_types.push_back(b != nullptr ? b->type : arg->type().tensor());
    }
    bool needed = returned.count(e.get()) != 0;
    auto it = readers.find(e.get());
    if (it != readers.end()) {
      for (const Expr& reader : it->second) needed = needed || members.count(reader.get()) == 0;
    }
    if (needed) {
      member.output = allocate(e, 0, member.output_type);
      buffers[e.get()] = {{member.output, member.output_type}};
    }
    group.push_back(std::move(member));
  }
  code.Open("");
  EmitElementwiseGroup(code, group);
  code.Close();
  return end;
}

}  // namespace

std::string OperatorSourcePrelude() {
  return "// Generated by kiln. Operators of the packed C ABI over the kernel library.\n"
         "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstring>\n#include <limits>\n\n"
         "#include \"kernels/backend_api.h\"\n#include \"kernels/kernels.h\"\n#include \"kernels/math.h\"\n\n";
}

std::string GenerateOperatorSource(const std::string& symbol, const Expr& primitive) {
  const auto* f = primitive->As<FunctionNode>();
  runtime::CheckInternal(f != nullptr, "host codegen: ", symbol, " is not a function");
  std::vector<OutputRef> outputs = OutputsOf(f->body);
  CodeWriter code;
  code.Open("extern \"C\" TVM_DLL int " + symbol +
            "(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value, int* out_ret_tcode, "
            "void* resource_handle)");
  code.Line("(void)out_ret_value; (void)out_ret_tcode; (void)resource_handle;");

  // Argument specs: parameters, then outputs.
  std::vector<TensorType> arg_types;
  for (const Expr& p : f->params) arg_types.push_back(p->type().tensor());
  for (const OutputRef& o : outputs) {
    const Type& t = o.value->type();
    arg_types.push_back(t.is_tuple() ? t.fields()[o.index].tensor() : t.tensor());
  }
  std::string specs;
  for (size_t i = 0; i < arg_types.size(); ++i) {
    std::string shape = "shape" + std::to_string(i);
    code.Line("static const int64_t " + shape + "[] = " + IntList(arg_types[i].shape.empty() ? std::vector<int64_t>{0} : arg_types[i].shape) + ";");
    specs += (i > 0 ? ", " : "") + SpecFor(arg_types[i], shape);
  }
  code.Line("static const kiln::kernels::ArgSpec specs[] = {" + specs + "};");
  code.Line("if (kiln::kernels::CheckArgs(\"" + symbol + "\", args, type_codes, num_args, specs, " +
            std::to_string(arg_types.size()) + ") != 0) return -1;");

  std::unordered_map<const ExprNode*, std::vector<Buffer>> buffers;  // per value: its tensors
  for (size_t i = 0; i < f->params.size(); ++i) {
    std::string name = "p" + std::to_string(i);
    code.Line("const " + CType(arg_types[i].dtype) + "* " + name + " = static_cast<const " + CType(arg_types[i].dtype) +
              "*>(kiln::kernels::ArgData(args, " + std::to_string(i) + "));");
    buffers[f->params[i].get()] = {{name, arg_types[i]}};
  }
  // Output buffers; a value that is an output is computed straight into it.
  std::map<std::pair<const ExprNode*, size_t>, size_t> output_slots;  // (value, result) -> output
  for (size_t k = 0; k < outputs.size(); ++k) {
    const TensorType& t = arg_types[f->params.size() + k];
    std::string name = "out" + std::to_string(k);
    code.Line(CType(t.dtype) + "* " + name + " = static_cast<" + CType(t.dtype) + "*>(kiln::kernels::ArgData(args, " +
              std::to_string(f->params.size() + k) + "));");
    output_slots.emplace(std::make_pair(outputs[k].value.get(), outputs[k].index), k);
  }

  std::vector<Expr> order = PostOrder(f->body);
  std::unordered_map<const ExprNode*, std::vector<Expr>> readers;  // within the function
  for (const Expr& e : order) {
    for (const Expr& input : Inputs(e)) readers[input.get()].push_back(e);
  }
  std::set<const ExprNode*> returned;
  for (const OutputRef& o : outputs) returned.insert(o.value.get());
  std::set<const ExprNode*> fused;  // ops computed in the epilogue of an earlier op

  // The buffer of a value computed here: the output it is returned as, or new workspace.
  auto allocate = [&](const Expr& value, size_t result, const TensorType& t) {
    auto slot = output_slots.find(std::make_pair(value.get(), result));
    if (slot != output_slots.end()) return "out" + std::to_string(slot->second);
    std::string workspace = code.Fresh("w");
    std::string name = code.Fresh("t");
    code.Line("kiln::kernels::Workspace " + workspace + "(" + std::to_string(t.NumBytes()) + "ULL);");
    code.Line("if (!" + workspace + ".ok()) return -1;");
    code.Line(CType(t.dtype) + "* " + name + " = " + workspace + ".as<" + CType(t.dtype) + ">();");
    return name;
  };

  for (size_t position = 0; position < order.size(); ++position) {
    const Expr& e = order[position];
    if (e->kind() == ExprKind::kVar || e->kind() == ExprKind::kTuple || fused.count(e.get()) != 0) continue;
    if (const auto* item = e->As<TupleGetItemNode>()) {
      buffers[e.get()] = {buffers.at(item->tuple.get()).at(item->index)};
      continue;
    }
    const auto* call = e->As<CallNode>();
    runtime::CheckInternal(call != nullptr && call->op != nullptr, "host codegen: ", symbol,
                           " holds something other than op calls (constants must be parameters)");
    const Lowering* lowering = FindLowering(*call->op);
    runtime::CheckInternal(lowering != nullptr, "op ", call->op->name, " has no lowering");
    if (lowering->element != nullptr) {
      position = EmitElementwiseRun(order, position, readers, returned, fused, buffers, allocate, code) - 1;
      continue;
    }
    EmitContext context{code, *call, {}, {}, {}, {}, symbol, {}};
    for (const Expr& arg : call->args) {
      const Buffer& b = buffers.at(arg.get()).at(0);
      context.inputs.push_back(b.pointer);
      context.input_types.push_back(b.type);
    }
    // Ops the kernel applies as its epilogue: the result is that of the last of them.
    std::vector<std::vector<Expr>> links = EpilogueChain(e, readers, returned, buffers, &context.epilogue);
    context.epilogue.resize(links.empty() ? 0 : FusedEpilogueLength(*call, context.input_types, context.epilogue));
    links.resize(context.epilogue.size());
    std::vector<Expr> chain;
    for (const std::vector<Expr>& link : links) chain.insert(chain.end(), link.begin(), link.end());
    Expr result = chain.empty() ? e : chain.back();
    for (const Expr& member : chain) fused.insert(member.get());
    std::vector<TensorType> result_types;
    if (e->type().is_tuple()) {
      for (const Type& t : e->type().fields()) result_types.push_back(t.tensor());
    } else {
      result_types.push_back(e->type().tensor());
    }
    std::vector<Buffer>& results = buffers[result.get()];
    for (size_t r = 0; r < result_types.size(); ++r) {
      const TensorType& t = result_types[r];
      std::string name = allocate(result, r, t);
      results.push_back({name, t});
      context.outputs.push_back(name);
      context.output_types.push_back(t);
    }
    for (const Expr& member : chain) buffers[member.get()] = results;
    if (result != e) buffers[e.get()] = results;
    code.Open("");  // a scope per op keeps the emitters' local names apart
    lowering->emit(context);
    code.Close();
  }
  // Outputs not computed in place (parameters returned as they are, a value returned twice,
  // tuple items): copy them.
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Buffer& b = buffers.at(outputs[k].value.get()).at(outputs[k].index);
    std::string out = "out" + std::to_string(k);
    if (b.pointer != out) {
      code.Line("std::memcpy(" + out + ", " + b.pointer + ", " + std::to_string(b.type.NumBytes()) + "ULL);");
    }
  }
  code.Line("return 0;");
  code.Close();
  return code.text();
}

}  // namespace kiln::backend
