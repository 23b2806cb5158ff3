// Lowering primitive functions to plans: which kernel computes an op and with which parameters,
// which ops a kernel applies as its epilogue, which elementwise ops share a loop, which values get
// a buffer, and the copies for outputs not computed in place.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "backend/codegen/host_codegen.h"
#include "backend/codegen/plan.h"
#include "ir/text.h"
#include "runtime/error.h"

namespace kiln::backend {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Step = kernels::EpilogueStep;

Plan Lower(const std::string& text) { return LowerPrimitiveFunction("f", ir::ParseFunction(text)); }

// Step `index` of the plan, which must be a T (the test fails with an exception otherwise).
template <typename T>
const T& StepAt(const Plan& plan, size_t index) {
  if (index >= plan.steps.size()) throw std::out_of_range("the plan has no step " + std::to_string(index));
  const T* step = std::get_if<T>(&plan.steps[index]);
  if (step == nullptr) throw std::logic_error("step " + std::to_string(index) + " is of another kind");
  return *step;
}

// The value of the argument `name` of a kernel call.
KernelArg::Value ArgOf(const KernelCall& call, const std::string& name) {
  for (const KernelArg& arg : call.args) {
    if (arg.name == name) return arg.value;
  }
  ADD_FAILURE() << call.kernel << " has no argument " << name;
  return int64_t{-1};
}

// The kernel call's parameter struct is `want`, field by field.
template <typename P>
void ExpectParams(const KernelCall& call, const char* type, const P& want) {
  ASSERT_TRUE(call.params.has_value()) << call.kernel << " has no parameter struct";
  EXPECT_EQ(call.params->type, type);
  EXPECT_EQ(call.params->fields, TypedParams(type, want).fields);
}

// The op names of an elementwise loop's members, in order.
std::vector<std::string> MemberOps(const ElementwiseLoop& loop) {
  std::vector<std::string> names;
  for (const ElementwiseLoop::Member& m : loop.members) names.push_back(m.call->op->name);
  return names;
}

KernelArg::Value Int(int64_t v) { return v; }

// With AVX-512, 8-channel output blocks are computed two to a 16-lane vector (the fifth template
// argument), groups of one block too where a paired tile computes them; with AVX2, one block per
// vector, the input block compiled in (the third).
TEST(Lowering, EightChannelBlocksArePairedWithAvx512) {
  const std::string pointwise = R"(fn (%p0: Tensor[(1, 1, 5, 5, 8), float32], %p1: Tensor[(3, 1, 1, 1, 8, 8), float32]) {
    nn.conv2d(%p0, %p1, data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c")
  })";
  const std::string groups_of_eight = R"(fn (%p0: Tensor[(1, 3, 5, 5, 8), float32], %p1: Tensor[(3, 1, 3, 3, 8, 8), float32]) {
    nn.conv2d(%p0, %p1, padding=[1, 1, 1, 1], groups=3, data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c")
  })";
  auto kernel = [](const std::string& text, target::Isa isa, const char* march) {
    Plan plan = LowerPrimitiveFunction("f", ir::ParseFunction(text), target::TargetFor(march, isa));
    return StepAt<KernelCall>(plan, 0).kernel;
  };
  EXPECT_EQ(kernel(pointwise, target::Isa::kAvx512, "x86-64-v4"), "Conv2DNCHWc<8, 0, 8, 1, 16>");
  EXPECT_EQ(kernel(pointwise, target::Isa::kAvx2, "x86-64-v3"), "Conv2DNCHWc<8, 0, 8, 1, 8>");
  // Groups of one block in pairs, where a paired tile exists (3 taps wide); else one group per tile.
  EXPECT_EQ(kernel(groups_of_eight, target::Isa::kAvx512, "x86-64-v4"), "Conv2DNCHWc<8, 0, 8, 1, 16>");
  EXPECT_EQ(kernel(groups_of_eight, target::Isa::kAvx2, "x86-64-v3"), "Conv2DNCHWc<8, 0, 8, 1, 8>");
  const std::string five_wide = R"(fn (%p0: Tensor[(1, 3, 5, 5, 8), float32], %p1: Tensor[(3, 1, 5, 5, 8, 8), float32]) {
    nn.conv2d(%p0, %p1, padding=[2, 2, 2, 2], groups=3, data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c")
  })";
  EXPECT_EQ(kernel(five_wide, target::Isa::kAvx512, "x86-64-v4"), "Conv2DNCHWc<8, 0, 0, 1, 8>");
}

// A 2-D transposed convolution applies its bias, scale and relu on each output row; a 3-D one
// (rank-5 output, which the epilogue rule would read as blocked) leaves them to a loop.
TEST(Lowering, TransposedConvolutionTailBecomesTheKernelEpilogue) {
  Plan two_d = Lower(R"(fn (%p0: Tensor[(1, 4, 5, 5), float32], %p1: Tensor[(4, 8, 2, 2), float32], %p2: Tensor[(8), float32], %p3: Tensor[(8, 1, 1), float32]) {
    %0 = nn.conv2d_transpose(%p0, %p1, strides=[2, 2]);
    %1 = nn.bias_add(%0, %p2);
    %2 = multiply(%1, %p3);
    nn.relu(%2)
  })");
  ASSERT_EQ(two_d.steps.size(), 1u);
  const KernelCall& call = StepAt<KernelCall>(two_d, 0);
  EXPECT_EQ(call.kernel, "ConvTranspose");
  ASSERT_EQ(call.epilogue.size(), 3u);
  EXPECT_EQ(call.epilogue[0].operand, Step::kChannel);
  EXPECT_EQ(call.epilogue[1].op, Step::kMultiply);
  EXPECT_EQ(call.epilogue[1].operand, Step::kChannel);
  EXPECT_EQ(call.epilogue[2].op, Step::kRelu);
  Plan three_d = Lower(R"(fn (%p0: Tensor[(1, 4, 3, 5, 5), float32], %p1: Tensor[(4, 8, 2, 2, 2), float32]) {
    %0 = nn.conv3d_transpose(%p0, %p1, strides=[2, 2, 2]);
    nn.relu(%0)
  })");
  ASSERT_EQ(three_d.steps.size(), 2u);
  EXPECT_TRUE(StepAt<KernelCall>(three_d, 0).epilogue.empty());
}

