// ONNX's Einsum as sums, transposes, reshapes and batched matrix products: letters only one
// operand has and the output lacks are summed out of it first; two operands then contract as
// [batch, kept by a, summed] x [batch, summed, kept by b]; more than two contract left to right.
// Ellipses stand for the leading dims they cover. A letter repeated within one operand (a
// diagonal) is refused with a clear error.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kBatchMatmul("nn.batch_matmul");
const OpRef kReshape("reshape");
const OpRef kSum("sum");
const OpRef kTranspose("transpose");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

// An operand and the letters of its dims (ellipsis dims as '0', '1', ...).
struct Term {
  Expr value;
  std::string letters;
};

const Ints& ShapeOf(const Term& t) { return t.value->type().tensor().shape; }

// The letters of one operand's subscript with its ellipsis expanded to fit `rank` dims.
std::string Expand(const NodeContext& c, std::string subscript, int64_t rank, int64_t* ellipsis_dims) {
  size_t dots = subscript.find("...");
  if (dots == std::string::npos) return subscript;
  int64_t covered = rank - static_cast<int64_t>(subscript.size() - 3);
  if (covered < 0 || covered > 9) c.FailAt("attribute 'equation'", "an ellipsis does not fit its operand's rank");
  if (*ellipsis_dims >= 0 && *ellipsis_dims != covered) {
    c.FailAt("attribute 'equation'", "ellipses cover different numbers of dims (broadcasting them is not supported)");
  }
  *ellipsis_dims = covered;
  std::string dims;
  for (int64_t i = 0; i < covered; ++i) dims += static_cast<char>('0' + i);
  return subscript.replace(dots, 3, dims);
}

Expr Transposed(const NodeContext& c, const Term& t, const std::string& order) {
  Ints axes;
  for (char letter : order) axes.push_back(static_cast<int64_t>(t.letters.find(letter)));
  bool identity = true;
  for (size_t i = 0; i < axes.size(); ++i) identity = identity && axes[i] == static_cast<int64_t>(i);
  return identity ? t.value : c.Op(kTranspose, {t.value}, MakeAttrs({{"axes", axes}}));
}

Expr Reshaped(const NodeContext& c, const Expr& x, const Ints& shape) {
  return x->type().tensor().shape == shape ? x : c.Op(kReshape, {x}, MakeAttrs({{"newshape", shape}}));
}

// t with the letters not in `keep` summed out.
Term SumOut(const NodeContext& c, const Term& t, const std::set<char>& keep) {
  Ints axes;
  std::string kept;
  for (size_t i = 0; i < t.letters.size(); ++i) {
    if (keep.count(t.letters[i]) != 0) {
      kept += t.letters[i];
    } else {
      axes.push_back(static_cast<int64_t>(i));
    }
  }
  if (axes.empty()) return t;
  return {c.Op(kSum, {t.value}, MakeAttrs({{"axis", axes}, {"keepdims", int64_t{0}}})), kept};
}

// a and b contracted over their shared letters not in `keep`; the result's letters: batch (shared
// and kept), then a's kept, then b's kept.
Term Contract(const NodeContext& c, const Term& a, const Term& b, const std::set<char>& keep) {
  std::string batch, a_kept, summed, b_kept;
  std::map<char, int64_t> size;
  for (size_t i = 0; i < a.letters.size(); ++i) size[a.letters[i]] = ShapeOf(a)[i];
  for (size_t i = 0; i < b.letters.size(); ++i) {
    char letter = b.letters[i];
    if (size.count(letter) != 0 && size[letter] != ShapeOf(b)[i]) {
      c.Fail(StrCat("subscript '", std::string(1, letter), "' has sizes ", size[letter], " and ", ShapeOf(b)[i]));
    }
    size[letter] = ShapeOf(b)[i];
  }
  for (char letter : a.letters) {
    bool shared = b.letters.find(letter) != std::string::npos;
    (shared ? (keep.count(letter) != 0 ? batch : summed) : a_kept) += letter;
  }
  for (char letter : b.letters) {
    if (a.letters.find(letter) == std::string::npos) b_kept += letter;
  }
  auto product = [&](const std::string& letters) {
    int64_t n = 1;
    for (char letter : letters) n *= size[letter];
    return n;
  };
  int64_t nb = product(batch), m = product(a_kept), k = product(summed), n = product(b_kept);
  Expr a3 = Reshaped(c, Transposed(c, a, batch + a_kept + summed), {nb, m, k});
  Expr b3 = Reshaped(c, Transposed(c, b, batch + summed + b_kept), {nb, k, n});
  std::string letters = batch + a_kept + b_kept;
  Ints shape;
  for (char letter : letters) shape.push_back(size[letter]);
  return {Reshaped(c, c.Op(kBatchMatmul, {a3, b3}), shape), letters};
}

