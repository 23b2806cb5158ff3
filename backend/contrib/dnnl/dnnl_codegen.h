// The oneDNN (dnnl) external codegen, compile side: which calls oneDNN runs (float32; NCHW
// convolutions and pooling, dense, batched matmul, softmax, layer norm over the last axis,
// elementwise activations, add and multiply where one operand has the result's shape), the
// composites of TVM's dnnl pattern table (dnnl.conv2d_bias[_sum][_relu|_clip|_sigmoid|_swish|_tanh],
// dnnl.dense_bias[_relu|_gelu]) and the module: the external function as a JSON subgraph in a
// `dnnl_json` module, constants named dnnl_<symbol>_const_<i> as TVM names them. Runtime:
// runtime/contrib/dnnl/ (libkiln_dnnl).
#pragma once

#include <string>
#include <vector>

#include "backend/external_codegen.h"

namespace kiln::backend {

// Dense layers on data of rank 3 or more as TVM's ONNX frontend writes them and its DNNL runtime
// takes them (it has no form for others): the data reshaped to [M, K] and the result reshaped
// back after the elementwise ops that follow (bias, gelu, residual sum), which then work on
// [M, N] and fuse into the dnnl.dense composites (dense_on_2d.cc). Run before partitioning.
ir::Expr DnnlDenseOn2D(const ir::Expr& main);

bool DnnlSupports(const ir::CallNode& call);
std::vector<transform::CompositePattern> DnnlPatterns();
ExternalModule DnnlGenerate(const std::string& symbol, const ir::Expr& function);

}  // namespace kiln::backend