TEST(Lowering, BlockedConvolutionTailBecomesTheKernelEpilogue) {
  Plan plan = Lower(R"(fn (%p0: Tensor[(1, 1, 4, 4, 16), float32], %p1: Tensor[(1, 1, 3, 3, 16, 16), float32], %p2: Tensor[(1, 1, 1, 1, 16), float32], %p3: Tensor[(1, 1, 4, 4, 16), float32]) {
    %0 = nn.conv2d(%p0, %p1, padding=[1, 1, 1, 1], data_layout="NCHW16c", kernel_layout="OIHW16i16o", out_layout="NCHW16c");
    %1 = add(%0, %p2);
    %2 = subtract(%p3, %1);
    %3 = clip(%2, a_min=0, a_max=6);
    %4 = tanh(%3);
    %4
  })");
  ASSERT_EQ(plan.steps.size(), 2u);
  const KernelCall& conv = StepAt<KernelCall>(plan, 0);
  EXPECT_EQ(conv.kernel, "Conv2DNCHWc<16, 0, 16, 1, 16>");  // 16-channel blocks in and out, stride 1, compiled in
  EXPECT_EQ(conv.implementation, "conv2d.nchwc_direct");  // the first that computes these layouts
  // N, C, H, W, in block, O, out block, KH, KW, OH, OW, strides, dilations, pads top and left, one
  // group, not depthwise; the padded input is copied first, no strided gather, no flat plane.
  ExpectParams(conv, "Conv2DNCHWcParams",
               kernels::Conv2DNCHWcParams{1, 16, 4, 4, 16, 16, 16, 3, 3, 4, 4, 1, 1, 1, 1, 1, 1, 1, false, true,
                                          false, false});
  EXPECT_EQ(ArgOf(conv, "data"), KernelArg::Value(plan.Param(0)));
  ASSERT_TRUE(conv.takes_epilogue);
  ASSERT_EQ(conv.epilogue.size(), 3u);
  EXPECT_EQ(conv.epilogue[0].op, Step::kAdd);
  EXPECT_EQ(conv.epilogue[0].operand, Step::kChannel);
  EXPECT_EQ(conv.epilogue[0].data, plan.Param(2));
  EXPECT_EQ(conv.epilogue[1].op, Step::kReverseSubtract);  // p3 - result
  EXPECT_EQ(conv.epilogue[1].operand, Step::kTensor);
  EXPECT_EQ(conv.epilogue[1].data, plan.Param(3));
  EXPECT_EQ(conv.epilogue[2].op, Step::kClip);
  EXPECT_EQ(conv.epilogue[2].operand, Step::kNone);
  EXPECT_FALSE(conv.epilogue[2].data.has_value());
  EXPECT_EQ(conv.epilogue[2].lo, 0.0f);
  EXPECT_EQ(conv.epilogue[2].hi, 6.0f);
  // The kernel writes workspace; tanh has no epilogue form and is a loop over it.
  BufferId result = std::get<BufferId>(ArgOf(conv, "out"));
  EXPECT_EQ(plan.buffers[result].kind, PlanBuffer::kWorkspace);
  EXPECT_EQ(plan.NumOf(PlanBuffer::kWorkspace), 1);
  const ElementwiseLoop& tail = StepAt<ElementwiseLoop>(plan, 1);
  EXPECT_THAT(MemberOps(tail), ElementsAre("tanh"));
  EXPECT_EQ(tail.members[0].operands[0].buffer, result);
  EXPECT_EQ(tail.members[0].output, plan.Output(0));
}

// nn.conv2d_winograd (AlterOpLayout's form of conv2d.nchwc_winograd) is a Conv2DWinograd call
// that applies the bias, the residual add and relu after it; the kernel writes the output.
TEST(Lowering, WinogradConvolutionTakesTheEpilogue) {
  Plan plan = Lower(R"(fn (%p0: Tensor[(2, 3, 13, 10, 8), float32], %p1: Tensor[(36, 2, 3, 8, 16), float32], %p2: Tensor[(1, 2, 1, 1, 16), float32], %p3: Tensor[(2, 2, 14, 10, 16), float32]) {
    %0 = nn.conv2d_winograd(%p0, %p1, padding=[2, 0, 1, 2], data_layout="NCHW8c", out_layout="NCHW16c");
    %1 = add(%0, %p2);
    %2 = add(%1, %p3);
    %3 = nn.relu(%2);
    %3
  })");
  ASSERT_EQ(plan.steps.size(), 1u);
  const KernelCall& conv = StepAt<KernelCall>(plan, 0);
  EXPECT_EQ(conv.kernel, "Conv2DWinograd");
  EXPECT_EQ(conv.implementation, "conv2d.nchwc_winograd");
  // N, C, H, W, in block, O, out block, OH, OW, pads top and left.
  ExpectParams(conv, "Conv2DWinogradParams", kernels::Conv2DWinogradParams{2, 24, 13, 10, 8, 32, 16, 14, 10, 2, 0});
  EXPECT_EQ(ArgOf(conv, "weight"), KernelArg::Value(plan.Param(1)));
  EXPECT_EQ(ArgOf(conv, "out"), KernelArg::Value(plan.Output(0)));
  ASSERT_TRUE(conv.takes_epilogue);
  ASSERT_EQ(conv.epilogue.size(), 3u);
  EXPECT_EQ(conv.epilogue[0].operand, Step::kChannel);
  EXPECT_EQ(conv.epilogue[1].operand, Step::kTensor);
  EXPECT_EQ(conv.epilogue[1].data, plan.Param(3));
  EXPECT_EQ(conv.epilogue[2].op, Step::kRelu);
}

