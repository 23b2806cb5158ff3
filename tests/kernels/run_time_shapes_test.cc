// The shapes that input values decide at run time (shape/run_time_shapes.cc), at the edges the
// ONNX node cases do not reach: slices clamped at int64's ends and by steps of int64's ends,
// empty axes, reshapes' 0 and -1, and every value that does not fit a clear error.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

struct SliceCase {
  int64_t extent, start, end, step;
  int64_t first, count;  // what ONNX's Slice takes: the first index and how many
};

TEST(RunTimeShapes, SliceClampsAsOnnxSays) {
  const SliceCase cases[] = {
      {10, 0, 10, 1, 0, 10},     {10, 3, 9, 4, 3, 2},        {10, 20, -100, -1, 9, 10},
      {10, kMin, kMax, 1, 0, 10}, {10, -1, kMin, -1, 9, 10},  {10, 5, 5, 1, 5, 0},
      {10, 0, 10, kMax, 0, 1},   {10, 9, -11, kMin, 9, 1},   {10, -3, -1, 1, 7, 2},
      {10, 8, 2, 1, 8, 0},       {10, 2, 8, -1, 2, 0},       {10, kMax, kMin, -3, 9, 4},
      {0, 0, 5, 1, 0, 0},        {0, -1, kMin, -1, 0, 0},    {1, 0, -1, -1, 0, 0},
  };
  for (const SliceCase& c : cases) {
    int64_t in[] = {c.extent}, axes[] = {0}, starts[] = {c.start}, ends[] = {c.end}, steps[] = {c.step};
    int64_t first[1], step[1], out[1];
    ASSERT_EQ(SliceAtRunTime(in, 1, starts, ends, axes, steps, 1, first, step, out, "slice"), 0) << TVMGetLastError();
    EXPECT_EQ(out[0], c.count) << c.extent << " " << c.start << ":" << c.end << ":" << c.step;
    if (c.count > 0) {
      EXPECT_EQ(first[0], c.first) << c.extent << " " << c.start << ":" << c.end << ":" << c.step;
    }
  }
}

TEST(RunTimeShapes, SliceGathersAlongEveryAxis) {
  // [3, 4] row-major 0..11; rows reversed, every other column from 1.
  std::vector<int32_t> data(12), result(6, -1);
  for (int i = 0; i < 12; ++i) data[i] = i;
  int64_t in[] = {3, 4}, starts[] = {-1, 1}, ends[] = {kMin, 100}, axes[] = {0, -1}, steps[] = {-1, 2};
  int64_t first[2], step[2], out[2];
  ASSERT_EQ(SliceAtRunTime(in, 2, starts, ends, axes, steps, 2, first, step, out, "slice"), 0) << TVMGetLastError();
  ASSERT_EQ(out[0], 3);
  ASSERT_EQ(out[1], 2);
  GatherStridedAtRunTime(data.data(), in, 2, first, step, out, sizeof(int32_t), result.data());
  EXPECT_EQ(result, (std::vector<int32_t>{9, 11, 5, 7, 1, 3}));
}

// The message of the failure `call` returns, "" when it succeeds.
template <class F>
std::string FailureOf(F call) {
  return call() == 0 ? "" : TVMGetLastError();
}

