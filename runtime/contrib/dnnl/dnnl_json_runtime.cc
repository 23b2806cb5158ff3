// The runtime of `dnnl_json` modules (TVM's DNNLJSONRuntime), built into libkiln_dnnl, which
// libkiln_runtime loads when a library holds such a module (runtime/module_loaders.cc): it runs
// the JSON subgraph of one external function with oneDNN 2.x primitives.
//
// Init (once per loaded library) creates every primitive, letting oneDNN choose the memory formats
// of convolutions and pooling (blocked ones, typically), reorders the constant weights into the
// formats their primitives chose (keeping only the reordered copy), and plans the reorders between
// formats the values need.
// Run binds the call's inputs and outputs and executes the primitives in order; the step computing
// an output (in plain layout) writes it in place. What one call
// writes (intermediate values, each primitive's scratchpad, the memory objects naming them, the
// stream) is the calling thread's own, kept per thread and module: executors running one library
// in several threads share only the primitives and the weights, which no call writes.
//
// Threads: Debian's oneDNN runs on OpenMP; each call sets the calling thread's OpenMP thread count
// to kiln's (runtime::NumThreads). The loader bounds OpenMP's spinning (GOMP_SPINCOUNT, unless a
// wait policy is set) before loading this library: OpenMP's workers wait briefly for the next
// primitive of a call, then sleep instead of spinning on the cores kiln's own pool uses.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/error.h"
#include "runtime/json_runtime.h"
#include "runtime/module.h"
#include "runtime/thread_pool.h"

