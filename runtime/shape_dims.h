// Dimensions decided at run time other than a batch (a sequence length, an image's height and
// width): their ranges, and the extents that follow from them as polynomials (kiln's extension of
// the graph JSON; docs/architecture.md, "Shape dimensions").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

// A named dimension and the values it may take: min, min + step, ..., max.
struct ShapeDim {
  std::string name;
  int64_t min = 1, max = 1, step = 1;

  bool Allows(int64_t value) const { return value >= min && value <= max && (value - min) % step == 0; }
  // "S in 1..512" or "H in 32..1280 (step 32)", for messages.
  std::string RangeText() const;
};
inline constexpr int64_t kMaxShapeDim = int64_t{1} << 24;  // the largest value a dimension may take

// An extent as a polynomial in the dimensions d0, d1, ... (their order in the graph's list) with
// rational coefficients: (sum of coefficient * monomial) / denominator. Written, in the graph JSON
// and in generated code alike, as an expression of integers, d<i>, +, - and *, over "/ den" when
// the denominator is not 1: "12*d0*d0", "(d0*d1 + 32)/64".
class DimPolynomial {
 public:
  struct Term {
    int64_t coefficient = 0;
    std::vector<int> exponents;  // per dimension
  };

  DimPolynomial() = default;
  static DimPolynomial Constant(int64_t value);
  // Normalizes: like terms merged, zero terms dropped, coefficients and denominator reduced.
  DimPolynomial(std::vector<Term> terms, int64_t denominator);

  bool IsConstant() const;
  // The dimension this is exactly (d<i>, nothing else), or -1.
  int SingleDim() const;
  // Whether dimension `dim` occurs.
  bool Uses(int dim) const;
  // The value at `values` (one per dimension); Error when it is not a whole number or overflows.
  int64_t Evaluate(const std::vector<int64_t>& values) const;
  // The expression with d<i> written as `prefix` + i ("d" for the graph JSON).
  std::string ToString(const std::string& prefix = "d") const;
  // The expression with d<i> written as names[i] ("12*S*S"), for people.
  std::string ToText(const std::vector<std::string>& names) const;
  // Parses ToString's form for `num_dims` dimensions; Error naming `where` for anything else.
  static DimPolynomial Parse(std::string_view text, int num_dims, const std::string& where);

  const std::vector<Term>& terms() const { return terms_; }
  int64_t denominator() const { return denominator_; }
  bool operator==(const DimPolynomial& other) const;

 private:
  template <typename VariableName>
  std::string Format(const VariableName& variable) const;

  std::vector<Term> terms_;
  int64_t denominator_ = 1;
};

// The shape of an entry at `values`; each extent must be a whole number >= 0.
std::vector<int64_t> EvaluateShape(const std::vector<DimPolynomial>& extents, const std::vector<int64_t>& values);

}  // namespace kiln::runtime
