// CombineGelu: GELU's erf form as exporters write it becomes nn.gelu, in IR text, whichever order
// the products come in; what only resembles it stays. (Numerics: bert_2layer and vit_b_16 against
// ONNX Runtime in tests/python/test_model_suite.py, which run through it; nn.gelu's definition
// against the evaluator in tests/backend/elementwise_agreement_test.cc.)
#include <gtest/gtest.h>

#include <string>

#include "tests/transform/pass_test_util.h"
#include "transform/combine_gelu.h"

namespace kiln::transform {
namespace {

// PyTorch's nn.GELU and BERT's gelu: x * (1 + erf(x / sqrt 2)) * 0.5, sqrt 2 rounded to float.
TEST(CombineGelu, PyTorchsExportBecomesOneGelu) {
  ExpectPass(CombineGelu, R"(fn (%x: Tensor[(2, 8), float32]) {
    %s = const(Tensor[(), float32], [1.4142135381698608]);
    %0 = divide(%x, %s);
    %1 = erf(%0);
    %one = const(Tensor[(), float32], [1]);
    %2 = add(%1, %one);
    %3 = multiply(%x, %2);
    %half = const(Tensor[(), float32], [0.5]);
    %4 = multiply(%3, %half);
    %4
  })",
             R"(fn (%x: Tensor[(2, 8), float32]) {
    %0 = nn.gelu(%x);
    %0
  })");
}

// The importer's spelling of ONNX's Gelu: (x * 0.5) * (1 + erf(x * (1 / sqrt 2))), operands in the
// other order.
TEST(CombineGelu, TheImportersSpellingBecomesOneGelu) {
  ExpectPass(CombineGelu, R"(fn (%x: Tensor[(3), float32]) {
    %r = const(Tensor[(), float32], [0.70710677]);
    %0 = multiply(%r, %x);
    %1 = erf(%0);
    %one = const(Tensor[(), float32], [1]);
    %2 = add(%one, %1);
    %half = const(Tensor[(), float32], [0.5]);
    %3 = multiply(%x, %half);
    %4 = multiply(%3, %2);
    %4
  })",
             R"(fn (%x: Tensor[(3), float32]) {
    %0 = nn.gelu(%x);
    %0
  })");
}

// PyTorch's spelling over %x of `dtype`, erf of `erf_of` / sqrt 2, times `half` (a constant's
// type and value).
std::string ExportedGelu(const std::string& dtype, const std::string& erf_of, const std::string& half) {
  std::string sqrt2 = dtype == "float64" ? "1.4142135623730951" : "1.4142135381698608";
  return "fn (%x: Tensor[(4), " + dtype + "], %y: Tensor[(4), " + dtype + "]) {\n"
         "  %s = const(Tensor[(), " + dtype + "], [" + sqrt2 + "]);\n"
         "  %0 = divide(" + erf_of + ", %s);\n"
         "  %1 = erf(%0);\n"
         "  %one = const(Tensor[(), " + dtype + "], [1]);\n"
         "  %2 = add(%1, %one);\n"
         "  %3 = multiply(%x, %2);\n"
         "  %half = const(" + half + ");\n"
         "  %4 = multiply(%3, %half);\n"
         "  %4\n"
         "}";
}

// Not GELU: another scale, another argument of erf, a result wider than x (the constant
// broadcasts it), float64, NaN for sqrt 2; the same form with all of these right is.
TEST(CombineGelu, LookAlikesStay) {
  for (const std::string& text : {ExportedGelu("float32", "%x", "Tensor[(), float32], [0.25]"),
                                   ExportedGelu("float32", "%y", "Tensor[(), float32], [0.5]"),
                                   ExportedGelu("float32", "%x", "Tensor[(2, 1), float32], [0.5, 0.5]"),
                                   ExportedGelu("float64", "%x", "Tensor[(), float64], [0.5]")}) {
    ExpectPass(CombineGelu, text, text);
  }
  std::string nan_scale = ExportedGelu("float32", "%x", "Tensor[(), float32], [0.5]");
  nan_scale.replace(nan_scale.find("1.4142135381698608"), 18, "nan");
  ExpectPass(CombineGelu, nan_scale, nan_scale);
  ExpectPass(CombineGelu, ExportedGelu("float32", "%x", "Tensor[(), float32], [0.5]"),
             R"(fn (%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
    %0 = nn.gelu(%x);
    %0
  })");
}

}  // namespace
}  // namespace kiln::transform
