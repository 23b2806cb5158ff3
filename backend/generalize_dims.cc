// Fitting the samples' code into one library for every value of the shape dimensions
// (generalize_dims.h).
#include "backend/generalize_dims.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace kiln::backend {
namespace {

using Int = __int128;
using Rational = std::pair<Int, Int>;  // numerator, denominator > 0

Int Gcd(Int a, Int b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    Int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// Numerators and denominators stay below 2^60, so that the products and sums of two never overflow.
constexpr Int kRationalLimit = Int{1} << 60;

Rational Reduced(Int n, Int d) {
  if (d < 0) {
    n = -n;
    d = -d;
  }
  Int g = Gcd(n, d);
  if (g > 1) n /= g, d /= g;
  runtime::Check(n < kRationalLimit && n > -kRationalLimit && d < kRationalLimit,
                 "the extents are too large to fit as polynomials of the shape dimensions");
  return {n, d};
}

Rational Add(const Rational& a, const Rational& b) {
  Int g = Gcd(a.second, b.second);
  return Reduced(a.first * (b.second / g) + b.first * (a.second / g), a.second / g * b.second);
}

Rational Multiply(const Rational& a, const Rational& b) {
  Rational x = Reduced(a.first, b.second), y = Reduced(b.first, a.second);
  return Reduced(x.first * y.first, x.second * y.second);
}

constexpr Int kInt64Max = static_cast<Int>(INT64_MAX);

// The shape dimensions' values at sample `point`, for messages: "S = 509".
std::string PointText(const ir::DimSamples& samples, size_t point) {
  std::string text;
  for (size_t d = 0; d < samples.dims.size(); ++d) {
    text += runtime::StrCat(d > 0 ? ", " : "", samples.dims[d].name, " = ", samples.points[point][d]);
  }
  return text;
}

// Calls `visit` with every value of the dimensions in range (the last fastest), at most `limit`.
void ForEachValue(const ir::DimSamples& samples, int64_t limit, const std::function<void(const std::vector<int64_t>&)>& visit) {
  std::vector<int64_t> point;
  for (const runtime::ShapeDim& dim : samples.dims) point.push_back(dim.min);
  for (int64_t visited = 0; visited < limit; ++visited) {
    visit(point);
    size_t d = point.size();
    while (d-- > 0) {
      point[d] += samples.dims[d].step;
      if (point[d] <= samples.dims[d].max) break;
      point[d] = samples.dims[d].min;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// Error (naming `what`) unless `p` is a whole number at every value of the dimensions in range:
// checked over one period of its fractions, the first `denominator` steps of each dimension (p at
// x + denominator * step differs from p at x by a whole number).
void CheckWhole(const runtime::DimPolynomial& p, const ir::DimSamples& samples, const std::string& what) {
  if (p.denominator() == 1) return;
  std::vector<int64_t> point;
  for (const runtime::ShapeDim& dim : samples.dims) point.push_back(dim.min);
  std::vector<int64_t> k(samples.dims.size(), 0);
  for (int64_t visited = 0; visited < (int64_t{1} << 20); ++visited) {  // a period of 2^20 values at most
    for (size_t d = 0; d < point.size(); ++d) point[d] = samples.dims[d].min + k[d] * samples.dims[d].step;
    try {
      p.Evaluate(point);
    } catch (const runtime::Error&) {
      std::string at;
      for (size_t d = 0; d < point.size(); ++d) at += runtime::StrCat(d > 0 ? ", " : "", samples.dims[d].name, " = ", point[d]);
      runtime::Fail(what, " is ", p.ToString(), " of the shape dimensions, not a whole number at ", at,
                    " (give the range a step, MIN..MAX:STEP, that the model's extents divide)");
    }
    size_t d = k.size();
    while (d-- > 0) {
      const runtime::ShapeDim& dim = samples.dims[d];
      if (++k[d] < p.denominator() && dim.min + k[d] * dim.step <= dim.max) break;
      k[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// ---- Tokens of generated C++ -------------------------------------------------------------

struct Token {
  size_t begin = 0, end = 0;
  bool integer = false;  // a decimal integer literal, its value in `value`
  int64_t value = 0;
  bool is_unsigned = false;
};

std::vector<Token> Tokenize(const std::string& text) {
  std::vector<Token> tokens;
  size_t i = 0;
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < text.size()) {
    Token t;
    t.begin = i;
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      // A number: digits, letters, '.', and a sign after an exponent (1e+20, 0x1p-3).
      while (i < text.size() && (is_word(text[i]) || text[i] == '.' ||
                                 ((text[i] == '+' || text[i] == '-') && std::strchr("eEpP", text[i - 1]) != nullptr &&
                                  text.compare(t.begin, 2, "0x") != 0 && text[i - 1] != 'L'))) {
        ++i;
      }
      size_t digits = t.begin;
      while (digits < i && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
      std::string suffix = text.substr(digits, i - digits);
      static const char* const kSuffixes[] = {"", "LL", "ULL", "L", "UL", "U", "ll", "ull", "u", "LLU"};
      bool integer = digits - t.begin <= 18 && !(digits - t.begin > 1 && text[t.begin] == '0');
      integer = integer && std::any_of(std::begin(kSuffixes), std::end(kSuffixes), [&](const char* s) { return suffix == s; });
      if (integer) {
        t.integer = true;
        t.value = std::stoll(text.substr(t.begin, digits - t.begin));
        t.is_unsigned = suffix.find_first_of("uU") != std::string::npos;
      }
    } else if (is_word(c)) {
      while (i < text.size() && is_word(text[i])) ++i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < text.size() && text[i] != c; ++i) {
        if (text[i] == '\\') ++i;
      }
      i = std::min(i + 1, text.size());
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    } else {
      ++i;
    }
    t.end = i;
    tokens.push_back(t);
  }
  return tokens;
}

// Whether two sources are written alike but for their integer literals.
bool SameTokens(const std::string& a, const std::string& b) {
  std::vector<Token> x = Tokenize(a), y = Tokenize(b);
  if (x.size() != y.size()) return false;
  for (size_t k = 0; k < x.size(); ++k) {
    if (x[k].integer && y[k].integer) continue;
    if (a.compare(x[k].begin, x[k].end - x[k].begin, b, y[k].begin, y[k].end - y[k].begin) != 0) return false;
  }
  return true;
}

// The line of `text` around `pos`, for messages.
std::string LineAround(const std::string& text, size_t pos) {
  size_t begin = text.rfind('\n', pos);
  begin = begin == std::string::npos ? 0 : begin + 1;
  size_t end = std::min(text.find('\n', pos), text.size());
  std::string line = text.substr(begin, end - begin);
  size_t first = line.find_first_not_of(' ');
  line = first == std::string::npos ? line : line.substr(first);
  return line.size() > 160 ? line.substr(0, 160) + "..." : line;
}

bool SameNode(const runtime::GraphNode& a, const runtime::GraphNode& b) {
  if (a.op != b.op || a.name != b.name || a.func_name != b.func_name || a.num_outputs != b.num_outputs ||
      a.flatten_data != b.flatten_data || a.attrs != b.attrs || a.inputs.size() != b.inputs.size() ||
      a.run_if.size() != b.run_if.size()) {
    return false;
  }
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    if (a.inputs[i].node_id != b.inputs[i].node_id || a.inputs[i].index != b.inputs[i].index) return false;
  }
  for (size_t i = 0; i < a.run_if.size(); ++i) {
    if (a.run_if[i].condition.node_id != b.run_if[i].condition.node_id ||
        a.run_if[i].condition.index != b.run_if[i].condition.index || a.run_if[i].taken != b.run_if[i].taken) {
      return false;
    }
  }
  return true;
}

// Whether two samples' graphs have the same nodes, inputs, outputs and dtypes (their extents and
// storage ids aside).
std::string GraphDifference(const runtime::Graph& a, const runtime::Graph& b) {
  if (a.nodes.size() != b.nodes.size()) return runtime::StrCat(a.nodes.size(), " nodes against ", b.nodes.size());
  for (size_t n = 0; n < a.nodes.size(); ++n) {
    if (!SameNode(a.nodes[n], b.nodes[n])) {
      return runtime::StrCat("node ", n, " is '", a.nodes[n].name, "' (", a.nodes[n].func_name, ") against '",
                             b.nodes[n].name, "' (", b.nodes[n].func_name, ")");
    }
  }
  if (a.arg_nodes != b.arg_nodes || a.node_row_ptr != b.node_row_ptr) return "other inputs";
  if (a.heads.size() != b.heads.size()) return "other outputs";
  for (size_t h = 0; h < a.heads.size(); ++h) {
    if (a.heads[h].node_id != b.heads[h].node_id || a.heads[h].index != b.heads[h].index) return "other outputs";
  }
  for (size_t e = 0; e < a.dtypes.size(); ++e) {
    if (!(a.dtypes[e] == b.dtypes[e]) || a.shapes[e].size() != b.shapes[e].size()) {
      return runtime::StrCat("entry ", e, " of another dtype or rank");
    }
  }
  if (a.batched_entries != b.batched_entries || a.batch.max != b.batch.max) return "other batched entries";
  if (a.output_trims.size() != b.output_trims.size()) return "other data-dependent outputs";
  return "";
}

}  // namespace

ExtentFitter::ExtentFitter(const ir::DimSamples& samples) : samples_(samples) {
  for (const std::vector<int64_t>& xs : samples.fitting) {
    std::vector<std::vector<Rational>> per_value;
    for (size_t j = 0; j < xs.size(); ++j) {
      std::vector<Rational> poly{{1, 1}};  // coefficients by degree
      for (size_t k = 0; k < xs.size(); ++k) {
        if (k == j) continue;
        // poly *= (x - x_k) / (x_j - x_k)
        Rational scale = Reduced(1, static_cast<Int>(xs[j]) - xs[k]);
        std::vector<Rational> next(poly.size() + 1, {0, 1});
        for (size_t e = 0; e < poly.size(); ++e) {
          next[e + 1] = Add(next[e + 1], Multiply(poly[e], scale));
          next[e] = Add(next[e], Multiply(poly[e], Multiply(scale, {-static_cast<Int>(xs[k]), 1})));
        }
        poly = std::move(next);
      }
      per_value.push_back(std::move(poly));
    }
    basis_.push_back(std::move(per_value));
  }
}

runtime::DimPolynomial ExtentFitter::Fit(const std::vector<int64_t>& values, const std::vector<bool>& known,
                                         const std::string& what) const {
  bool constant = true;
  for (size_t p = 0; p < values.size(); ++p) constant = constant && (!known[p] || values[p] == values[0]);
  if (constant) return runtime::DimPolynomial::Constant(values[0]);
  const size_t num_dims = samples_.dims.size();
  // coefficient(exponents) = sum over grid points of value * prod_d basis[d][j_d][e_d]
  std::map<std::vector<int>, Rational> coefficients;
  for (size_t p = 0; p < samples_.num_fitting_points; ++p) {
    runtime::CheckInternal(known[p], "generalize: fitting sample ", p, " has no value for ", what);
    // The grid index of point p, the last dimension fastest.
    std::vector<size_t> index(num_dims);
    size_t rest = p;
    for (size_t d = num_dims; d-- > 0;) {
      index[d] = rest % samples_.fitting[d].size();
      rest /= samples_.fitting[d].size();
    }
    std::vector<std::pair<std::vector<int>, Rational>> terms{{{}, {values[p], 1}}};
    for (size_t d = 0; d < num_dims; ++d) {
      std::vector<std::pair<std::vector<int>, Rational>> next;
      const std::vector<Rational>& basis = basis_[d][index[d]];
      for (const auto& [exponents, c] : terms) {
        for (size_t e = 0; e < basis.size(); ++e) {
          if (basis[e].first == 0) continue;
          std::vector<int> grown = exponents;
          grown.push_back(static_cast<int>(e));
          next.emplace_back(std::move(grown), Multiply(c, basis[e]));
        }
      }
      terms = std::move(next);
    }
    for (const auto& [exponents, c] : terms) {
      auto it = coefficients.find(exponents);
      coefficients[exponents] = it == coefficients.end() ? c : Add(it->second, c);
    }
  }
  Int denominator = 1;
  for (const auto& [exponents, c] : coefficients) {
    denominator = denominator / Gcd(denominator, c.second) * c.second;
    runtime::Check(denominator <= kInt64Max, what, " does not fit a polynomial of the shape dimensions");
  }
  std::vector<runtime::DimPolynomial::Term> terms;
  for (const auto& [exponents, c] : coefficients) {
    Int numerator = c.first * (denominator / c.second);
    runtime::Check(numerator <= kInt64Max && numerator >= -kInt64Max, what,
                   " does not fit a polynomial of the shape dimensions");
    terms.push_back({static_cast<int64_t>(numerator), exponents});
  }
  runtime::DimPolynomial fitted(std::move(terms), static_cast<int64_t>(denominator));
  for (size_t p = samples_.num_fitting_points; p < values.size(); ++p) {
    if (!known[p]) continue;
    int64_t value = 0;
    bool whole = true;
    try {
      value = fitted.Evaluate(samples_.points[p]);
    } catch (const runtime::Error&) {
      whole = false;
    }
    runtime::Check(whole && value == values[p], what, " is not a polynomial of the shape dimensions: it is ",
                   values[p], " at ", PointText(samples_, p), " where ", fitted.ToText(DimNames()), " gives ",
                   whole ? std::to_string(value) : "a fraction");
  }
  return fitted;
}

std::vector<std::string> ExtentFitter::DimNames() const {
  std::vector<std::string> names;
  for (const runtime::ShapeDim& dim : samples_.dims) names.push_back(dim.name);
  return names;
}

std::string GeneralizeSource(const ExtentFitter& fitter, const std::vector<const std::string*>& texts,
                             const std::string& symbol) {
  const std::string& base = *texts[0];
  std::vector<std::vector<Token>> tokens;
  std::vector<bool> known;
  for (const std::string* text : texts) {
    tokens.push_back(text != nullptr ? Tokenize(*text) : std::vector<Token>{});
    known.push_back(text != nullptr);
  }
  for (size_t s = 1; s < texts.size(); ++s) {
    if (!known[s] || tokens[s].size() == tokens[0].size()) continue;
    // The first place they differ other than in an integer.
    size_t k = 0;
    while (k < tokens[0].size() && k < tokens[s].size()) {
      const Token& t = tokens[0][k];
      const Token& u = tokens[s][k];
      bool same = base.compare(t.begin, t.end - t.begin, *texts[s], u.begin, u.end - u.begin) == 0;
      if (!same && !(t.integer && u.integer)) break;
      ++k;
    }
    size_t at = k < tokens[0].size() ? tokens[0][k].begin : base.size() - 1;
    size_t other = k < tokens[s].size() ? tokens[s][k].begin : texts[s]->size() - 1;
    runtime::Fail("the operator function ", symbol, " is written differently at other values of the shape dimensions: \"",
                  LineAround(base, at), "\" against \"", LineAround(*texts[s], other), "\"");
  }
  std::string result;
  size_t copied = 0;
  std::vector<int64_t> values(texts.size(), 0);
  for (size_t k = 0; k < tokens[0].size(); ++k) {
    const Token& t = tokens[0][k];
    bool same = true;
    for (size_t s = 1; s < texts.size() && same; ++s) {
      if (!known[s]) continue;
      const Token& u = tokens[s][k];
      same = base.compare(t.begin, t.end - t.begin, *texts[s], u.begin, u.end - u.begin) == 0;
    }
    if (same) continue;
    bool integers = t.integer;
    for (size_t s = 0; s < texts.size(); ++s) {
      if (!known[s]) continue;
      integers = integers && tokens[s][k].integer;
      values[s] = tokens[s][k].value;
    }
    runtime::Check(integers, "the operator function ", symbol, " is written differently at other values of the shape ",
                   "dimensions, not only in its extents: '", base.substr(t.begin, t.end - t.begin), "' in \"",
                   LineAround(base, t.begin), "\"");
    std::string what = runtime::StrCat("the value ", t.value, " in \"", LineAround(base, t.begin), "\" of ", symbol);
    runtime::DimPolynomial extent = fitter.Fit(values, known, what);
    CheckWhole(extent, fitter.samples(), what);
    std::string expression = "(" + extent.ToString("kiln_d") + ")";
    if (t.is_unsigned) expression = "static_cast<unsigned long long>" + expression;
    result += base.substr(copied, t.begin - copied) + expression;
    copied = t.end;
  }
  return result + base.substr(copied);
}

SampleCode GeneralizeDims(const ir::DimSamples& samples, const std::vector<SampleCode>& code) {
  runtime::CheckInternal(code.size() == samples.points.size(), "generalize: ", code.size(), " samples of code for ",
                         samples.points.size(), " points");
  ExtentFitter fitter(samples);
  const SampleCode& base = code[0];
  const size_t num_points = code.size();
  // The graphs: the same but for extents and storage ids (the first sample's planning holds at
  // every value: it shares memory between entries by their lifetimes only, and each storage is
  // made as large as its entries at every dimension's max).
  for (size_t p = 1; p < num_points; ++p) {
    std::string difference = GraphDifference(base.graph, code[p].graph);
    runtime::Check(difference.empty(), "the model's graph differs between ", PointText(samples, 0), " and ",
                   PointText(samples, p), " (", difference, "); its shape dimensions cannot be decided at run time");
  }
  SampleCode result;
  result.graph = base.graph;
  runtime::Graph& graph = result.graph;
  graph.dims = samples.dims;
  std::vector<bool> all(num_points, true);
  const std::vector<int64_t>& largest = samples.points[samples.max_point];
  for (size_t e = 0; e < graph.num_entries(); ++e) {
    bool batched = graph.has_batch() && graph.batched_entries[e];
    std::vector<runtime::DimPolynomial> extents;
    bool fixed = true;
    for (size_t axis = 0; axis < graph.shapes[e].size(); ++axis) {
      std::vector<int64_t> values;
      for (const SampleCode& c : code) {
        int64_t v = c.graph.shapes[e][axis];
        values.push_back(batched && axis == 0 ? v / graph.batch.max : v);
      }
      extents.push_back(fitter.Fit(values, all, runtime::StrCat("extent ", axis, " of graph entry ", e)));
      fixed = fixed && extents.back().IsConstant();
    }
    if (fixed) {
      graph.entry_extents.emplace_back();
      continue;
    }
    std::vector<int64_t> shape = runtime::EvaluateShape(extents, largest);
    if (batched) shape[0] *= graph.batch.max;
    graph.shapes[e] = shape;
    graph.entry_extents.push_back(std::move(extents));
  }
  for (const runtime::OutputTrim& trim : graph.output_trims) {
    runtime::Check(!trim.whole_shape || graph.entry_extents[graph.EntryId(graph.heads[trim.output])].empty(),
                   "output ", trim.output, " has a shape that input values decide at run time and a size that the ",
                   "shape dimensions decide; kiln runs either, not both");
  }
  // Every value in range: whole extents, none larger than at the max (the memory planned).
  for (size_t e = 0; e < graph.num_entries(); ++e) {
    if (graph.entry_extents[e].empty()) continue;
    int64_t largest_elements = 1;
    for (int64_t extent : runtime::EvaluateShape(graph.entry_extents[e], largest)) largest_elements *= extent;
    ForEachValue(samples, int64_t{1} << 20, [&](const std::vector<int64_t>& point) {
      std::vector<int64_t> shape;
      try {
        shape = runtime::EvaluateShape(graph.entry_extents[e], point);
      } catch (const runtime::Error& error) {
        std::string at;
        for (size_t d = 0; d < point.size(); ++d) at += runtime::StrCat(d > 0 ? ", " : "", samples.dims[d].name, " = ", point[d]);
        runtime::Fail("the shape dimensions cannot take every value in their range: at ", at, ", ", error.what(),
                      " (a tensor of the model; give the range a step, MIN..MAX:STEP, that its extents divide, or ",
                      "a MIN from which they are positive)");
      }
      int64_t elements = 1;
      for (int64_t extent : shape) elements *= extent;
      runtime::Check(elements <= largest_elements, "graph entry ", e, " is larger at some values of the shape ",
                     "dimensions than at their max; kiln plans memory for the max");
    });
  }
  // Inputs: each extent either fixed or one dimension itself, so that set_input reads the
  // dimensions from the data; every dimension the extent of some input.
  std::map<std::string, const runtime::NDArray*> params;
  for (const auto& [name, array] : base.params) params[name] = &array;
  std::vector<bool> decided(samples.dims.size(), false);
  for (uint32_t node : graph.arg_nodes) {
    uint32_t e = graph.EntryId(node, 0);
    const std::string& name = graph.nodes[node].name;
    if (graph.entry_extents[e].empty() || params.count(name) != 0) continue;
    for (size_t axis = 0; axis < graph.entry_extents[e].size(); ++axis) {
      const runtime::DimPolynomial& extent = graph.entry_extents[e][axis];
      int d = extent.SingleDim();
      bool batch_axis = graph.has_batch() && graph.batched_entries[e] && axis == 0;
      runtime::Check(extent.IsConstant() || (d >= 0 && !batch_axis), "input '", name, "' has extent ",
                     extent.ToText(fitter.DimNames()), " along axis ", axis,
                     "; an input's extents must be fixed or one shape dimension each");
      if (d >= 0) decided[d] = true;
    }
  }
  for (size_t d = 0; d < decided.size(); ++d) {
    runtime::Check(decided[d], "shape dimension ", samples.dims[d].name, " is no extent of any input of the model");
  }
  // Constants: the same at every sample, or the front of their value at the max (the library's).
  for (const auto& [name, array] : base.params) {
    uint32_t node = 0;
    for (uint32_t arg : graph.arg_nodes) node = graph.nodes[arg].name == name ? arg : node;
    bool with_dims = !graph.entry_extents[graph.EntryId(node, 0)].empty();
    const runtime::NDArray* at_max = nullptr;
    for (const auto& [other, value] : code[samples.max_point].params) at_max = other == name ? &value : at_max;
    runtime::CheckInternal(at_max != nullptr, "generalize: constant ", name, " is missing at the max");
    for (size_t p = 0; p < num_points; ++p) {
      const runtime::NDArray* value = nullptr;
      for (const auto& [other, v] : code[p].params) value = other == name ? &v : value;
      runtime::CheckInternal(value != nullptr, "generalize: constant ", name, " is missing at a sample");
      size_t bytes = value->NumBytes();
      bool same = with_dims ? bytes <= at_max->NumBytes() : bytes == at_max->NumBytes();
      same = same && std::memcmp(value->data(), at_max->data(), bytes) == 0;
      runtime::Check(same, "a constant of the model (", name, ") depends on the shape dimensions other than as the ",
                     "front of its value at their max (compare ", PointText(samples, p), " with ",
                     PointText(samples, samples.max_point), "); its dimensions cannot be decided at run time");
    }
    result.params.emplace_back(name, *at_max);
    if (with_dims) graph.front_params.push_back(graph.EntryId(node, 0));
  }
  // Sources: the same functions; the max sample's checks them where it is written alike.
  for (size_t p = 1; p < num_points; ++p) {
    bool same = code[p].functions.size() == base.functions.size();
    for (size_t f = 0; same && f < base.functions.size(); ++f) same = code[p].functions[f].symbol == base.functions[f].symbol;
    runtime::Check(same, "the model compiles to other operator functions at ", PointText(samples, p), " than at ",
                   PointText(samples, 0), "; its shape dimensions cannot be decided at run time");
  }
  for (size_t f = 0; f < base.functions.size(); ++f) {
    const std::string& symbol = base.functions[f].symbol;
    bool fixed = true;
    for (const SampleCode& c : code) fixed = fixed && c.functions[f].fixed_source == base.functions[f].fixed_source;
    if (fixed) {  // the same at every sample: as for fixed extents
      result.functions.push_back({symbol, base.functions[f].fixed_source, ""});
      continue;
    }
    std::vector<const std::string*> texts;
    for (const SampleCode& c : code) texts.push_back(&c.functions[f].source);
    // The max is no generic value: written otherwise there (a gcd of extents), it checks nothing.
    if (samples.max_point >= samples.num_fitting_points && !SameTokens(*texts[0], *texts[samples.max_point])) {
      texts[samples.max_point] = nullptr;
    }
    result.functions.push_back({symbol, GeneralizeSource(fitter, texts, symbol), ""});
  }
  return result;
}

}  // namespace kiln::backend