TEST(Lowering, ActivationsJoinTheEpilogueAndTheKernelWritesTheOutput) {
  Plan plan = Lower(R"(fn (%p0: Tensor[(1, 1, 4, 4, 16), float32], %p1: Tensor[(1, 1, 1, 1, 16, 16), float32], %p2: Tensor[(1, 1, 1, 1, 16), float32]) {
    %0 = nn.conv2d(%p0, %p1, data_layout="NCHW16c", kernel_layout="OIHW16i16o", out_layout="NCHW16c");
    %1 = add(%0, %p2);
    %2 = sigmoid(%1);
    %3 = multiply(%2, %1);
    %4 = nn.relu(%3);
    %4
  })");
  ASSERT_EQ(plan.steps.size(), 1u);
  const KernelCall& conv = StepAt<KernelCall>(plan, 0);
  ASSERT_EQ(conv.epilogue.size(), 3u);
  EXPECT_EQ(conv.epilogue[0].op, Step::kAdd);
  EXPECT_EQ(conv.epilogue[1].op, Step::kSwish);
  EXPECT_EQ(conv.epilogue[2].op, Step::kRelu);
  EXPECT_EQ(ArgOf(conv, "out"), KernelArg::Value(plan.Output(0)));
  EXPECT_EQ(plan.NumOf(PlanBuffer::kWorkspace), 0);
  // Hard swish and sigmoid are epilogue steps too.
  Plan other = Lower(R"(fn (%p0: Tensor[(1, 1, 4, 4, 16), float32], %p1: Tensor[(1, 1, 1, 1, 16, 16), float32]) {
    %0 = nn.conv2d(%p0, %p1, data_layout="NCHW16c", kernel_layout="OIHW16i16o", out_layout="NCHW16c");
    %1 = nn.hard_swish(%0);
    sigmoid(%1)
  })");
  ASSERT_EQ(other.steps.size(), 1u);
  const std::vector<EpilogueOp>& steps = StepAt<KernelCall>(other, 0).epilogue;
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].op, Step::kHardSwish);
  EXPECT_EQ(steps[1].op, Step::kSigmoid);
}

// The sigmoid is returned too, so x * sigmoid(x) cannot be one epilogue step; an operand computed
// in the function (not a parameter) cannot move up to the kernel.
TEST(Lowering, EpilogueStopsAtValuesReadElsewhere) {
  Plan plan = Lower(R"(fn (%p0: Tensor[(1, 1, 4, 4, 8), float32], %p1: Tensor[(1, 1, 1, 1, 8, 8), float32], %p2: Tensor[(1, 1, 4, 4, 8), float32]) {
    %0 = nn.conv2d(%p0, %p1, data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c");
    %1 = nn.relu(%0);
    %2 = exp(%p2);
    %3 = add(%1, %2);
    %3
  })");
  const KernelCall& conv = StepAt<KernelCall>(plan, 0);
  ASSERT_EQ(conv.epilogue.size(), 1u);
  EXPECT_EQ(conv.epilogue[0].op, Step::kRelu);
  EXPECT_EQ(conv.implementation, "conv2d.nchwc_1x1");
  ExpectParams(conv, "Conv2DNCHWcParams",
               kernels::Conv2DNCHWcParams{1, 8, 4, 4, 8, 8, 8, 1, 1, 4, 4, 1, 1, 1, 1, 0, 0, 1, false, false,
                                          false, true});  // 16 positions run as one row

  Plan returned = Lower(R"(fn (%p0: Tensor[(1, 1, 4, 4, 8), float32], %p1: Tensor[(1, 1, 1, 1, 8, 8), float32]) {
    %0 = nn.conv2d(%p0, %p1, data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c");
    %1 = sigmoid(%0);
    %2 = multiply(%0, %1);
    (%2, %1)
  })");
  EXPECT_TRUE(StepAt<KernelCall>(returned, 0).epilogue.empty());
  EXPECT_THAT(MemberOps(StepAt<ElementwiseLoop>(returned, 1)), ElementsAre("sigmoid", "multiply"));
}

// A plain depthwise convolution applies its tail as the epilogue (bias_add along channels, a
// per-channel multiply, relu); an op it cannot apply (exp) and what follows stay a loop.
TEST(Lowering, PlainDepthwiseConvolutionTakesItsTailAsItsEpilogue) {
  Plan plan = Lower(R"(fn (%x: Tensor[(1, 2, 5, 4), float32], %w: Tensor[(6, 1, 3, 3), float32], %b: Tensor[(6), float32],
                        %s: Tensor[(6, 1, 1), float32]) {
    %0 = nn.conv2d(%x, %w, strides=[2, 1], padding=[1, 0, 1, 0], groups=2); %1 = nn.bias_add(%0, %b);
    %2 = multiply(%1, %s); %3 = nn.relu(%2); %4 = exp(%3); %5 = nn.relu(%4); %5
  })");
  ASSERT_EQ(plan.steps.size(), 2u);
  const KernelCall& conv = StepAt<KernelCall>(plan, 0);
  EXPECT_EQ(conv.kernel, "DepthwiseConv2D");
  EXPECT_EQ(conv.implementation, "conv2d.nchw_depthwise");  // one group per channel, multiplier 3
  EXPECT_TRUE(conv.takes_epilogue);
  ASSERT_EQ(conv.epilogue.size(), 3u);
  EXPECT_EQ(conv.epilogue[0].op, Step::kAdd);
  EXPECT_EQ(conv.epilogue[0].operand, Step::kChannel);
  EXPECT_EQ(conv.epilogue[1].op, Step::kMultiply);
  EXPECT_EQ(conv.epilogue[1].operand, Step::kChannel);
  EXPECT_EQ(conv.epilogue[2].op, Step::kRelu);
  ExpectParams(conv, "Conv2DParams", kernels::Conv2DParams{1, 2, 5, 4, 6, 3, 3, 3, 2, 2, 1, 1, 1, 1, 0, 2, true});
  EXPECT_THAT(MemberOps(StepAt<ElementwiseLoop>(plan, 1)), ElementsAre("exp", "nn.relu"));
}

