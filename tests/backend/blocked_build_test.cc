// Models in blocked layouts, built and run: layout_transform loops agree with
// ir::TransformLayout, and a small CNN built at -O3 (AlterOpLayout: blocked convolutions with
// fused epilogues, depthwise, pooling, concatenation, reductions, borders) computes what it
// computes at -O2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "backend/build.h"
#include "ir/layout.h"
#include "ir/text.h"
#include "runtime/graph_executor_module.h"
#include "runtime/thread_pool.h"
#include "tests/float_arrays.h"

namespace kiln::backend {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class BlockedBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("kiln_nchwc_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Builds `text` at `opt_level` with `params` bound, runs it on `inputs`, returns the outputs.
  std::vector<runtime::NDArray> Run(const std::string& text, int opt_level, const runtime::NamedArrays& params,
                                    const std::vector<runtime::NDArray>& inputs, std::string* graph_json = nullptr) {
    BuildOptions options;
    options.pass_context.opt_level = opt_level;
    options.params = params;
    ExecutorFactory factory = Build(ir::ParseFunction(text), options);
    if (graph_json != nullptr) *graph_json = factory.graph_json();
    std::string path = (dir_ / ("model" + std::to_string(counter_++) + ".so")).string();
    factory.ExportLibrary(path);
    runtime::Module lib = runtime::LoadModuleFromFile(path);
    auto exec = runtime::GetGraphExecutor(lib.GetFunction("default")(runtime::kCPU).AsModule());
    for (size_t i = 0; i < inputs.size(); ++i) exec->SetInput(static_cast<int>(i), *inputs[i].get());
    exec->Run();
    std::vector<runtime::NDArray> outputs;
    for (int i = 0; i < exec->NumOutputs(); ++i) outputs.push_back(exec->GetOutput(i).Clone());
    return outputs;
  }

  static runtime::NDArray Random(const std::vector<int64_t>& shape, std::mt19937& rng, float scale = 1.0f) {
    runtime::NDArray a = runtime::NDArray::Empty(shape, runtime::kFloat32);
    std::uniform_real_distribution<float> uniform(-scale, scale);
    auto* data = static_cast<float*>(a.data());
    for (size_t i = 0; i < a.NumBytes() / sizeof(float); ++i) data[i] = uniform(rng);
    return a;
  }

  std::filesystem::path dir_;
  int counter_ = 0;
};

// Each transform is its own operator at -O0 (nothing cancels them) and equals the reference.
TEST_F(BlockedBuildTest, LayoutTransformsMatchTheReference) {
  std::mt19937 rng(1);
  runtime::NDArray x = Random({2, 48, 3, 5}, rng), w = Random({32, 48, 3, 3}, rng);
  std::vector<runtime::NDArray> out = Run(R"(fn (%x: Tensor[(2, 48, 3, 5), float32], %w: Tensor[(32, 48, 3, 3), float32]) {
    %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
    %1 = layout_transform(%0, src_layout="NCHW16c", dst_layout="NCHW8c");
    %2 = layout_transform(%1, src_layout="NCHW8c", dst_layout="NCHW");
    %3 = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW16i8o");
    (%0, %1, %2, %3)
  })", 0, {}, {x, w});
  using ir::Layout;
  Layout nchw = Layout::Parse("NCHW"), c16 = Layout::Parse("NCHW16c"), c8 = Layout::Parse("NCHW8c");
  EXPECT_EQ(test::ToVector(out[0]), test::ToVector(*ir::TransformLayout(x, nchw, c16)));
  EXPECT_EQ(test::ToVector(out[1]), test::ToVector(*ir::TransformLayout(x, nchw, c8)));
  EXPECT_EQ(test::ToVector(out[2]), test::ToVector(x));
  EXPECT_EQ(test::ToVector(out[3]), test::ToVector(*ir::TransformLayout(w, Layout::Parse("OIHW"), Layout::Parse("OIHW16i8o"))));
}

