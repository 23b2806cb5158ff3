// libonnx's shape inference and checker on an imported model (libonnx_check.h).
#include "frontend/onnx/libonnx_check.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/inference_guards.h"
#include "runtime/error.h"
#include "runtime/text.h"

namespace kiln::frontend {
namespace {

// ONNX Runtime runs ops of the default domain that libonnx 1.12 has no schema for at the model's
// opset, and its transformers optimizer writes them: LayerNormalization below opset 17 (ONNX made
// ONNX Runtime's op standard at 17) and SimplifiedLayerNormalization. libonnx's checker rejects a
// default-domain node it has no schema for; while it runs, the nodes kiln converts among those are
// moved to a domain of their own, whose nodes it leaves alone (as it does com.microsoft's): their
// converters check them. In subgraphs too. Restored when the check ends.
class DefaultDomainOpsUnknownToLibonnx {
 public:
  DefaultDomainOpsUnknownToLibonnx(onnx::ModelProto& model, int64_t opset) : model_(model) {
    MoveAside(*model.mutable_graph(), opset);
    if (moved_.empty()) return;
    auto* import = model.add_opset_import();
    import->set_domain(kDomain);
    import->set_version(1);
  }
  ~DefaultDomainOpsUnknownToLibonnx() {
    if (moved_.empty()) return;
    for (auto& [node, domain] : moved_) node->set_domain(domain);
    model_.mutable_opset_import()->RemoveLast();
  }
  DefaultDomainOpsUnknownToLibonnx(const DefaultDomainOpsUnknownToLibonnx&) = delete;
  DefaultDomainOpsUnknownToLibonnx& operator=(const DefaultDomainOpsUnknownToLibonnx&) = delete;

 private:
  // The graph's nodes of those ops, and those of the graphs its nodes hold (If's branches, Loop's
  // and Scan's bodies), at any depth.
  void MoveAside(onnx::GraphProto& graph, int64_t opset) {
    for (auto& node : *graph.mutable_node()) {
      bool default_domain = KeyOf(node).domain.empty();
      if (default_domain && FindConverter(node) != nullptr &&
          onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), "") == nullptr) {
        moved_.push_back({&node, node.domain()});
        node.set_domain(kDomain);
      }
      for (auto& attribute : *node.mutable_attribute()) {
        if (attribute.has_g()) MoveAside(*attribute.mutable_g(), opset);
        for (auto& body : *attribute.mutable_graphs()) MoveAside(body, opset);
      }
    }
  }

  static constexpr const char* kDomain = "kiln.onnxruntime_default_domain";
  onnx::ModelProto& model_;
  std::vector<std::pair<onnx::NodeProto*, std::string>> moved_;
};

}  // namespace

void CheckWithLibonnx(onnx::ModelProto& model, int64_t opset) {
  DefaultDomainOpsUnknownToLibonnx moved(model, opset);
  // Newer exporters write IR versions this ONNX library's checker does not know; the graph
  // constructs kiln imports are the same in them, so check the model as the newest IR it knows.
  if (model.ir_version() > onnx::IR_VERSION) model.set_ir_version(onnx::IR_VERSION);
  // Before IR version 4 initializers are graph inputs too: the checker's rule, checked here before
  // shape inference, which does not type an initializer missing from the inputs and then crashes.
  if (model.ir_version() < 4) {
    std::set<std::string> inputs;
    for (const auto& input : model.graph().input()) inputs.insert(input.name());
    for (const auto& init : model.graph().initializer()) {
      runtime::Check(inputs.count(init.name()) != 0, "initializer '", runtime::ValidUtf8(init.name()),
                     "' is not a graph input, as IR version ", model.ir_version(), " wants (from version 4 it need not be)");
    }
  }
  // Shape inference first: it also fills the output shapes the checker wants to see.
  try {
    onnx::ShapeInferenceOptions inference(/*check_type=*/true, /*error_mode=*/1, /*enable_data_propagation=*/true);
    // Through GuardedSchemaRegistry: libonnx's inference crashes on some malformed nodes.
    onnx::shape_inference::InferShapes(model, &GuardedSchemaRegistry::Instance(), inference);
  } catch (const std::exception& e) {
    runtime::Fail("ONNX shape inference fails on the model: ", e.what());
  }
  try {
    // The checker wants a shape on every graph output, but ONNX's inference leaves some
    // unsettled (a Reshape whose shape is computed, at some opsets); kiln infers those itself,
    // so check a copy without them (copied only when there are any: weights can be large).
    auto unsettled = [](const onnx::ValueInfoProto& v) {
      return v.type().has_tensor_type() && !v.type().tensor_type().has_shape();
    };
    const auto& outputs = model.graph().output();
    if (std::none_of(outputs.begin(), outputs.end(), unsettled)) {
      onnx::checker::check_model(model);
    } else {
      onnx::ModelProto checked = model;
      auto* kept = checked.mutable_graph()->mutable_output();
      for (int i = kept->size() - 1; i >= 0; --i) {
        if (unsettled(kept->Get(i))) kept->DeleteSubrange(i, 1);
      }
      onnx::checker::check_model(checked);
    }
  } catch (const std::exception& e) {
    runtime::Fail("the ONNX checker rejects the model: ", e.what());
  }
}

}  // namespace kiln::frontend