// Other plain convolutions apply their tail in their matrix product's tiles (a per-channel bias
// of shape [O, 1, 1], a residual, relu); an op they cannot apply stays a loop.
TEST(Lowering, PlainConvolutionTakesItsTailAsItsEpilogue) {
  Plan plan = Lower(R"(fn (%x: Tensor[(1, 2, 5, 4), float32], %w: Tensor[(6, 2, 3, 3), float32], %b: Tensor[(6, 1, 1), float32],
                        %r: Tensor[(1, 6, 3, 2), float32]) {
    %0 = nn.conv2d(%x, %w, strides=[2, 1], padding=[1, 0, 1, 0]); %1 = add(%0, %b); %2 = add(%1, %r);
    %3 = nn.relu(%2); %4 = tanh(%3); %4
  })");
  ASSERT_EQ(plan.steps.size(), 2u);
  const KernelCall& conv = StepAt<KernelCall>(plan, 0);
  EXPECT_EQ(conv.kernel, "Conv2D");
  EXPECT_EQ(conv.implementation, "conv2d.nchw_im2col_gemm");
  EXPECT_TRUE(conv.takes_epilogue);
  ASSERT_EQ(conv.epilogue.size(), 3u);
  EXPECT_EQ(conv.epilogue[0].operand, Step::kChannel);
  EXPECT_EQ(conv.epilogue[1].operand, Step::kTensor);
  EXPECT_EQ(conv.epilogue[2].op, Step::kRelu);
  EXPECT_THAT(MemberOps(StepAt<ElementwiseLoop>(plan, 1)), ElementsAre("tanh"));
}

// A parameter struct is written whole, in its fields' order, as the kernel declares it.
TEST(Lowering, KernelParametersArePrintedWhole) {
  KernelParams roi = TypedParams("RoiAlignShape", kernels::RoiAlignShape{1, 2, 3, 4, 5, 6, 7, 0, 0.25f, true, false});
  EXPECT_EQ(ParamsLiteral(roi), "kiln::kernels::RoiAlignShape{1LL, 2LL, 3LL, 4LL, 5LL, 6LL, 7LL, 0LL, 0.25f, true, false}");
  static_assert(detail::FieldCount<kernels::Conv2DNCHWcParams>() == 22, "Conv2DNCHWcParams has 22 fields");
  Plan plan = Lower(R"(fn (%x: Tensor[(1, 2, 5, 4), float32], %w: Tensor[(4, 2, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w); %0
  })");
  EXPECT_THAT(GenerateOperatorSource(plan),
              HasSubstr("const auto params = kiln::kernels::Conv2DParams{1LL, 2LL, 5LL, 4LL, 4LL, 3LL, 3LL, 3LL, 2LL, "
                        "1LL, 1LL, 1LL, 1LL, 0LL, 0LL, 1LL, false};"));
  EXPECT_EQ(plan.Implementations(), "conv2d.nchw_im2col_gemm");
}

// With a batch dimension (frontend/batch_samples.h), a function that is one kernel call whose
// parameter struct counts samples passes the whole batch to it; any other runs its steps once per
// sample on offset pointers.
TEST(Lowering, BatchedFunctionsRunTheBatchWholeOrSampleBySample) {
  EXPECT_EQ(TypedParams("Conv2DParams", kernels::Conv2DParams{}).sample_field, "batch");
  EXPECT_EQ(TypedParams("Pool2DParams", kernels::Pool2DParams{}).sample_field, "batch_channels");
  EXPECT_EQ(TypedParams("TopKShape", kernels::TopKShape{}).sample_field, "");
  Plan conv = Lower(R"(fn (%x: Tensor[(1, 2, 5, 4), float32], %w: Tensor[(4, 2, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w); %0
  })");
  std::string whole = GenerateOperatorSource(conv, {true, false, true});
  EXPECT_THAT(whole, HasSubstr("CheckBatchedArgs("));
  EXPECT_THAT(whole, HasSubstr("params.batch *= samples;"));
  EXPECT_THAT(whole, ::testing::Not(HasSubstr("for (int64_t sample = 0")));
  Plan conv_tanh = Lower(R"(fn (%x: Tensor[(1, 2, 5, 4), float32], %w: Tensor[(4, 2, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w); %1 = tanh(%0); %1
  })");
  std::string by_sample = GenerateOperatorSource(conv_tanh, {true, false, true});
  EXPECT_THAT(by_sample, HasSubstr("for (int64_t sample = 0; sample < samples; ++sample)"));
  EXPECT_THAT(by_sample, ::testing::Not(HasSubstr("*= samples")));
}