// Large data-movement loops run split across threads (lowering_test: tasks of inner dimensions):
// layout transforms with rows of 16 and 8 elements, a transpose, a pad, a strided slice and
// nearest and linear resizes, at 3 threads, equal the reference element by element (the linear
// one within float rounding). So do nearest resizes that copy runs of the axes after the last
// resized one (image_emitter.cc): a blocked tensor's 16 channels, a plain one's rows.
TEST_F(BlockedBuildTest, LargeDataMovementLoopsSplitAcrossThreadsMatchTheReference) {
  constexpr int N = 2, C = 64, H = 30, W = 20;
  std::mt19937 rng(4);
  runtime::NDArray x = Random({N, C, H, W}, rng);
  std::vector<runtime::NDArray> out;
  {
    runtime::ScopedThreadCount threads(3);
    out = Run(R"(fn (%x: Tensor[(2, 64, 30, 20), float32]) {
      %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
      %1 = layout_transform(%0, src_layout="NCHW16c", dst_layout="NCHW8c");
      %2 = transpose(%x, axes=[0, 2, 3, 1]);
      %3 = nn.pad(%x, pad_width=[0, 0, 0, 0, 2, 1, 1, 3], pad_value=0.5);
      %4 = strided_slice(%x, begin=[1], end=[30], strides=[2], axes=[2]);
      %5 = image.resize(%x, size=[2, 64, 60, 40], scales=[1.0, 1.0, 2.0, 2.0], method="nearest_neighbor",
                        coordinate_transformation_mode="asymmetric", rounding_method="floor");
      %6 = image.resize(%x, size=[2, 64, 60, 40], scales=[1.0, 1.0, 2.0, 2.0], method="linear",
                        coordinate_transformation_mode="asymmetric");
      %7 = image.resize(%0, size=[2, 4, 60, 40, 16], scales=[1.0, 1.0, 2.0, 2.0, 1.0], method="nearest_neighbor",
                        coordinate_transformation_mode="asymmetric", rounding_method="floor");
      %8 = image.resize(%x, size=[2, 64, 60, 20], scales=[1.0, 1.0, 2.0, 1.0], method="nearest_neighbor",
                        coordinate_transformation_mode="asymmetric", rounding_method="floor");
      (%0, %1, %2, %3, %4, %5, %6, %7, %8)
    })", 0, {}, {x});
  }
  using ir::Layout;
  Layout nchw = Layout::Parse("NCHW");
  EXPECT_EQ(test::ToVector(out[0]), test::ToVector(*ir::TransformLayout(x, nchw, Layout::Parse("NCHW16c"))));
  EXPECT_EQ(test::ToVector(out[1]), test::ToVector(*ir::TransformLayout(x, nchw, Layout::Parse("NCHW8c"))));
  std::vector<float> in = test::ToVector(x), transposed = test::ToVector(out[2]), padded = test::ToVector(out[3]);
  std::vector<float> sliced = test::ToVector(out[4]), nearest = test::ToVector(out[5]), linear = test::ToVector(out[6]);
  EXPECT_EQ(test::ToVector(out[7]), test::ToVector(*ir::TransformLayout(out[5], nchw, Layout::Parse("NCHW16c"))));
  std::vector<float> rows = test::ToVector(out[8]);
  auto at = [&](int n, int c, int h, int w) { return in[((n * C + c) * H + h) * W + w]; };
  // Along a doubled axis, asymmetric: output o reads input o / 2, halfway to the next (the last
  // input repeated past the end) when o is odd.
  auto lerp = [&](int n, int c, int oh, int w) {
    int h = oh / 2, h1 = std::min(h + 1, H - 1);
    return oh % 2 == 0 ? at(n, c, h, w) : 0.5f * at(n, c, h, w) + 0.5f * at(n, c, h1, w);
  };
  for (int n = 0; n < N; ++n) {
    for (int c = 0; c < C; ++c) {
      for (int h = 0; h < 2 * H; ++h) {
        for (int w = 0; w < 2 * W; ++w) {
          std::string where =
              std::to_string(n) + " " + std::to_string(c) + " " + std::to_string(h) + " " + std::to_string(w);
          ASSERT_EQ(nearest[((n * C + c) * 2 * H + h) * 2 * W + w], at(n, c, h / 2, w / 2)) << where;
          int w0 = w / 2, w1 = std::min(w0 + 1, W - 1);
          float want = w % 2 == 0 ? lerp(n, c, h, w0) : 0.5f * lerp(n, c, h, w0) + 0.5f * lerp(n, c, h, w1);
          ASSERT_NEAR(linear[((n * C + c) * 2 * H + h) * 2 * W + w], want, 1e-6f) << where;
          if (h < H + 3 && w < W + 4) {
            bool inside = h >= 2 && h < H + 2 && w >= 1 && w < W + 1;
            ASSERT_EQ(padded[((n * C + c) * (H + 3) + h) * (W + 4) + w], inside ? at(n, c, h - 2, w - 1) : 0.5f) << where;
          }
          if (h < H && w < W) {
            ASSERT_EQ(transposed[((n * H + h) * W + w) * C + c], at(n, c, h, w)) << where;
          }
          if (w < W) {
            ASSERT_EQ(rows[((n * C + c) * 2 * H + h) * W + w], at(n, c, h / 2, w)) << where;
          }
          if (h < H / 2 && w < W) {
            ASSERT_EQ(sliced[((n * C + c) * (H / 2) + h) * W + w], at(n, c, 2 * h + 1, w)) << where;
          }
        }
      }
    }
  }
}