namespace kiln::runtime {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Dims = memory::dims;

memory::desc Plain(const Dims& dims) {
  Dims d = dims.empty() ? Dims{1} : dims;
  Dims strides(d.size(), 1);
  for (size_t i = d.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * d[i];
  return memory::desc(d, memory::data_type::f32, strides);
}
memory::desc Any(const Dims& dims) { return memory::desc(dims, memory::data_type::f32, memory::format_tag::any); }

bool IsPlain(const memory::desc& d) { return d == Plain(d.dims()); }

std::vector<int64_t> Ints(const JsonNode& node, const char* key) {
  std::vector<int64_t> out;
  for (const std::string& v : node.Attr(key)) out.push_back(std::stoll(v));
  return out;
}
int64_t Int(const JsonNode& node, const char* key) { return std::stoll(node.Attr(key).at(0)); }
float Float(const JsonNode& node, const char* key) { return std::stof(node.Attr(key).at(0)); }

// A kernel node's name, parsed once: the primitive it runs and what is fused into it. A plain op
// ("nn.softmax", "add", "tanh") runs that op; a composite as TVM names it
// ("dnnl.conv2d_bias_sum_relu") runs its layer ("conv2d", "deconv2d", "dense") with its parts in
// this order: "bias", "sum" (adds the last input, the residual), then one activation as a post-op.
struct KernelKind {
  enum Primitive {
    kConvolution, kDeconvolution, kDense, kBatchMatmul, kPool, kSoftmax, kLayerNorm, kBinary, kEltwise
  };
  Primitive primitive = kEltwise;
  algorithm algorithm_kind = algorithm::undef;  // kPool, kBinary, kEltwise: which one
  bool global_pool = false;                    // nn.global_avg_pool2d: the window is the whole plane
  bool bias = false, sum = false;
  algorithm activation = algorithm::undef;  // a composite's eltwise post-op; undef: none
  bool clip = false;                        // the eltwise op or post-op is clip: a_min, a_max
  float activation_alpha = 0.f;             // eltwise_swish's beta is 1
};

// Throws Error naming what is not understood.
KernelKind KernelKindOf(const std::string& name) {
  using K = KernelKind;
  struct Plain {
    K::Primitive primitive;
    algorithm kind;
  };
  static const std::unordered_map<std::string, Plain> kOps = {
      {"nn.conv2d", {K::kConvolution, algorithm::undef}},
      {"nn.conv2d_transpose", {K::kDeconvolution, algorithm::undef}},
      {"nn.dense", {K::kDense, algorithm::undef}},
      {"nn.batch_matmul", {K::kBatchMatmul, algorithm::undef}},
      {"nn.max_pool2d", {K::kPool, algorithm::pooling_max}},
      {"nn.avg_pool2d", {K::kPool, algorithm::pooling_avg_exclude_padding}},
      {"nn.global_avg_pool2d", {K::kPool, algorithm::pooling_avg_exclude_padding}},
      {"nn.softmax", {K::kSoftmax, algorithm::undef}},
      {"nn.layer_norm", {K::kLayerNorm, algorithm::undef}},
      {"add", {K::kBinary, algorithm::binary_add}},
      {"multiply", {K::kBinary, algorithm::binary_mul}},
      {"nn.relu", {K::kEltwise, algorithm::eltwise_relu}},
      {"tanh", {K::kEltwise, algorithm::eltwise_tanh}},
      {"sigmoid", {K::kEltwise, algorithm::eltwise_logistic}},
      {"exp", {K::kEltwise, algorithm::eltwise_exp}},
      {"log", {K::kEltwise, algorithm::eltwise_log}},
      {"sqrt", {K::kEltwise, algorithm::eltwise_sqrt}},
      {"abs", {K::kEltwise, algorithm::eltwise_abs}},
      {"clip", {K::kEltwise, algorithm::eltwise_clip}}};
  static const std::unordered_map<std::string, K::Primitive> kLayers = {
      {"conv2d", K::kConvolution}, {"deconv2d", K::kDeconvolution}, {"dense", K::kDense}};
  static const std::unordered_map<std::string, algorithm> kActivations = {
      {"relu", algorithm::eltwise_relu},        {"tanh", algorithm::eltwise_tanh},
      {"clip", algorithm::eltwise_clip},        {"sigmoid", algorithm::eltwise_logistic},
      {"swish", algorithm::eltwise_swish},      {"gelu", algorithm::eltwise_gelu_erf}};
  KernelKind kind;
  const std::string prefix = "dnnl.";
  if (name.compare(0, prefix.size(), prefix) != 0) {
    auto op = kOps.find(name);
    Check(op != kOps.end(), "no oneDNN kernel for '", name, "'");
    kind.primitive = op->second.primitive;
    kind.algorithm_kind = op->second.kind;
    kind.global_pool = name == "nn.global_avg_pool2d";
    kind.clip = name == "clip";
    return kind;
  }
  std::vector<std::string> parts(1);
  for (char c : name.substr(prefix.size())) {
    if (c == '_') parts.emplace_back();
    else parts.back() += c;
  }
  auto layer = kLayers.find(parts[0]);
  Check(layer != kLayers.end(), "unknown composite '", name, "' (conv2d, deconv2d or dense, then its parts)");
  kind.primitive = layer->second;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    bool activation_seen = kind.activation != algorithm::undef;
    if (part == "bias" && !kind.bias && !kind.sum && !activation_seen) {
      kind.bias = true;
    } else if (part == "sum" && !kind.sum && !activation_seen) {
      kind.sum = true;
    } else if (kActivations.count(part) != 0 && !activation_seen) {
      kind.activation = kActivations.at(part);
      kind.clip = part == "clip";
      kind.activation_alpha = part == "swish" ? 1.f : 0.f;
    } else {
      Fail("composite '", name, "': '", part, "' is not a part it can have there (bias, sum, then one of relu, tanh, ",
           "clip, sigmoid, swish, gelu)");
    }
  }
  return kind;
}

std::atomic<uint64_t> next_module_id{1};

class DnnlJsonRuntime final : public JsonRuntimeBase {
 public:
  DnnlJsonRuntime(std::string symbol, std::string graph_json, std::vector<std::string> const_names)
      : JsonRuntimeBase(std::move(symbol), std::move(graph_json), std::move(const_names)),
        id_(next_module_id++), engine_(dnnl::engine::kind::cpu, 0) {}

  const char* type_key() const override { return "dnnl_json"; }