TEST(RunTimeShapes, ValuesThatDoNotFitFailWithTheirReason) {
  int64_t in[] = {2, 3, 4}, out[8], other[8];
  auto reshape = [&](std::vector<int64_t> shape, bool allow_zero = false) {
    return FailureOf([&] {
      return ReshapeAtRunTime(in, 3, shape.data(), static_cast<int64_t>(shape.size()), allow_zero, out, "r");
    });
  };
  EXPECT_EQ(reshape({0, -1, 2}), "");
  EXPECT_EQ(std::vector<int64_t>(out, out + 3), (std::vector<int64_t>{2, 6, 2}));
  EXPECT_EQ(reshape({24}), "");
  EXPECT_EQ(reshape({0, 0, 0, 0}), "r: a 0 at index 3 of the shape copies an extent the input's 3 axes do not have");
  EXPECT_EQ(reshape({-1, -1}), "r: the shape has more than one -1");
  EXPECT_EQ(reshape({-2, 12}), "r: the shape has the negative extent -2");
  EXPECT_EQ(reshape({5, -1}), "r: no extent for the -1 gives the input's 24 elements");
  EXPECT_EQ(reshape({0, -1}, true), "r: with allowzero the shape cannot hold both 0 and -1");
  EXPECT_EQ(reshape({kMax, 2}), "r: the shape has too many elements");
  EXPECT_EQ(reshape({2, 3, 5}), "r: the shape holds 30 elements, the input 24");

  int64_t ones[] = {1, 5, 1};
  int64_t axes[] = {-1, 0}, twice[] = {2, -1}, wide[] = {3};
  EXPECT_EQ(FailureOf([&] { return SqueezeAtRunTime(ones, 3, axes, 2, out, "s"); }), "");
  EXPECT_EQ(out[0], 5);
  EXPECT_EQ(FailureOf([&] { return SqueezeAtRunTime(ones, 3, twice, 2, out, "s"); }), "s: axis -1 is given twice");
  EXPECT_EQ(FailureOf([&] { return SqueezeAtRunTime(ones, 3, wide, 1, out, "s"); }),
            "s: axis 3 is out of range for rank 3");
  int64_t middle[] = {1};
  EXPECT_EQ(FailureOf([&] { return SqueezeAtRunTime(ones, 3, middle, 1, out, "s"); }), "s: axis 1 has extent 5, not 1");
  int64_t unsqueeze[] = {-1, 3};
  EXPECT_EQ(FailureOf([&] { return UnsqueezeAtRunTime(in, 3, unsqueeze, 2, out, "u"); }), "");
  EXPECT_EQ(std::vector<int64_t>(out, out + 5), (std::vector<int64_t>{2, 3, 4, 1, 1}));

  int64_t reduce[] = {-2};
  EXPECT_EQ(FailureOf([&] { return ReduceAtRunTime(in, 3, reduce, 1, false, false, out, other, "m"); }), "");
  EXPECT_EQ(std::vector<int64_t>(out, out + 2), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(std::vector<int64_t>(other, other + 3), (std::vector<int64_t>{4, 0, 1}));  // strides in the result
  EXPECT_EQ(FailureOf([&] { return ReduceAtRunTime(in, 3, nullptr, 0, true, false, out, other, "m"); }), "");
  EXPECT_EQ(std::vector<int64_t>(out, out + 3), (std::vector<int64_t>{1, 1, 1}));

  int64_t sizes[] = {1, 2}, short_sizes[] = {1, 1}, negative[] = {-1, 4};
  EXPECT_EQ(FailureOf([&] { return SplitAtRunTime(in, 3, 1, sizes, 2, "p"); }), "");
  EXPECT_EQ(FailureOf([&] { return SplitAtRunTime(in, 3, 1, short_sizes, 2, "p"); }),
            "p: the sizes add up to 2, not to the extent 3 of axis 1");
  EXPECT_EQ(FailureOf([&] { return SplitAtRunTime(in, 3, 1, negative, 2, "p"); }), "p: piece 0 has the negative size -1");
  EXPECT_EQ(FailureOf([&] { return TopKAtRunTime(in, 3, 2, 5, out, "t"); }),
            "t: k = 5 is outside [0, 4], the extent of axis 2");
  EXPECT_EQ(FailureOf([&] { return TopKAtRunTime(in, 3, 2, -1, out, "t"); }),
            "t: k = -1 is outside [0, 4], the extent of axis 2");
  int64_t axis = 0;
  EXPECT_EQ(FailureOf([&] { return AxisAtRunTime(-3, 3, &axis, "c"); }), "");
  EXPECT_EQ(axis, 0);
  EXPECT_EQ(FailureOf([&] { return AxisAtRunTime(kMin, 3, &axis, "c"); }),
            "c: axis -9223372036854775808 is out of range for rank 3");
  EXPECT_EQ(FailureOf([&] { return RangeAtRunTime(kMin, kMax, int64_t{1}, out, "g"); }),
            "g: the range has more than 2^63 elements");
  EXPECT_EQ(FailureOf([&] { return RangeAtRunTime(kMax, kMin, int64_t{-2}, out, "g"); }),
            "g: the range has more than 2^63 elements");  // ceil((2^64 - 1) / 2) = 2^63
  EXPECT_EQ(FailureOf([&] { return RangeAtRunTime(kMax, kMin, int64_t{-3}, out, "g"); }), "");
  EXPECT_EQ(out[0], 6148914691236517205);  // (2^64 - 1) / 3
  int64_t sized[] = {2, 3}, other_shape[] = {2, 4};
  EXPECT_EQ(FailureOf([&] { return CheckSizedOutput(sized, sized, 2, 6, "z"); }), "");
  EXPECT_EQ(FailureOf([&] { return CheckSizedOutput(nullptr, sized, 2, 5, "z"); }),
            "z: its output holds 5 elements, its shape needs 6 (the graph's sized entries do not match its nodes)");
  EXPECT_EQ(FailureOf([&] { return CheckSizedOutput(other_shape, sized, 2, 100, "z"); }),
            "z: the shape it was sized for differs from its inputs' at axis 1 (3, not 4)");
  int64_t steps[] = {0}, zero[] = {0}, first[3], step[3];
  EXPECT_EQ(FailureOf([&] { return SliceAtRunTime(in, 3, zero, zero, zero, steps, 1, first, step, out, "l"); }),
            "l: the step along axis 0 is 0");
}

}  // namespace
}  // namespace kiln::kernels