// Large elementwise loops whose operands are not read as the output is laid out (a channel bias of
// the blocked layout, a per-channel scale of NCHW) run split across threads in tasks of their inner
// dimensions, at 3 threads, and equal the reference element by element.
TEST_F(BlockedBuildTest, LargeBroadcastingLoopsSplitAcrossThreadsMatchTheReference) {
  constexpr int N = 2, C = 64, H = 30, W = 20;
  std::mt19937 rng(5);
  runtime::NDArray x = Random({N, C, H, W}, rng), bias = Random({1, C / 16, 1, 1, 16}, rng), scale = Random({C, 1, 1}, rng);
  std::vector<runtime::NDArray> out;
  {
    runtime::ScopedThreadCount threads(3);
    out = Run(R"(fn (%x: Tensor[(2, 64, 30, 20), float32], %b: Tensor[(1, 4, 1, 1, 16), float32], %s: Tensor[(64, 1, 1), float32]) {
      %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
      %1 = add(%0, %b);
      %2 = multiply(%x, %s);
      (%1, %2)
    })", 0, {}, {x, bias, scale});
  }
  std::vector<float> in = test::ToVector(x), b = test::ToVector(bias), sc = test::ToVector(scale);
  std::vector<float> biased = test::ToVector(out[0]), scaled = test::ToVector(out[1]);
  for (int n = 0; n < N; ++n) {
    for (int c = 0; c < C; ++c) {
      for (int p = 0; p < H * W; ++p) {
        float v = in[(n * C + c) * H * W + p];
        std::string where = std::to_string(n) + " " + std::to_string(c) + " " + std::to_string(p);
        ASSERT_EQ(biased[((n * (C / 16) + c / 16) * H * W + p) * 16 + c % 16], v + b[c]) << where;
        ASSERT_EQ(scaled[(n * C + c) * H * W + p], v * sc[c]) << where;
      }
    }
  }
}