// A global pooling is large by what it reads: its planes split across threads, though its output
// is a value per channel.
TEST(Lowering, GlobalPoolingOfALargeInputSplitsItsPlanes) {
  Plan large = Lower(R"(fn (%x: Tensor[(1, 9, 56, 56, 16), float32]) {
    %0 = nn.global_avg_pool2d(%x, layout="NCHW16c"); %0
  })");
  EXPECT_TRUE(StepAt<LoopOp>(large, 0).parallel);
  EXPECT_THAT(GenerateOperatorSource(large), HasSubstr("ParallelFor(9LL"));
  Plan small = Lower(R"(fn (%x: Tensor[(1, 2, 4, 4, 16), float32]) {
    %0 = nn.global_avg_pool2d(%x, layout="NCHW16c"); %0
  })");
  EXPECT_THAT(GenerateOperatorSource(small), ::testing::Not(HasSubstr("ParallelFor")));
}

TEST(Lowering, UnsupportedBlockedFormIsAClearError) {
  try {
    Lower(R"(fn (%x: Tensor[(1, 1, 4, 4, 16), float32], %w: Tensor[(16, 16, 1, 1), float32]) {
      %0 = nn.conv2d(%x, %w, data_layout="NCHW16c", out_layout="NCHW16c"); %0
    })");
    FAIL() << "no error";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is not supported by the host code generator ("));
    EXPECT_THAT(e.what(), HasSubstr("conv2d.nchwc_1x1: the kernel layout must be OIHW16i16o"));
  }
}

// A packed dense layer calls the packed matrix kernel, which adds its bias (one value per output
// feature) to each tile; the rest of its elementwise tail (erf, scale), which no epilogue step
// computes, is one loop that stores only its last value, split across threads at this size
// (128 x 512).
TEST(Lowering, PackedDenseAndOneFusedLoop) {
  Plan plan = Lower(R"(fn (%x: Tensor[(128, 64), float32], %w: Tensor[(32, 64, 16), float32], %b: Tensor[(512), float32], %s: Tensor[(), float32]) {
    %0 = nn.dense(%x, %w, weight_layout="NK16n"); %1 = add(%0, %b); %2 = erf(%1); %3 = multiply(%2, %s); %3
  })");
  ASSERT_EQ(plan.steps.size(), 2u);
  const KernelCall& gemm = StepAt<KernelCall>(plan, 0);
  EXPECT_EQ(gemm.kernel, "GemmPacked");
  EXPECT_EQ(gemm.implementation, "dense.gemm_packed");
  EXPECT_EQ(plan.Implementations(), "dense.gemm_packed + elementwise loop");
  EXPECT_EQ(ArgOf(gemm, "m"), Int(128));
  EXPECT_EQ(ArgOf(gemm, "n"), Int(512));
  EXPECT_EQ(ArgOf(gemm, "k"), Int(64));
  EXPECT_EQ(ArgOf(gemm, "b_packed"), KernelArg::Value(plan.Param(1)));
  ASSERT_TRUE(gemm.takes_epilogue);
  ASSERT_EQ(gemm.epilogue.size(), 1u);
  EXPECT_EQ(gemm.epilogue[0].op, kernels::EpilogueStep::kAdd);
  EXPECT_EQ(gemm.epilogue[0].operand, kernels::EpilogueStep::kChannel);
  EXPECT_EQ(gemm.epilogue[0].data, plan.Param(2));
  EXPECT_EQ(plan.NumOf(PlanBuffer::kWorkspace), 1);  // the product with its bias only
  const ElementwiseLoop& tail = StepAt<ElementwiseLoop>(plan, 1);
  EXPECT_THAT(MemberOps(tail), ElementsAre("erf", "multiply"));
  EXPECT_TRUE(tail.parallel);
  EXPECT_FALSE(tail.members[0].output.has_value());
  EXPECT_EQ(tail.members[1].operands[0].member, 0);
  EXPECT_EQ(tail.members[1].output, plan.Output(0));

  // Bias, residual and relu all in the kernel's epilogue: no loop. A bias along another axis is
  // not one value per feature: it stays a loop.
  Plan epilogue = Lower(R"(fn (%x: Tensor[(1, 20, 64), float32], %w: Tensor[(2, 64, 16), float32],
                              %b: Tensor[(32), float32], %r: Tensor[(1, 20, 32), float32]) {
    %0 = nn.dense(%x, %w, weight_layout="NK16n"); %1 = nn.bias_add(%0, %b, axis=-1); %2 = add(%1, %r);
    %3 = nn.relu(%2); %3
  })");
  ASSERT_EQ(epilogue.steps.size(), 1u);
  const KernelCall& fused = StepAt<KernelCall>(epilogue, 0);
  ASSERT_EQ(fused.epilogue.size(), 3u);
  EXPECT_EQ(fused.epilogue[0].operand, kernels::EpilogueStep::kChannel);
  EXPECT_EQ(fused.epilogue[1].operand, kernels::EpilogueStep::kTensor);
  EXPECT_EQ(fused.epilogue[2].op, kernels::EpilogueStep::kRelu);
  EXPECT_EQ(ArgOf(fused, "c"), KernelArg::Value(epilogue.Output(0)));
  Plan other_axis = Lower(R"(fn (%x: Tensor[(20, 64), float32], %w: Tensor[(2, 64, 16), float32],
                                %b: Tensor[(20, 1), float32]) {
    %0 = nn.dense(%x, %w, weight_layout="NK16n"); %1 = add(%0, %b); %1
  })");
  ASSERT_EQ(other_axis.steps.size(), 2u);
  EXPECT_TRUE(StepAt<KernelCall>(other_axis, 0).epilogue.empty());

  // A plain weight calls the matrix kernel with B transposed; a small loop stays on the calling thread.
  Plan plain = Lower(R"(fn (%x: Tensor[(4, 8), float32], %w: Tensor[(3, 8), float32]) {
    %0 = nn.dense(%x, %w); %1 = nn.relu(%0); %1
  })");
  const KernelCall& gemm2 = StepAt<KernelCall>(plain, 0);
  EXPECT_EQ(gemm2.kernel, "Gemm");
  EXPECT_EQ(ArgOf(gemm2, "b_transposed"), KernelArg::Value(true));
  EXPECT_EQ(ArgOf(gemm2, "ldb"), Int(8));
  EXPECT_FALSE(StepAt<ElementwiseLoop>(plain, 1).parallel);
}