 protected:
  void Init(const std::vector<NDArray>& constants) override {
    dnnl::stream stream(engine_);
    const JsonGraph& g = graph();
    entry_buffer_.assign(g.num_entries(), -1);
    for (size_t i = 0; i < input_entries().size(); ++i) {
      entry_buffer_[input_entries()[i]] = AddBuffer({Buffer::kInput, PlainOfEntry(input_entries()[i]), static_cast<int>(i)});
    }
    for (size_t i = 0; i < constants.size(); ++i) {
      Buffer b{Buffer::kConstant, Plain(constants[i].shape()), 0};
      b.constant = memory(b.desc, engine_);
      std::memcpy(b.constant.get_data_handle(), constants[i].data(), constants[i].NumBytes());
      entry_buffer_[const_entries()[i]] = AddBuffer(b);
    }
    for (uint32_t n = 0; n < g.nodes.size(); ++n) {
      if (g.nodes[n].op != "kernel") continue;
      try {
        Kernel(n, stream);
      } catch (const dnnl::error& e) {
        Fail("dnnl_json: ", symbol(), ": node ", n, " '", g.nodes[n].name, "': oneDNN: ", e.what());
      }
    }
    for (size_t k = 0; k < g.heads.size(); ++k) {
      uint32_t entry = g.EntryId(g.heads[k]);
      int from = Want(entry, PlainOfEntry(entry), stream);
      if (buffers_[from].kind == Buffer::kScratch) {
        // Computed in plain layout by a step of this call: that step writes the output itself.
        size_t offset = buffers_[from].offset;
        for (Buffer& b : buffers_) {
          if (b.kind == Buffer::kScratch && !b.scratchpad && b.offset == offset) {  // the buffer and its views
            b.kind = Buffer::kOutput;
            b.index = static_cast<int>(k);
          }
        }
        continue;
      }
      int to = AddBuffer({Buffer::kOutput, buffers_[from].desc, static_cast<int>(k)});
      Reorder(from, to);
    }
    stream.wait();
    // Constants only reordered from (a convolution's plain weights) are not needed any more.
    std::vector<bool> read(buffers_.size(), false);
    for (const Step& step : steps_) {
      for (const auto& [key, buffer] : step.args) read[buffer] = true;
    }
    for (size_t b = 0; b < buffers_.size(); ++b) {
      if (buffers_[b].kind == Buffer::kConstant && !read[b]) buffers_[b].constant = memory();
    }
  }

  void Run(const std::vector<const DLTensor*>& inputs, const std::vector<DLTensor*>& outputs) const override {
    omp_set_num_threads(NumThreads());
    ThreadState& state = StateOfThisThread();
    for (size_t b = 0; b < buffers_.size(); ++b) {
      const Buffer& buffer = buffers_[b];
      if (buffer.kind == Buffer::kInput) state.memories[b].set_data_handle(inputs[buffer.index]->data);
      if (buffer.kind == Buffer::kOutput) state.memories[b].set_data_handle(outputs[buffer.index]->data);
    }
    for (size_t s = 0; s < steps_.size(); ++s) steps_[s].primitive.execute(state.stream, state.args[s]);
    state.stream.wait();
  }

 private:
  struct Buffer {
    enum Kind { kInput, kOutput, kConstant, kScratch };
    Kind kind;
    memory::desc desc;
    int index = 0;       // kInput, kOutput: the argument's position
    size_t offset = 0;   // kScratch: where in the thread's arena
    bool scratchpad = false;  // kScratch: a primitive's scratchpad (all share one region after the values)
    memory constant;     // kConstant: the module's own copy
  };
  struct Step {
    dnnl::primitive primitive;
    std::vector<std::pair<int, int>> args;  // (DNNL_ARG_*, buffer)
  };
  struct ThreadState {
    std::weak_ptr<const void> owner;  // expires with the module
    std::unique_ptr<char[]> arena;
    std::vector<memory> memories;  // per buffer
    std::vector<std::unordered_map<int, memory>> args;  // per step
    dnnl::stream stream;
  };

  memory::desc PlainOfEntry(uint32_t entry) const {
    const JsonGraph& g = graph();
    uint32_t node = 0;
    while (g.node_row_ptr[node + 1] <= entry) ++node;
    return Plain(g.nodes[node].shapes[entry - g.node_row_ptr[node]]);
  }

  int AddBuffer(Buffer b) {
    buffers_.push_back(std::move(b));
    return static_cast<int>(buffers_.size() - 1);
  }
  int Scratch(const memory::desc& desc) {
    Buffer b{Buffer::kScratch, desc, 0};
    b.offset = scratch_bytes_;  // each its own, even when empty: the offset names the buffer
    scratch_bytes_ += std::max<size_t>(64, (desc.get_size() + 63) / 64 * 64);
    return AddBuffer(b);
  }
  // The same bytes under another plain shape of the same size.
  int Alias(int buffer, const memory::desc& desc) {
    Buffer b = buffers_[buffer];
    b.desc = desc;
    return AddBuffer(b);
  }
  void AddStep(dnnl::primitive p, std::vector<std::pair<int, int>> args, const memory::desc& scratchpad) {
    if (scratchpad.get_size() > 0) {
      Buffer b{Buffer::kScratch, scratchpad, 0};
      b.scratchpad = true;
      scratchpad_bytes_ = std::max(scratchpad_bytes_, scratchpad.get_size());
      args.emplace_back(DNNL_ARG_SCRATCHPAD, AddBuffer(b));
    }
    steps_.push_back({std::move(p), std::move(args)});
  }
  void Reorder(int from, int to) {
    dnnl::reorder::primitive_desc pd(engine_, buffers_[from].desc, engine_, buffers_[to].desc);
    steps_.push_back({dnnl::reorder(pd), {{DNNL_ARG_SRC, from}, {DNNL_ARG_DST, to}}});
  }

