// Dimension ranges and extent polynomials (shape_dims.h).
#include "runtime/shape_dims.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <numeric>

#include "runtime/error.h"

namespace kiln::runtime {

std::string ShapeDim::RangeText() const {
  std::string text = StrCat(name, " in ", min, "..", max);
  return step == 1 ? text : StrCat(text, " (step ", step, ")");
}

DimPolynomial DimPolynomial::Constant(int64_t value) { return DimPolynomial({{value, {}}}, 1); }

DimPolynomial::DimPolynomial(std::vector<Term> terms, int64_t denominator) {
  Check(denominator != 0, "an extent's denominator is 0");
  std::map<std::vector<int>, int64_t> merged;
  constexpr __int128 kLimit = int64_t{1} << 62;
  Check(denominator < kLimit && denominator > -kLimit, "an extent's denominator is too large");
  for (Term& term : terms) {
    while (!term.exponents.empty() && term.exponents.back() == 0) term.exponents.pop_back();
    __int128 sum = static_cast<__int128>(merged[term.exponents]) + term.coefficient;
    Check(sum < kLimit && sum > -kLimit, "an extent's coefficient is too large");
    merged[term.exponents] = static_cast<int64_t>(sum);
  }
  if (denominator < 0) {
    denominator = -denominator;
    for (auto& [monomial, coefficient] : merged) coefficient = -coefficient;
  }
  int64_t divisor = denominator;
  for (const auto& [monomial, coefficient] : merged) divisor = std::gcd(divisor, coefficient);
  denominator_ = denominator / divisor;
  // Highest degrees first, the constant last.
  for (auto it = merged.rbegin(); it != merged.rend(); ++it) {
    if (it->second != 0) terms_.push_back({it->second / divisor, it->first});
  }
}

bool DimPolynomial::IsConstant() const {
  return std::all_of(terms_.begin(), terms_.end(), [](const Term& t) { return t.exponents.empty(); });
}

int DimPolynomial::SingleDim() const {
  if (denominator_ != 1 || terms_.size() != 1 || terms_[0].coefficient != 1) return -1;
  const std::vector<int>& e = terms_[0].exponents;
  if (e.empty() || e.back() != 1 || std::count(e.begin(), e.end(), 0) != static_cast<long>(e.size()) - 1) return -1;
  return static_cast<int>(e.size()) - 1;
}

bool DimPolynomial::Uses(int dim) const {
  return std::any_of(terms_.begin(), terms_.end(), [&](const Term& t) {
    return static_cast<int>(t.exponents.size()) > dim && t.exponents[dim] != 0;
  });
}

int64_t DimPolynomial::Evaluate(const std::vector<int64_t>& values) const {
  __int128 sum = 0;
  constexpr __int128 kLimit = __int128{1} << 100;
  for (const Term& term : terms_) {
    __int128 product = term.coefficient;
    for (size_t d = 0; d < term.exponents.size(); ++d) {
      Check(d < values.size(), "an extent uses dimension d", d, " of ", values.size());
      for (int k = 0; k < term.exponents[d]; ++k) {
        product *= values[d];
        Check(product < kLimit && product > -kLimit, "the extent ", ToString(), " overflows");
      }
    }
    sum += product;
  }
  Check(sum % denominator_ == 0, "the extent ", ToString(), " is not a whole number at these dimensions");
  __int128 value = sum / denominator_;
  Check(value >= std::numeric_limits<int64_t>::min() && value <= std::numeric_limits<int64_t>::max(), "the extent ",
        ToString(), " overflows");
  return static_cast<int64_t>(value);
}

std::string DimPolynomial::ToString(const std::string& prefix) const {
  return Format([&](size_t d) { return prefix + std::to_string(d); });
}

std::string DimPolynomial::ToText(const std::vector<std::string>& names) const {
  return Format([&](size_t d) { return d < names.size() ? names[d] : "d" + std::to_string(d); });
}

template <typename VariableName>
std::string DimPolynomial::Format(const VariableName& variable) const {
  std::string sum;
  for (const Term& term : terms_) {
    std::string factors;
    for (size_t d = 0; d < term.exponents.size(); ++d) {
      for (int k = 0; k < term.exponents[d]; ++k) factors += (factors.empty() ? "" : "*") + variable(d);
    }
    int64_t magnitude = term.coefficient < 0 ? -term.coefficient : term.coefficient;
    std::string text = factors.empty() ? std::to_string(magnitude)
                       : magnitude == 1 ? factors
                                        : std::to_string(magnitude) + "*" + factors;
    if (sum.empty()) {
      sum = (term.coefficient < 0 ? "-" : "") + text;
    } else {
      sum += (term.coefficient < 0 ? " - " : " + ") + text;
    }
  }
  if (sum.empty()) sum = "0";
  return denominator_ == 1 ? sum : "(" + sum + ")/" + std::to_string(denominator_);
}

namespace {

// A recursive-descent reader of ToString's form.
class PolynomialReader {
 public:
  PolynomialReader(std::string_view text, int num_dims, const std::string& where)
      : text_(text), num_dims_(num_dims), where_(where) {}