Outputs Einsum(const NodeContext& c) {
  std::string equation;
  for (char ch : c.attr_string("equation")) {
    if (ch != ' ') equation += ch;
  }
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> subscripts;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    subscripts.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (subscripts.size() != c.num_inputs()) {
    c.FailAt("attribute 'equation'", StrCat("names ", subscripts.size(), " operands, the node has ", c.num_inputs()));
  }
  int64_t ellipsis_dims = -1;
  std::vector<Term> terms;
  std::map<char, int> count;
  auto written = [&](const std::string& subscript) {  // letters and at most one ellipsis
    std::string rest = subscript;
    if (size_t dots = rest.find("..."); dots != std::string::npos) rest.erase(dots, 3);
    for (char letter : rest) {
      if (!std::isalpha(static_cast<unsigned char>(letter))) {
        c.FailAt("attribute 'equation'", StrCat("'", subscript, "' is not letters with at most one ellipsis"));
      }
    }
  };
  for (size_t i = 0; i < subscripts.size(); ++i) {
    written(subscripts[i]);
    std::string letters = Expand(c, subscripts[i], c.input_type(i).ndim(), &ellipsis_dims);
    if (static_cast<int64_t>(letters.size()) != c.input_type(i).ndim()) {
      c.FailAt("attribute 'equation'", StrCat("operand ", i, " has ", c.input_type(i).ndim(), " dims, its subscript ",
                                              letters.size()));
    }
    std::set<char> seen;
    for (char letter : letters) {
      if (!seen.insert(letter).second) {
        c.FailAt("attribute 'equation'", "a letter repeated within one operand (a diagonal) is not supported");
      }
      ++count[letter];
    }
    terms.push_back({c.input(i), letters});
  }
  std::string output;
  if (arrow != std::string::npos) {
    output = equation.substr(arrow + 2);
    written(output);
    if (ellipsis_dims >= 0) output = Expand(c, output, static_cast<int64_t>(output.size()) - 3 + ellipsis_dims, &ellipsis_dims);
  } else {  // implicit: the ellipsis dims, then the letters used once, in alphabetical order
    for (int64_t i = 0; i < std::max<int64_t>(ellipsis_dims, 0); ++i) output += static_cast<char>('0' + i);
    for (const auto& [letter, n] : count) {
      if (n == 1 && std::isalpha(static_cast<unsigned char>(letter))) output += letter;
    }
  }
  for (char letter : output) {
    if (count.count(letter) == 0) c.FailAt("attribute 'equation'", "the output names a letter no operand has");
  }
  // Left to right: each step keeps the letters the output or a later operand needs.
  Term result = terms[0];
  for (size_t i = 0; i < terms.size(); ++i) {
    std::set<char> needed(output.begin(), output.end());
    for (size_t j = i + 1; j < terms.size(); ++j) needed.insert(terms[j].letters.begin(), terms[j].letters.end());
    if (i == 0) {
      result = SumOut(c, result, needed);
      continue;
    }
    std::set<char> keep_b = needed;
    keep_b.insert(result.letters.begin(), result.letters.end());
    result = Contract(c, result, SumOut(c, terms[i], keep_b), needed);
  }
  result = SumOut(c, result, std::set<char>(output.begin(), output.end()));
  return {Transposed(c, result, output)};
}

}  // namespace

void AddEinsumConverters(ConverterTable& table) { Register(table, "Einsum", Einsum, 12); }

}  // namespace kiln::frontend