  // A buffer holding `entry` in the layout `desc`: its own, a view of it, or a reordered copy
  // (made now for constants, by a step for values).
  int Want(uint32_t entry, const memory::desc& desc, dnnl::stream& stream, int source = -1) {
    int b = source >= 0 ? source : entry_buffer_.at(entry);
    Check(b >= 0, "dnnl_json: ", symbol(), ": an entry is read before it is computed");
    if (buffers_[b].desc == desc) return b;
    if (IsPlain(buffers_[b].desc) && IsPlain(desc) && buffers_[b].desc.get_size() == desc.get_size()) {
      return Alias(b, desc);
    }
    for (const auto& [e, copy] : copies_) {
      if (e == entry && buffers_[copy].desc == desc) return copy;
    }
    int copy;
    if (buffers_[b].kind == Buffer::kConstant) {
      Buffer c{Buffer::kConstant, desc, 0};
      c.constant = memory(desc, engine_);
      memory source(buffers_[b].desc, engine_, buffers_[b].constant.get_data_handle());  // b may be a view
      dnnl::reorder(source, c.constant).execute(stream, source, c.constant);
      copy = AddBuffer(c);
    } else {
      copy = Scratch(desc);
      Reorder(b, copy);
    }
    copies_.emplace_back(entry, copy);
    return copy;
  }
  uint32_t In(uint32_t n, size_t i) const { return graph().EntryId(graph().nodes[n].inputs.at(i)); }
  uint32_t Out(uint32_t n) const { return graph().node_row_ptr[n]; }

  dnnl::primitive_attr Attr() const {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
  }
  // A composite's post-ops: its residual sum, then its activation.
  dnnl::post_ops PostOps(const JsonNode& node, const KernelKind& kind) const {
    dnnl::post_ops ops;
    if (kind.sum) ops.append_sum(1.f);
    if (kind.activation != algorithm::undef) {
      float alpha = kind.clip ? Float(node, "a_min") : kind.activation_alpha;
      float beta = kind.clip ? Float(node, "a_max") : 0.f;
      ops.append_eltwise(1.f, kind.activation, alpha, beta);
    }
    return ops;
  }

  void Kernel(uint32_t n, dnnl::stream& stream) {
    KernelKind kind;
    try {
      kind = KernelKindOf(graph().nodes[n].name);
    } catch (const Error& e) {
      Fail("dnnl_json: ", symbol(), ": node ", n, ": ", e.what());
    }
    switch (kind.primitive) {
      case KernelKind::kConvolution: return Convolution(n, kind, stream);
      case KernelKind::kDeconvolution: return Deconvolution(n, kind, stream);
      case KernelKind::kDense: return Dense(n, kind, stream);
      case KernelKind::kBatchMatmul: return BatchMatmul(n, stream);
      case KernelKind::kPool: return Pool(n, kind, stream);
      case KernelKind::kSoftmax: return Softmax(n, stream);
      case KernelKind::kLayerNorm: return LayerNorm(n, stream);
      case KernelKind::kBinary: return Binary(n, kind, stream);
      case KernelKind::kEltwise: return Eltwise(n, kind, stream);
    }
  }