  DimPolynomial Read() {
    DimPolynomial result;
    Skip();
    if (Peek() == '(') {
      ++pos_;
      std::vector<DimPolynomial::Term> terms = Sum();
      Expect(')');
      Expect('/');
      int64_t denominator = Number();
      if (denominator <= 0) Bad("a denominator must be positive");
      result = DimPolynomial(std::move(terms), denominator);
    } else {
      result = DimPolynomial(Sum(), 1);
    }
    Skip();
    if (pos_ != text_.size()) Bad(StrCat("unexpected '", text_[pos_], "'"));
    return result;
  }

 private:
  std::vector<DimPolynomial::Term> Sum() {
    std::vector<DimPolynomial::Term> terms;
    int64_t sign = 1;
    Skip();
    if (Peek() == '-') {
      sign = -1;
      ++pos_;
    }
    while (true) {
      DimPolynomial::Term term = Product();
      term.coefficient *= sign;
      terms.push_back(std::move(term));
      Skip();
      if (Peek() == '+' || Peek() == '-') {
        sign = Peek() == '-' ? -1 : 1;
        ++pos_;
        continue;
      }
      return terms;
    }
  }

  DimPolynomial::Term Product() {
    DimPolynomial::Term term{1, std::vector<int>(static_cast<size_t>(num_dims_), 0)};
    while (true) {
      Skip();
      if (Peek() == 'd') {
        ++pos_;
        int64_t dim = Number();
        if (dim >= num_dims_) Bad(StrCat("d", dim, " is not one of the ", num_dims_, " dimensions"));
        if (++term.exponents[static_cast<size_t>(dim)] > 8) Bad("a degree above 8");
      } else {
        int64_t factor = Number();  // below 10^18
        if (static_cast<__int128>(term.coefficient) * factor >= (int64_t{1} << 62)) Bad("a coefficient too large");
        term.coefficient *= factor;
      }
      Skip();
      if (Peek() != '*') return term;
      ++pos_;
    }
  }

  int64_t Number() {
    Skip();
    size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (pos_ - start >= 18) Bad("a number too large");
      value = value * 10 + (text_[pos_++] - '0');
    }
    if (pos_ == start) Bad("expected a number or d<index>");
    return value;
  }

  void Expect(char c) {
    Skip();
    if (Peek() != c) Bad(StrCat("expected '", c, "'"));
    ++pos_;
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void Skip() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  [[noreturn]] void Bad(const std::string& what) const {
    Fail(where_, ": the extent \"", std::string(text_.substr(0, 64)), "\" cannot be read: ", what, " (at character ",
         pos_, ")");
  }

  std::string_view text_;
  int num_dims_;
  const std::string& where_;
  size_t pos_ = 0;
};

}  // namespace

DimPolynomial DimPolynomial::Parse(std::string_view text, int num_dims, const std::string& where) {
  return PolynomialReader(text, num_dims, where).Read();
}

bool DimPolynomial::operator==(const DimPolynomial& other) const {
  if (denominator_ != other.denominator_ || terms_.size() != other.terms_.size()) return false;
  for (size_t i = 0; i < terms_.size(); ++i) {
    if (terms_[i].coefficient != other.terms_[i].coefficient || terms_[i].exponents != other.terms_[i].exponents) {
      return false;
    }
  }
  return true;
}

std::vector<int64_t> EvaluateShape(const std::vector<DimPolynomial>& extents, const std::vector<int64_t>& values) {
  std::vector<int64_t> shape;
  shape.reserve(extents.size());
  for (const DimPolynomial& extent : extents) {
    int64_t value = extent.Evaluate(values);
    Check(value >= 0, "the extent ", extent.ToString(), " is negative at these dimensions");
    shape.push_back(value);
  }
  return shape;
}

}  // namespace kiln::runtime