// Data-movement loops over large outputs (transpose, strided_slice, tile, pad, resize,
// layout_transform) split the output across the runtime's threads in tasks of its inner
// dimensions; small ones stay on the calling thread.
TEST(Lowering, LargeDataMovementLoopsSplitAcrossThreads) {
  Plan large = Lower(R"(fn (%x: Tensor[(128, 12, 64), float32]) {
    transpose(%x, axes=[1, 0, 2])
  })");
  ASSERT_EQ(large.steps.size(), 1u);
  EXPECT_TRUE(StepAt<LoopOp>(large, 0).parallel);
  std::string source = GenerateOperatorSource(large);
  EXPECT_THAT(source, HasSubstr("kiln::kernels::ParallelFor(1536LL"));  // 12 x 128 rows of 64
  EXPECT_THAT(source, HasSubstr("task_ * 64LL"));
  // Rows shorter than 64 elements: each task takes whole planes of them.
  Plan blocked = Lower(R"(fn (%x: Tensor[(1, 64, 40, 40), float32]) {
    layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c")
  })");
  std::string blocked_source = GenerateOperatorSource(blocked);
  EXPECT_THAT(blocked_source, HasSubstr("kiln::kernels::ParallelFor(160LL"));  // 4 blocks x 40 rows of 40 x 16
  EXPECT_THAT(blocked_source, HasSubstr("task_ * 640LL"));
  // Small planes of many channels: tasks of one plane each, not one task of every plane.
  Plan planes = Lower(R"(fn (%x: Tensor[(1, 2048, 7, 7), float32], %s: Tensor[(2048, 1, 1), float32]) {
    %0 = multiply(%x, %s);
    %1 = transpose(%x, axes=[0, 1, 3, 2]);
    (%0, %1)
  })");
  std::string planes_source = GenerateOperatorSource(planes);
  size_t plane_loops = 0;
  for (size_t at = planes_source.find("kiln::kernels::ParallelFor(2048LL"); at != std::string::npos;
       at = planes_source.find("kiln::kernels::ParallelFor(2048LL", at + 1)) {
    ++plane_loops;
  }
  EXPECT_EQ(plane_loops, 2u) << planes_source;  // the elementwise loop and the transpose
  // A blocked transpose (EmitBlockedTranspose) splits into blocks of rows, or into blocks where
  // that leaves too few tasks: 8 rows of 65536 columns are 4096 tasks, not one; BERT's keys 48.
  Plan narrow = Lower(R"(fn (%x: Tensor[(65536, 8), float32]) {
    transpose(%x, axes=[1, 0])
  })");
  EXPECT_THAT(GenerateOperatorSource(narrow), HasSubstr("kiln::kernels::ParallelFor(4096LL"));
  Plan keys = Lower(R"(fn (%x: Tensor[(1, 128, 12, 64), float32]) {
    transpose(%x, axes=[0, 2, 3, 1])
  })");
  std::string keys_source = GenerateOperatorSource(keys);
  EXPECT_THAT(keys_source, HasSubstr("kiln::kernels::ParallelFor(48LL"));  // 12 heads x 4 blocks of 16 rows
  EXPECT_THAT(keys_source, HasSubstr("l0_ += 16LL"));
  Plan small = Lower(R"(fn (%x: Tensor[(4, 3, 8), float32]) {
    transpose(%x, axes=[1, 0, 2])
  })");
  EXPECT_FALSE(StepAt<LoopOp>(small, 0).parallel);
  EXPECT_THAT(GenerateOperatorSource(small), ::testing::Not(HasSubstr("ParallelFor")));
}