// A small CNN touching every blocked form: a 3-channel stem read as NCHW, max pooling, a
// residual block, a depthwise convolution with swish, 24 channels (block 8), clip, average pooling, a
// channel concatenation, a squeeze-and-excitation scale (mean over H and W, sigmoid, multiply),
// global pooling and a dense head on the plain tensor.
TEST_F(BlockedBuildTest, SmallCnnMatchesAtO2AndO3) {
  const char* model = R"(fn (%x: Tensor[(2, 3, 21, 19), float32], %w0: Tensor[(16, 3, 3, 3), float32], %b0: Tensor[(16), float32],
                             %w1: Tensor[(16, 16, 3, 3), float32], %b1: Tensor[(16, 1, 1), float32], %wd: Tensor[(16, 1, 3, 3), float32],
                             %w2: Tensor[(24, 16, 1, 1), float32], %w3: Tensor[(16, 24, 3, 3), float32], %w4: Tensor[(16, 24, 1, 1), float32],
                             %ws: Tensor[(32, 32, 1, 1), float32], %fc: Tensor[(10, 32), float32]) {
    %0 = nn.conv2d(%x, %w0, strides=[2, 2], padding=[1, 1, 1, 1]);
    %1 = nn.bias_add(%0, %b0);
    %2 = nn.relu(%1);
    %3 = nn.max_pool2d(%2, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]);
    %4 = nn.conv2d(%3, %w1, padding=[1, 1, 1, 1]);
    %5 = add(%4, %b1);
    %6 = add(%5, %3);
    %7 = nn.relu(%6);
    %8a = nn.conv2d(%7, %wd, groups=16, padding=[1, 1, 1, 1]);
    %8b = sigmoid(%8a);
    %8 = multiply(%8a, %8b);
    %9 = nn.conv2d(%8, %w2);
    %10 = clip(%9, a_min=0, a_max=6);
    %11 = nn.avg_pool2d(%10, pool_size=[2, 2], strides=[1, 1], count_include_pad=1, padding=[0, 0, 1, 1]);
    %12 = nn.conv2d(%11, %w3, padding=[1, 1, 1, 1]);
    %13 = nn.conv2d(%11, %w4);
    %14 = concatenate(%12, %13, axis=1);
    %15 = mean(%14, axis=[2, 3], keepdims=1);
    %16 = nn.conv2d(%15, %ws);
    %17 = sigmoid(%16);
    %18 = multiply(%14, %17);
    %19 = nn.global_avg_pool2d(%18);
    %20 = reshape(%19, newshape=[2, 32]);
    %21 = nn.dense(%20, %fc);
    (%21, %14)
  })";
  std::mt19937 rng(2);
  runtime::NamedArrays params = {
      {"w0", Random({16, 3, 3, 3}, rng, 0.5f)},  {"b0", Random({16}, rng)},
      {"w1", Random({16, 16, 3, 3}, rng, 0.2f)}, {"b1", Random({16, 1, 1}, rng)},
      {"wd", Random({16, 1, 3, 3}, rng, 0.5f)},  {"w2", Random({24, 16, 1, 1}, rng, 0.5f)},
      {"w3", Random({16, 24, 3, 3}, rng, 0.2f)}, {"w4", Random({16, 24, 1, 1}, rng, 0.5f)},
      {"ws", Random({32, 32, 1, 1}, rng, 0.5f)}, {"fc", Random({10, 32}, rng, 0.5f)}};
  runtime::NDArray x = Random({2, 3, 21, 19}, rng);
  std::string plain_graph, blocked_graph;
  std::vector<runtime::NDArray> want = Run(model, 2, params, {x}, &plain_graph);
  std::vector<runtime::NDArray> got = Run(model, 3, params, {x}, &blocked_graph);
  EXPECT_THAT(plain_graph, Not(HasSubstr("layout_transform")));
  EXPECT_THAT(blocked_graph, HasSubstr("layout_transform"));
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    std::vector<float> a = test::ToVector(got[k]), b = test::ToVector(want[k]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f * std::max(1.0f, std::abs(b[i]))) << k << ":" << i;
  }
}

}  // namespace
}  // namespace kiln::backend
