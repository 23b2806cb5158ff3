// Text ops: tfidf_vectorizer (ONNX TfIdfVectorizer over integer tokens). The n-gram pool is an
// attribute, as in ONNX; backend/codegen/text_emitter.cc turns it into static tables.
#include <algorithm>

#include "ir/op.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

using runtime::Check;

// [rows, columns] (or [columns] for one row of tokens): per row, each pool n-gram's weighted count.
Type TfIdfVectorizer(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& x = TensorArg(args, 0);
  Check(x.ndim() == 1 || x.ndim() == 2, "takes tokens of shape [length] or [rows, length], got ", ShapeText(x.shape));
  Check(x.dtype == DLDataType{kDLInt, 32, 1} || x.dtype == DLDataType{kDLInt, 64, 1}, "takes int32 or int64 tokens");
  const auto& pool = attrs.GetInts("pool_int64s");
  const auto& counts = attrs.GetInts("ngram_counts");
  const auto& indexes = attrs.GetInts("ngram_indexes");
  int64_t min_n = attrs.GetInt("min_gram_length"), max_n = attrs.GetInt("max_gram_length");
  Check(min_n >= 1 && min_n <= max_n, "needs 1 <= min_gram_length (", min_n, ") <= max_gram_length (", max_n, ")");
  Check(attrs.GetInt("max_skip_count") >= 0, "max_skip_count must not be negative");
  const std::string& mode = attrs.GetString("mode");
  Check(mode == "TF" || mode == "IDF" || mode == "TFIDF", "mode '", mode, "' is not TF, IDF or TFIDF");
  // ngram_counts[i]: where the pool's (i+1)-grams start.
  int64_t grams = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    int64_t end = i + 1 < counts.size() ? counts[i + 1] : static_cast<int64_t>(pool.size());
    Check(counts[i] >= 0 && counts[i] <= end && end <= static_cast<int64_t>(pool.size()),
          "ngram_counts ", AttrValueText(counts), " must rise within the pool's ", pool.size(), " items");
    Check((end - counts[i]) % static_cast<int64_t>(i + 1) == 0, "the pool's ", i + 1, "-grams take ", end - counts[i],
          " items, not a multiple of ", i + 1);
    grams += (end - counts[i]) / static_cast<int64_t>(i + 1);
  }
  Check(static_cast<int64_t>(indexes.size()) == grams, "ngram_indexes has ", indexes.size(),
        " values for the pool's ", grams, " n-grams");
  int64_t columns = 0;
  for (int64_t index : indexes) {
    Check(index >= 0 && index < (int64_t{1} << 31), "ngram_indexes holds ", index, ", not a column");
    columns = std::max(columns, index + 1);
  }
  const auto& weights = attrs.GetFloats("weights");
  Check(weights.empty() || static_cast<int64_t>(weights.size()) >= columns, "weights has ", weights.size(),
        " values for ", columns, " columns");
  if (x.ndim() == 1) return Type::Tensor({columns}, runtime::kFloat32);
  return Type::Tensor({x.shape[0], columns}, runtime::kFloat32);
}

}  // namespace

void RegisterTextOps(OpTable& table) {
  table["tfidf_vectorizer"] = {"tfidf_vectorizer", 1, 1,
                               {{"pool_int64s", AttrKind::kInts, {}, "the n-grams, grouped by length"},
                                {"ngram_counts", AttrKind::kInts, {}, "where each length's n-grams start in the pool"},
                                {"ngram_indexes", AttrKind::kInts, {}, "each n-gram's output column"},
                                {"weights", AttrKind::kFloats, std::vector<double>{}, "per column (IDF, TFIDF)"},
                                {"min_gram_length", AttrKind::kInt, {}, "the shortest n-grams counted"},
                                {"max_gram_length", AttrKind::kInt, {}, "the longest n-grams counted"},
                                {"max_skip_count", AttrKind::kInt, {}, "tokens an n-gram may skip between items"},
                                {"mode", AttrKind::kString, {}, "TF, IDF or TFIDF"}},
                               OpPattern::kOpaque, TfIdfVectorizer,
                               "per row of tokens, the weighted counts of a pool's n-grams (skip-grams)"};
}

}  // namespace kiln::ir