// A tree of data-movement ops is one gather loop over its root's output, in runs that lie one
// after another in one leaf: ShuffleNet's channel shuffle in runs of a plane.
TEST(Lowering, DataMovementTreesAreOneGatherLoop) {
  Plan shuffle = Lower(R"(fn (%a: Tensor[(1, 58, 28, 28), float32], %b: Tensor[(1, 116, 28, 28), float32]) {
    %0 = strided_slice(%b, begin=[58], end=[116], axes=[1]);
    %1 = concatenate(%a, %0, axis=1);
    %2 = reshape(%1, newshape=[1, 2, 58, 28, 28]);
    %3 = transpose(%2, axes=[0, 2, 1, 3, 4]);
    %4 = reshape(%3, newshape=[1, 116, 28, 28]);
    %4
  })");
  ASSERT_EQ(shuffle.steps.size(), 1u);
  const GatherLoop& loop = StepAt<GatherLoop>(shuffle, 0);
  EXPECT_EQ(loop.run, 784);
  EXPECT_EQ(loop.output, shuffle.Output(0));
  EXPECT_TRUE(loop.parallel);
  ASSERT_EQ(loop.nodes.size(), 7u);  // four reshape/transpose/concatenate/slice calls, three leaves
  EXPECT_EQ(loop.nodes[0].call->op->name, "reshape");
  std::vector<BufferId> leaves;
  for (const GatherLoop::Node& node : loop.nodes) {
    if (node.call == nullptr) leaves.push_back(node.leaf);
  }
  EXPECT_THAT(leaves, ElementsAre(shuffle.Param(0), shuffle.Param(1)));
  EXPECT_EQ(shuffle.Implementations(), "gather loop");
  std::string source = GenerateOperatorSource(shuffle);
  EXPECT_THAT(source, HasSubstr("kiln::kernels::ParallelFor(116LL"));  // 116 planes
  EXPECT_THAT(source, HasSubstr("784LL * sizeof(float)"));
  EXPECT_THAT(source, ::testing::Not(HasSubstr("Workspace")));  // no buffer between the ops

  // Runs of 8 heads' features: reshape and transpose of attention heads.
  Plan heads = Lower(R"(fn (%x: Tensor[(1, 7, 96), float32]) {
    %0 = reshape(%x, newshape=[1, 7, 12, 8]);
    %1 = transpose(%0, axes=[0, 2, 1, 3]);
    %1
  })");
  EXPECT_EQ(StepAt<GatherLoop>(heads, 0).run, 8);
  EXPECT_FALSE(StepAt<GatherLoop>(heads, 0).parallel);

  // A transpose of the last axis leaves runs of 1: the transpose keeps its own loops (in blocks,
  // EmitBlockedTranspose) and reads the reshape's argument where it lies. A lone op is not a tree.
  Plan last_axis = Lower(R"(fn (%x: Tensor[(4, 6, 10), float32]) {
    %0 = reshape(%x, newshape=[24, 10]);
    %1 = transpose(%0, axes=[1, 0]);
    %1
  })");
  ASSERT_EQ(last_axis.steps.size(), 1u);
  const LoopOp& transpose = StepAt<LoopOp>(last_axis, 0);
  EXPECT_EQ(transpose.call->op->name, "transpose");
  EXPECT_EQ(last_axis.buffers[transpose.inputs[0]].view_of, last_axis.Param(0));
  std::string last_axis_source = GenerateOperatorSource(last_axis);
  EXPECT_THAT(last_axis_source, HasSubstr("const float* t0 = reinterpret_cast<const float*>(p0);"));
  EXPECT_THAT(last_axis_source, HasSubstr("const int64_t column_ = rest_ % 2LL * 16LL;"));  // blocks of 16 x 16

  // Below a root whose runs are too short, a subtree that has long ones is a gather loop; a value
  // read twice is a leaf of both trees that read it.
  Plan subtree = Lower(R"(fn (%a: Tensor[(2, 16, 9), float32], %b: Tensor[(2, 16, 9), float32]) {
    %0 = concatenate(%a, %b, axis=1);
    %1 = reshape(%0, newshape=[2, 32, 9]);
    %2 = transpose(%1, axes=[0, 2, 1]);
    %3 = strided_slice(%a, begin=[0, 8], end=[2, 16], axes=[0, 1]);
    %4 = reshape(%3, newshape=[144]);
    (%2, %4)
  })");
  ASSERT_EQ(subtree.steps.size(), 3u);
  const GatherLoop& joined = StepAt<GatherLoop>(subtree, 0);
  EXPECT_EQ(joined.nodes[0].call->op->name, "reshape");
  EXPECT_EQ(joined.run, 144);  // each input's part of one image
  EXPECT_EQ(StepAt<LoopOp>(subtree, 1).call->op->name, "transpose");
  EXPECT_EQ(StepAt<GatherLoop>(subtree, 2).run, 72);  // the slice: half of each image's 144
}

TEST(Lowering, GlobalPoolingOfFloat64IsAClearError) {
  Plan plan = Lower(R"(fn (%x: Tensor[(1, 2, 3, 3), float64]) { %0 = nn.global_avg_pool2d(%x); %0 })");
  try {
    GenerateOperatorSource(plan);
    FAIL() << "no error";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("nn.global_avg_pool2d on float64 is not supported by the host code generator"));
  }
}

TEST(Lowering, UnsupportedWeightLayoutIsAClearError) {
  try {
    Lower(R"(fn (%x: Tensor[(2, 4), float32], %w: Tensor[(2, 4, 8), float32]) {
      %0 = nn.dense(%x, %w, weight_layout="NK8n"); %0
    })");
    FAIL() << "no error";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("nn.dense with weight layout NK8n on float32 is not supported by the host code generator"));
  }
}

// Elementwise runs end at a shape change; an op of another kind is a step of its own; a member
// read after its run gets a buffer.
TEST(Lowering, ElementwiseRunsAndLoopOps) {
  Plan plan = Lower(R"(fn (%x: Tensor[(4, 8), float32], %y: Tensor[(4, 8), float32]) {
    %0 = add(%x, %y);
    %1 = exp(%0);
    %2 = transpose(%1, axes=[1, 0]);
    %3 = negative(%2);
    %4 = multiply(%3, %3);
    (%4, %0)
  })");
  ASSERT_EQ(plan.steps.size(), 3u);
  const ElementwiseLoop& first = StepAt<ElementwiseLoop>(plan, 0);
  EXPECT_THAT(MemberOps(first), ElementsAre("add", "exp"));
  EXPECT_EQ(first.members[0].output, plan.Output(1));  // returned
  ASSERT_TRUE(first.members[1].output.has_value());    // read by the transpose
  EXPECT_EQ(plan.buffers[*first.members[1].output].kind, PlanBuffer::kWorkspace);
  const LoopOp& transpose = StepAt<LoopOp>(plan, 1);
  EXPECT_EQ(transpose.call->op->name, "transpose");
  EXPECT_THAT(transpose.inputs, ElementsAre(*first.members[1].output));
  const ElementwiseLoop& second = StepAt<ElementwiseLoop>(plan, 2);
  EXPECT_THAT(MemberOps(second), ElementsAre("negative", "multiply"));
  EXPECT_EQ(second.members[1].operands[0].member, 0);
  EXPECT_EQ(second.members[1].operands[1].member, 0);
  EXPECT_EQ(second.members[1].output, plan.Output(0));
}