  void Convolution(uint32_t n, const KernelKind& kind, dnnl::stream& stream) {
    const JsonNode& node = graph().nodes[n];
    const std::vector<int64_t>& src = graph().nodes[node.inputs[0].node].shapes[node.inputs[0].index];
    const std::vector<int64_t>& wgt = graph().nodes[node.inputs[1].node].shapes[node.inputs[1].index];
    const std::vector<int64_t>& dst = node.shapes[0];
    int64_t groups = Int(node, "groups");
    std::vector<int64_t> strides = Ints(node, "strides"), dilation = Ints(node, "dilation"), pad = Ints(node, "padding");
    Dims wdims = groups == 1 ? Dims(wgt.begin(), wgt.end())
                             : Dims{groups, wgt[0] / groups, wgt[1], wgt[2], wgt[3]};
    bool bias = kind.bias, sum = kind.sum;
    dnnl::primitive_attr attr = Attr();
    attr.set_post_ops(PostOps(node, kind));
    memory::desc src_any = Any(Dims(src.begin(), src.end())), dst_any = Any(Dims(dst.begin(), dst.end()));
    memory::desc bias_md = bias ? Plain(Dims{dst[1]}) : memory::desc();
    dnnl::convolution_forward::desc desc(prop_kind::forward_inference, algorithm::convolution_direct, src_any,
                                         Any(wdims), bias_md, dst_any, {strides[0], strides[1]},
                                         {dilation[0] - 1, dilation[1] - 1}, {pad[0], pad[1]}, {pad[2], pad[3]});
    dnnl::convolution_forward::primitive_desc pd(desc, attr, engine_);
    int in = Want(In(n, 0), pd.src_desc(), stream);
    int weights = Want(In(n, 1), pd.weights_desc(), stream, Want(In(n, 1), Plain(wdims), stream));
    int out = Scratch(pd.dst_desc());
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, in}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, out}};
    if (bias) args.emplace_back(DNNL_ARG_BIAS, Want(In(n, 2), bias_md, stream));
    if (sum) Reorder(entry_buffer_.at(In(n, bias ? 3 : 2)), out);  // the sum post-op adds to what dst holds
    AddStep(dnnl::convolution_forward(pd), args, pd.scratchpad_desc());
    entry_buffer_[Out(n)] = out;
  }

  // nn.conv2d_transpose and dnnl.deconv2d_*: the weight is IOHW ([C, M / groups, kh, kw]), read in
  // place as oneDNN's [M, C, kh, kw] (grouped: [groups, M / groups, C / groups, kh, kw]) and
  // reordered once into the layout the primitive chose. oneDNN has no output_padding: it makes the
  // end padding smaller.
  void Deconvolution(uint32_t n, const KernelKind& kind, dnnl::stream& stream) {
    const JsonNode& node = graph().nodes[n];
    const std::vector<int64_t>& src = graph().nodes[node.inputs[0].node].shapes[node.inputs[0].index];
    const std::vector<int64_t>& wgt = graph().nodes[node.inputs[1].node].shapes[node.inputs[1].index];
    const std::vector<int64_t>& dst = node.shapes[0];
    auto layout = [&](const char* key, const char* fallback) {
      return node.attrs.count(key) != 0 ? node.Attr(key).at(0) : std::string(fallback);
    };
    std::string data_layout = layout("data_layout", "NCHW"), kernel_layout = layout("kernel_layout", "IOHW");
    Check(data_layout == "NCHW" && kernel_layout == "IOHW", "dnnl_json: ", symbol(), ": node ", n, " '", node.name,
          "' takes NCHW data and an IOHW weight, not ", data_layout, " and ", kernel_layout);
    int64_t groups = Int(node, "groups"), in = wgt[0] / groups, out = wgt[1], kh = wgt[2], kw = wgt[3];
    std::vector<int64_t> strides = Ints(node, "strides"), dilation = Ints(node, "dilation"), pad = Ints(node, "padding");
    std::vector<int64_t> output_padding = node.attrs.count("output_padding") != 0 ? Ints(node, "output_padding")
                                                                                : std::vector<int64_t>{0, 0};
    Dims wdims = groups == 1 ? Dims{out, in, kh, kw} : Dims{groups, out, in, kh, kw};
    Dims wstrides = groups == 1 ? Dims{kh * kw, out * kh * kw, kw, 1}
                                : Dims{in * out * kh * kw, kh * kw, out * kh * kw, kw, 1};
    bool bias = kind.bias;
    dnnl::primitive_attr attr = Attr();
    attr.set_post_ops(PostOps(node, kind));
    memory::desc bias_md = bias ? Plain(Dims{dst[1]}) : memory::desc();
    dnnl::deconvolution_forward::desc desc(
        prop_kind::forward_inference, algorithm::deconvolution_direct, Any(Dims(src.begin(), src.end())), Any(wdims),
        bias_md, Any(Dims(dst.begin(), dst.end())), {strides[0], strides[1]}, {dilation[0] - 1, dilation[1] - 1},
        {pad[0], pad[1]}, {pad[2] - output_padding[0], pad[3] - output_padding[1]});
    dnnl::deconvolution_forward::primitive_desc pd(desc, attr, engine_);
    int source = Want(In(n, 1), PlainOfEntry(In(n, 1)), stream);
    int weights = Want(In(n, 1), pd.weights_desc(), stream,
                       Alias(source, memory::desc(wdims, memory::data_type::f32, wstrides)));
    int result = Scratch(pd.dst_desc());
    std::vector<std::pair<int, int>> args = {
        {DNNL_ARG_SRC, Want(In(n, 0), pd.src_desc(), stream)}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, result}};
    if (bias) args.emplace_back(DNNL_ARG_BIAS, Want(In(n, 2), bias_md, stream));
    AddStep(dnnl::deconvolution_forward(pd), args, pd.scratchpad_desc());
    entry_buffer_[Out(n)] = result;
  }

  // nn.dense and dnnl.dense_bias[_relu|_gelu|_sum]: an inner product over [rows, K].
  void Dense(uint32_t n, const KernelKind& kind, dnnl::stream& stream) {
    const JsonNode& node = graph().nodes[n];
    const std::vector<int64_t>& wgt = graph().nodes[node.inputs[1].node].shapes[node.inputs[1].index];
    const std::vector<int64_t>& dst = node.shapes[0];
    int64_t units = wgt[0], k = wgt[1], rows = 1;
    for (size_t d = 0; d + 1 < dst.size(); ++d) rows *= dst[d];
    bool bias = kind.bias;
    dnnl::primitive_attr attr = Attr();
    attr.set_post_ops(PostOps(node, kind));
    memory::desc src_md = Plain(Dims{rows, k}), dst_md = Plain(Dims{rows, units});
    memory::desc bias_md = bias ? Plain(Dims{units}) : memory::desc();
    dnnl::inner_product_forward::desc desc(prop_kind::forward_inference, src_md, Any(Dims{units, k}), bias_md, dst_md);
    dnnl::inner_product_forward::primitive_desc pd(desc, attr, engine_);
    int in = Want(In(n, 0), Plain(Dims{rows, k}), stream, Want(In(n, 0), PlainOfEntry(In(n, 0)), stream));
    int weights = Want(In(n, 1), pd.weights_desc(), stream);
    int out = Scratch(dst_md);
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, in}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, out}};
    if (bias) args.emplace_back(DNNL_ARG_BIAS, Want(In(n, 2), bias_md, stream));
    if (kind.sum) {  // the sum post-op adds to what dst holds: the residual, as [rows, units]
      uint32_t residual = In(n, bias ? 3 : 2);
      Reorder(Want(residual, dst_md, stream, Want(residual, PlainOfEntry(residual), stream)), out);
    }
    AddStep(dnnl::inner_product_forward(pd), args, pd.scratchpad_desc());
    entry_buffer_[Out(n)] = Alias(out, Plain(dst));
  }

  // nn.batch_matmul: [B, M, K] x [B, K, N] (either transposed in memory), batch 1 broadcasting.
  void BatchMatmul(uint32_t n, dnnl::stream& stream) {
    const JsonNode& node = graph().nodes[n];
    auto shape_of = [&](size_t i) { return graph().nodes[node.inputs[i].node].shapes[node.inputs[i].index]; };
    std::vector<int64_t> a = shape_of(0), b = shape_of(1), dst = node.shapes[0];
    bool ta = Int(node, "transpose_a") != 0, tb = Int(node, "transpose_b") != 0;
    // A stored [B, K, M] is read as [B, M, K] with swapped strides.
    auto operand = [](const std::vector<int64_t>& s, bool transposed) {
      if (!transposed) return Plain(s);
      return memory::desc({s[0], s[2], s[1]}, memory::data_type::f32, {s[1] * s[2], 1, s[2]});
    };
    memory::desc a_md = operand(a, ta), b_md = operand(b, tb), dst_md = Plain(dst);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, dst_md), Attr(), engine_);
    int lhs = Alias(Want(In(n, 0), Plain(a), stream), a_md);
    int rhs = Alias(Want(In(n, 1), Plain(b), stream), b_md);
    int out = Scratch(dst_md);
    AddStep(dnnl::matmul(pd), {{DNNL_ARG_SRC, lhs}, {DNNL_ARG_WEIGHTS, rhs}, {DNNL_ARG_DST, out}}, pd.scratchpad_desc());
    entry_buffer_[Out(n)] = out;
  }

  void Pool(uint32_t n, const KernelKind& kind, dnnl::stream& stream) {
    const JsonNode& node = graph().nodes[n];
    uint32_t in_entry = In(n, 0);
    const std::vector<int64_t>& src = graph().nodes[node.inputs[0].node].shapes[node.inputs[0].index];
    const std::vector<int64_t>& dst = node.shapes[0];
    bool global = kind.global_pool;
    std::vector<int64_t> kernel = global ? std::vector<int64_t>{src[2], src[3]} : Ints(node, "pool_size");
    std::vector<int64_t> strides = global ? std::vector<int64_t>{1, 1} : Ints(node, "strides");
    std::vector<int64_t> dilation = global ? std::vector<int64_t>{1, 1} : Ints(node, "dilation");
    std::vector<int64_t> pad = global ? std::vector<int64_t>{0, 0, 0, 0} : Ints(node, "padding");
    // Right padding as the output size needs it (ceil_mode windows run past the end).
    Dims pad_r(2);
    for (int d = 0; d < 2; ++d) {
      pad_r[d] = (dst[2 + d] - 1) * strides[d] + (kernel[d] - 1) * dilation[d] + 1 - src[2 + d] - pad[d];
      pad_r[d] = std::max<int64_t>(pad_r[d], 0);
    }
    algorithm alg = kind.algorithm_kind == algorithm::pooling_max                  ? algorithm::pooling_max
                    : (!global && Int(node, "count_include_pad") != 0) ? algorithm::pooling_avg_include_padding
                                                                       : algorithm::pooling_avg_exclude_padding;
    memory::desc src_md = buffers_[entry_buffer_.at(in_entry)].desc;
    dnnl::pooling_v2_forward::desc desc(prop_kind::forward_inference, alg, src_md, Any(Dims(dst.begin(), dst.end())),
                                        {strides[0], strides[1]}, {kernel[0], kernel[1]},
                                        {dilation[0] - 1, dilation[1] - 1}, {pad[0], pad[1]}, pad_r);
    dnnl::pooling_v2_forward::primitive_desc pd(desc, Attr(), engine_);
    int in = Want(in_entry, pd.src_desc(), stream);
    int out = Scratch(pd.dst_desc());
    AddStep(dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, in}, {DNNL_ARG_DST, out}}, pd.scratchpad_desc());
    entry_buffer_[Out(n)] = out;
  }

  void Eltwise(uint32_t n, const KernelKind& kind, dnnl::stream& stream) {
    const JsonNode& node = graph().nodes[n];
    float alpha = kind.clip ? Float(node, "a_min") : 0.f;
    float beta = kind.clip ? Float(node, "a_max") : 0.f;
    memory::desc md = buffers_[entry_buffer_.at(In(n, 0))].desc;  // any layout: elementwise
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(prop_kind::forward_inference, kind.algorithm_kind, md, alpha, beta), Attr(), engine_);
    int in = Want(In(n, 0), md, stream);
    int out = Scratch(md);
    AddStep(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, in}, {DNNL_ARG_DST, out}}, pd.scratchpad_desc());
    entry_buffer_[Out(n)] = out;
  }

  void Softmax(uint32_t n, dnnl::stream& stream) {
    const JsonNode& node = graph().nodes[n];
    memory::desc md = PlainOfEntry(Out(n));
    int axis = static_cast<int>(Int(node, "axis"));
    if (axis < 0) axis += static_cast<int>(node.shapes[0].size());
    dnnl::softmax_forward::primitive_desc pd(dnnl::softmax_forward::desc(prop_kind::forward_inference, md, axis),
                                             Attr(), engine_);
    int in = Want(In(n, 0), md, stream);
    int out = Scratch(md);
    AddStep(dnnl::softmax_forward(pd), {{DNNL_ARG_SRC, in}, {DNNL_ARG_DST, out}}, pd.scratchpad_desc());
    entry_buffer_[Out(n)] = out;
  }

  void LayerNorm(uint32_t n, dnnl::stream& stream) {
    const JsonNode& node = graph().nodes[n];
    memory::desc md = PlainOfEntry(Out(n));
    Dims channels = {node.shapes[0].back()};
    dnnl::layer_normalization_forward::primitive_desc pd(
        dnnl::layer_normalization_forward::desc(prop_kind::forward_inference, md, Float(node, "epsilon"),
                                                dnnl::normalization_flags::use_scale |
                                                    dnnl::normalization_flags::use_shift),
        Attr(), engine_);
    int in = Want(In(n, 0), md, stream);
    int scale = Want(In(n, 1), Plain(channels), stream, Want(In(n, 1), PlainOfEntry(In(n, 1)), stream));
    int shift = Want(In(n, 2), Plain(channels), stream, Want(In(n, 2), PlainOfEntry(In(n, 2)), stream));
    int out = Scratch(md);
    AddStep(dnnl::layer_normalization_forward(pd),
            {{DNNL_ARG_SRC, in}, {DNNL_ARG_SCALE, scale}, {DNNL_ARG_SHIFT, shift}, {DNNL_ARG_DST, out}},
            pd.scratchpad_desc());
    entry_buffer_[Out(n)] = out;
  }

  // add and multiply: the operand of the result's shape first (both commute), the other
  // broadcast along the axes where it has 1 (in plain layouts), or of the same shape and then
  // read in the first's layout.
  void Binary(uint32_t n, const KernelKind& kind, dnnl::stream& stream) {
    const JsonNode& node = graph().nodes[n];
    const std::vector<int64_t>& dst = node.shapes[0];
    auto shape_of = [&](size_t i) { return graph().nodes[node.inputs[i].node].shapes[node.inputs[i].index]; };
    size_t first = shape_of(0) == dst ? 0 : 1;
    std::vector<int64_t> other = shape_of(1 - first);
    other.insert(other.begin(), dst.size() - other.size(), 1);
    memory::desc dst_md = Plain(dst), other_md = Plain(other);
    if (other == dst) {  // no broadcasting: both in the first operand's layout (a blocked one stays)
      dst_md = other_md = buffers_[entry_buffer_.at(In(n, first))].desc;
    }
    algorithm alg = kind.algorithm_kind;
    dnnl::binary::primitive_desc pd(dnnl::binary::desc(alg, dst_md, other_md, dst_md), Attr(), engine_);
    int a = Want(In(n, first), dst_md, stream);
    int b = other == dst ? Want(In(n, 1 - first), other_md, stream)
                         : Want(In(n, 1 - first), other_md, stream, Want(In(n, 1 - first), PlainOfEntry(In(n, 1 - first)), stream));
    int out = Scratch(dst_md);
    AddStep(dnnl::binary(pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, out}}, pd.scratchpad_desc());
    entry_buffer_[Out(n)] = out;
  }

  // The calling thread's memory for this module: made on its first call in the thread.
  ThreadState& StateOfThisThread() const {
    thread_local std::unordered_map<uint64_t, std::unique_ptr<ThreadState>> states;
    auto it = states.find(id_);
    if (it != states.end()) return *it->second;
    for (auto s = states.begin(); s != states.end();) {  // drop what modules since destroyed left
      s = s->second->owner.expired() ? states.erase(s) : std::next(s);
    }
    auto state = std::make_unique<ThreadState>();
    state->owner = alive_;
    state->arena.reset(new char[scratch_bytes_ + scratchpad_bytes_ + 64]);
    auto base = reinterpret_cast<uintptr_t>(state->arena.get());
    char* aligned = reinterpret_cast<char*>((base + 63) / 64 * 64);
    for (const Buffer& b : buffers_) {
      if (b.kind == Buffer::kConstant && !b.constant) {  // released after Init: no step reads it
        state->memories.emplace_back();
        continue;
      }
      void* data = b.kind == Buffer::kScratch    ? aligned + (b.scratchpad ? scratch_bytes_ : b.offset)
                   : b.kind == Buffer::kConstant ? b.constant.get_data_handle()
                                                 : DNNL_MEMORY_NONE;
      state->memories.emplace_back(b.desc, engine_, data);
    }
    for (const Step& step : steps_) {
      std::unordered_map<int, memory> args;
      for (const auto& [key, buffer] : step.args) args.emplace(key, state->memories[buffer]);
      state->args.push_back(std::move(args));
    }
    state->stream = dnnl::stream(engine_);
    return *states.emplace(id_, std::move(state)).first->second;
  }

  uint64_t id_;
  std::shared_ptr<const void> alive_ = std::make_shared<int>(0);
  dnnl::engine engine_;
  std::vector<Buffer> buffers_;
  std::vector<Step> steps_;
  std::vector<int> entry_buffer_;                   // per entry: the buffer computing it
  std::vector<std::pair<uint32_t, int>> copies_;    // (entry, buffer): its reordered copies
  size_t scratch_bytes_ = 0;     // the values' region of a thread's arena
  size_t scratchpad_bytes_ = 0;  // the scratchpad region after it
};

// Registers the loader of dnnl_json blob entries when libkiln_dnnl is loaded.
const bool kRegistered = [] {
  RegisterGlobalFunction("runtime.module.loadbinary_dnnl_json",
                         PackedFunc([](const Args& args, RetValue* result) {
                           auto* reader = static_cast<ByteReader*>(args[0].AsHandle());
                           JsonModuleFields f = ReadJsonModuleFields(*reader);
                           result->Set(Module(std::make_shared<DnnlJsonRuntime>(f.symbol, f.graph_json, f.const_names)));
                         }),
                         true);
  return true;
}();

}  // namespace
}  // namespace kiln::runtime
