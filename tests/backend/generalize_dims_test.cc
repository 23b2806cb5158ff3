// One library for every value of shape dimensions (backend/generalize_dims.h): samples chosen at
// generic values, polynomials fitted through them and checked at the others, generated sources
// whose differing integer literals become expressions, and everything else a clear error.
#include "backend/generalize_dims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/error.h"

namespace kiln::backend {
namespace {

using ::testing::HasSubstr;
using runtime::DimPolynomial;
using runtime::ShapeDim;

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const runtime::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Values of `f` at every sample of `samples`.
std::vector<int64_t> At(const ir::DimSamples& samples, const std::function<int64_t(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> values;
  for (const std::vector<int64_t>& point : samples.points) values.push_back(f(point));
  return values;
}

TEST(DimSamples, GenericValuesFromTheTopOfTheRangeThenChecksAndTheMax) {
  ir::DimSamples s = ir::PlanDimSamples({{"S", 1, 512, 1}});
  EXPECT_EQ(s.fitting, (std::vector<std::vector<int64_t>>{{509, 503, 499}}));  // primes of at least 11
  ASSERT_EQ(s.num_fitting_points, 3u);
  ASSERT_EQ(s.points.size(), 6u);  // the fit, two checks, the max
  EXPECT_EQ(s.points[3], std::vector<int64_t>{257});  // the prime nearest to half the range
  EXPECT_EQ(s.points[4], std::vector<int64_t>{127});  // ... and to a quarter
  EXPECT_EQ(s.points[s.max_point], std::vector<int64_t>{512});
  // Multiples of a step: the quotient by the step is prime; every sample on the lattice.
  ir::DimSamples image = ir::PlanDimSamples({{"H", 320, 1280, 32}, {"W", 320, 1280, 32}});
  EXPECT_EQ(image.fitting[0], (std::vector<int64_t>{37 * 32, 31 * 32, 29 * 32}));
  EXPECT_EQ(image.num_fitting_points, 9u);
  for (const std::vector<int64_t>& point : image.points) {
    for (int64_t v : point) EXPECT_TRUE(v >= 320 && v <= 1280 && v % 32 == 0) << v;
  }
  // A range too small for generic values takes what it has.
  ir::DimSamples tiny = ir::PlanDimSamples({{"S", 1, 2, 1}});
  EXPECT_EQ(tiny.fitting, (std::vector<std::vector<int64_t>>{{2, 1}}));
  EXPECT_THAT(ErrorOf([] { ir::PlanDimSamples({{"A", 1, 9, 1}, {"B", 1, 9, 1}, {"C", 1, 9, 1}, {"D", 1, 9, 1}}); }),
              HasSubstr("up to 3 shape dimensions"));
}

TEST(ExtentFitter, FitsPolynomialsOfOneAndTwoDimensions) {
  ir::DimSamples s = ir::PlanDimSamples({{"S", 1, 512, 1}});
  ExtentFitter fitter(s);
  std::vector<bool> all(s.points.size(), true);
  auto fit = [&](const std::function<int64_t(const std::vector<int64_t>&)>& f) {
    return fitter.Fit(At(s, f), all, "x").ToString();
  };
  EXPECT_EQ(fit([](auto&) { return 768; }), "768");
  EXPECT_EQ(fit([](auto& p) { return 768 * p[0]; }), "768*d0");
  EXPECT_EQ(fit([](auto& p) { return 12 * p[0] * p[0] + 3; }), "12*d0*d0 + 3");
  EXPECT_EQ(fit([](auto& p) { return (p[0] + 15) / 16 * 0 + 2 * p[0] - 1; }), "2*d0 - 1");
  ir::DimSamples image = ir::PlanDimSamples({{"H", 64, 640, 32}, {"W", 64, 640, 32}});
  ExtentFitter image_fitter(image);
  std::vector<bool> every(image.points.size(), true);
  EXPECT_EQ(image_fitter.Fit(At(image, [](auto& p) { return p[0] * p[1] / 1024 * 96; }), every, "x").ToString(),
            "(3*d0*d1)/32");
  EXPECT_EQ(image_fitter.Fit(At(image, [](auto& p) { return p[1] / 4; }), every, "x").ToString(), "(d1)/4");
  // Not a polynomial: the checking samples disagree, and the error says where.
  EXPECT_THAT(ErrorOf([&] { fitter.Fit(At(s, [](auto& p) { return (p[0] + 15) / 16; }), all, "the tasks"); }),
              HasSubstr("the tasks is not a polynomial of the shape dimensions: it is 17 at S = 257"));
  EXPECT_THAT(ErrorOf([&] { fitter.Fit(At(s, [](auto& p) { return p[0] * p[0] * p[0]; }), all, "the cube"); }),
              HasSubstr("the cube is not a polynomial of the shape dimensions"));
}

TEST(GeneralizeSource, IntegerLiteralsThatDifferBecomeExpressions) {
  ir::DimSamples s = ir::PlanDimSamples({{"S", 1, 64, 1}});
  ExtentFitter fitter(s);
  std::vector<std::string> texts;
  for (const std::vector<int64_t>& p : s.points) {
    int64_t n = p[0];
    texts.push_back("for (int64_t i = 0; i < " + std::to_string(12 * n) + "LL; ++i) x[i * 64LL] = 1.5f;\n"
                    "kiln::kernels::Workspace w0(" + std::to_string(4 * n * n) + "ULL); // 1e-05f " +
                    std::to_string(n) + "\n");
  }
  std::vector<const std::string*> pointers;
  for (const std::string& t : texts) pointers.push_back(&t);
  std::string source = GeneralizeSource(fitter, pointers, "f");
  EXPECT_EQ(source, "for (int64_t i = 0; i < (12*kiln_d0); ++i) x[i * 64LL] = 1.5f;\n"
                    "kiln::kernels::Workspace w0(static_cast<unsigned long long>(4*kiln_d0*kiln_d0)); // 1e-05f "
                    "(kiln_d0)\n");
  // A float that differs, or code of another form, is an error naming the function and the line.
  texts.back() = "for (int64_t i = 0; i < 768LL; ++i) x[i * 64LL] = 2.5f;\n" + texts.back().substr(texts.back().find('\n') + 1);
  EXPECT_THAT(ErrorOf([&] { GeneralizeSource(fitter, pointers, "f"); }),
              HasSubstr("the operator function f is written differently at other values of the shape dimensions, "
                        "not only in its extents: '1.5f'"));
  // floor(S / 2) at the odd samples fits (S - 1) / 2, which the even values of the range refute.
  std::vector<std::string> halves;
  for (const std::vector<int64_t>& p : s.points) halves.push_back("n = " + std::to_string(p[0] / 2) + "LL;");
  std::vector<const std::string*> half_pointers;
  for (const std::string& t : halves) half_pointers.push_back(&t);
  half_pointers[s.max_point] = nullptr;  // as when the max is written otherwise
  EXPECT_THAT(ErrorOf([&] { GeneralizeSource(fitter, half_pointers, "f"); }),
              HasSubstr("is (d0 - 1)/2 of the shape dimensions, not a whole number at S = 2"));
  texts.back() = "if (true) return 0;\n";
  EXPECT_THAT(ErrorOf([&] { GeneralizeSource(fitter, pointers, "f"); }),
              HasSubstr("written differently at other values of the shape dimensions: \"for (int64_t i = 0;"));
}

// A sample's graph: input x of [S, 4], y = __copy(x), and a constant c of [S, 2] holding
// `constant` (its front at a smaller S the value at the max).
SampleCode Sample(int64_t s, const std::vector<float>& constant) {
  SampleCode code;
  runtime::Graph& g = code.graph;
  g.nodes = {{"null", "x", {}, "", 1, false, {}, {}}, {"null", "p0", {}, "", 1, false, {}, {}},
             {"tvm_op", "f", {{0, 0, 0}, {1, 0, 0}}, "f", 1, false, {}, {}}};
  g.arg_nodes = {0, 1};
  g.heads = {{2, 0, 0}};
  g.node_row_ptr = {0, 1, 2, 3};
  g.shapes = {{s, 4}, {s, 2}, {s, 4}};
  g.dtypes = {runtime::kFloat32, runtime::kFloat32, runtime::kFloat32};
  g.storage_ids = {0, 1, 2};
  runtime::NDArray c = runtime::NDArray::Empty({s, 2}, runtime::kFloat32);
  std::copy(constant.begin(), constant.begin() + s * 2, static_cast<float*>(c.data()));
  code.params.emplace_back("p0", c);
  code.functions.push_back({"f", "n = " + std::to_string(s * 4) + "LL;", "fixed " + std::to_string(s) + ";"});
  return code;
}

TEST(GeneralizeDims, GraphExtentsConstantsAndSources) {
  ir::DimSamples s = ir::PlanDimSamples({{"S", 1, 40, 1}});
  std::vector<float> table(80);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
  std::vector<SampleCode> code;
  for (const std::vector<int64_t>& p : s.points) code.push_back(Sample(p[0], table));
  SampleCode general = GeneralizeDims(s, code);
  const runtime::Graph& g = general.graph;
  ASSERT_EQ(g.dims.size(), 1u);
  EXPECT_EQ(g.dims[0].name, "S");
  EXPECT_EQ(g.shapes, (std::vector<std::vector<int64_t>>{{40, 4}, {40, 2}, {40, 4}}));  // at the max
  ASSERT_EQ(g.entry_extents.size(), 3u);
  EXPECT_EQ(g.entry_extents[0][0].ToString(), "d0");
  EXPECT_EQ(g.entry_extents[2][1].ToString(), "4");
  ASSERT_EQ(general.params.size(), 1u);
  EXPECT_EQ(general.params[0].second.shape(), (std::vector<int64_t>{40, 2}));  // the max's value
  EXPECT_EQ(static_cast<const float*>(general.params[0].second.data())[79], 79.0f);
  ASSERT_EQ(general.functions.size(), 1u);
  EXPECT_EQ(general.functions[0].source, "n = (4*kiln_d0);");
  // A constant whose smaller values are not the front of the largest.
  std::vector<SampleCode> shifted;
  for (const std::vector<int64_t>& p : s.points) {
    std::vector<float> values(table.begin() + (40 - p[0]) * 2, table.end());
    values.resize(80);
    shifted.push_back(Sample(p[0], values));
  }
  EXPECT_THAT(ErrorOf([&] { GeneralizeDims(s, shifted); }),
              HasSubstr("a constant of the model (p0) depends on the shape dimensions other than as the front"));
  // Another graph at one sample.
  code[2].graph.nodes[2].func_name = "g";
  EXPECT_THAT(ErrorOf([&] { GeneralizeDims(s, code); }), HasSubstr("the model's graph differs between S = "));
}

TEST(GeneralizeDims, InputsMustTakeEachDimensionAsAnExtent) {
  ir::DimSamples s = ir::PlanDimSamples({{"S", 1, 40, 1}});
  std::vector<float> table(80, 1.0f);
  std::vector<SampleCode> code;
  for (const std::vector<int64_t>& p : s.points) {
    code.push_back(Sample(p[0], table));
    code.back().graph.shapes[0] = {2 * p[0], 4};
    code.back().graph.shapes[2] = {2 * p[0], 4};
  }
  EXPECT_THAT(ErrorOf([&] { GeneralizeDims(s, code); }),
              HasSubstr("input 'x' has extent 2*S along axis 0; an input's extents must be fixed or one shape "
                        "dimension each"));
}

}  // namespace
}  // namespace kiln::backend