// A parameter returned as it is and a value returned twice are copied; a reshape is a copy; a
// tuple-valued op writes its outputs in place.
TEST(Lowering, OutputsNotComputedInPlaceAreCopied) {
  Plan plan = Lower(R"(fn (%x: Tensor[(2, 6), float32]) {
    %0 = split(%x, sections=[2, 4], axis=1);
    %1 = %0.0;
    %2 = %0.1;
    %3 = reshape(%2, newshape=[8]);
    (%1, %3, %x, %3)
  })");
  ASSERT_EQ(plan.NumOf(PlanBuffer::kOutput), 4);
  const LoopOp& split = StepAt<LoopOp>(plan, 0);
  ASSERT_EQ(split.outputs.size(), 2u);
  EXPECT_EQ(split.outputs[0], plan.Output(0));
  EXPECT_EQ(plan.buffers[split.outputs[1]].kind, PlanBuffer::kWorkspace);
  const Copy& reshape = StepAt<Copy>(plan, 1);
  EXPECT_EQ(reshape.from, split.outputs[1]);
  EXPECT_EQ(reshape.to, plan.Output(1));
  const Copy& param = StepAt<Copy>(plan, 2);
  EXPECT_EQ(param.from, plan.Param(0));
  EXPECT_EQ(param.to, plan.Output(2));
  const Copy& twice = StepAt<Copy>(plan, 3);
  EXPECT_EQ(twice.from, plan.Output(1));
  EXPECT_EQ(twice.to, plan.Output(3));
  EXPECT_EQ(plan.steps.size(), 4u);
}

// A reshape is no step: its result is its argument's bytes (a view), and a value whose one reader
// is a reshape the function returns is written in place in that output. Where the argument lies
// elsewhere (a parameter returned reshaped, a field of a split), the output is a copy.
TEST(Lowering, ReshapesAreViewsOfTheirArgument) {
  Plan into_output = Lower(R"(fn (%x: Tensor[(4, 6), float32]) {
    %0 = transpose(%x, axes=[1, 0]);
    %1 = reshape(%0, newshape=[24]);
    %2 = exp(%1);
    %3 = reshape(%2, newshape=[2, 12]);
    %3
  })");
  ASSERT_EQ(into_output.steps.size(), 2u);
  const LoopOp& transpose = StepAt<LoopOp>(into_output, 0);
  BufferId transposed = transpose.outputs.at(0);
  EXPECT_EQ(into_output.buffers[transposed].kind, PlanBuffer::kWorkspace);
  EXPECT_EQ(into_output.buffers[transposed].view_of, -1);  // its reader's result is not returned
  const ElementwiseLoop& exp = StepAt<ElementwiseLoop>(into_output, 1);
  BufferId exp_out = *exp.members.at(0).output;
  EXPECT_EQ(into_output.buffers[exp_out].view_of, into_output.Output(0));
  EXPECT_EQ(into_output.buffers[exp.members.at(0).operands.at(0).buffer].view_of, transposed);
  std::string source = GenerateOperatorSource(into_output);
  EXPECT_THAT(source, HasSubstr("float* t2 = reinterpret_cast<float*>(out0);"));
  EXPECT_THAT(source, ::testing::Not(HasSubstr("memcpy")));

  Plan parameter = Lower(R"(fn (%x: Tensor[(4, 6), float32]) {
    reshape(%x, newshape=[24])
  })");
  ASSERT_EQ(parameter.steps.size(), 1u);
  EXPECT_EQ(StepAt<Copy>(parameter, 0).from, parameter.Param(0));
  EXPECT_EQ(StepAt<Copy>(parameter, 0).to, parameter.Output(0));
}

TEST(Lowering, PoolingSoftmaxAndLayerNormKernels) {
  Plan plan = Lower(R"(fn (%x: Tensor[(1, 2, 6, 6, 8), float32], %y: Tensor[(3, 5), float32], %g: Tensor[(5), float32], %b: Tensor[(5), float32]) {
    %0 = nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 0, 0], layout="NCHW8c", count_include_pad=1);
    %1 = nn.softmax(%y, axis=0);
    %2 = nn.layer_norm(%y, %g, %b, epsilon=0.25);
    (%0, %1, %2)
  })");
  const KernelCall& pool = StepAt<KernelCall>(plan, 0);
  EXPECT_EQ(pool.kernel, "AvgPool2DNCHWc");
  EXPECT_EQ(ArgOf(pool, "block"), Int(8));
  // 2 planes of blocks, 6 x 6 -> 3 x 3, 3 x 3 windows, strides 2, dilations 1, pads 1, 1, 0, 0.
  ExpectParams(pool, "Pool2DParams", kernels::Pool2DParams{2, 6, 6, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, true});
  const KernelCall& softmax = StepAt<KernelCall>(plan, 1);
  EXPECT_EQ(softmax.kernel, "Softmax");
  EXPECT_EQ(ArgOf(softmax, "outer"), Int(1));
  EXPECT_EQ(ArgOf(softmax, "axis_size"), Int(3));
  EXPECT_EQ(ArgOf(softmax, "inner"), Int(5));
  const KernelCall& norm = StepAt<KernelCall>(plan, 2);
  EXPECT_EQ(norm.kernel, "LayerNorm");
  EXPECT_EQ(ArgOf(norm, "rows"), Int(3));
  EXPECT_EQ(ArgOf(norm, "epsilon"), KernelArg::Value(0.25f));
}

}  // namespace
}  // namespace kiln::backend
