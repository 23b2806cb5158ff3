// tfidf_vectorizer as a kernel call over static tables: the pool's n-grams of the counted lengths
// (each as its length then its items), their columns and the weights, taken from the op's
// attributes at compile time.
#include <algorithm>

#include "backend/codegen/emitter.h"

namespace kiln::backend {

void EmitTfIdfVectorizer(EmitContext& c) {
  const ir::Attrs& attrs = c.call.attrs;
  const auto& pool = attrs.GetInts("pool_int64s");
  const auto& starts = attrs.GetInts("ngram_counts");
  const auto& indexes = attrs.GetInts("ngram_indexes");
  // The pool holds no n-gram longer than its length groups: rows of the table are that wide.
  int64_t min_n = attrs.GetInt("min_gram_length");
  int64_t max_n = std::min<int64_t>(attrs.GetInt("max_gram_length"), static_cast<int64_t>(starts.size()));
  std::vector<int64_t> grams, columns;
  size_t ordinal = 0;  // n-grams of every length have a column, counted or not
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t n = static_cast<int64_t>(i) + 1;
    int64_t end = i + 1 < starts.size() ? starts[i + 1] : static_cast<int64_t>(pool.size());
    for (int64_t at = starts[i]; at + n <= end; at += n, ++ordinal) {
      if (n < min_n || n > max_n) continue;
      grams.push_back(n);
      grams.insert(grams.end(), pool.begin() + at, pool.begin() + at + n);
      grams.insert(grams.end(), max_n - n, 0);
      columns.push_back(indexes[ordinal]);
    }
  }
  const auto& weights = attrs.GetFloats("weights");
  const auto& x = c.input_types[0].shape;
  const auto& y = c.output_types[0].shape;
  const std::string& mode = attrs.GetString("mode");
  auto table = [&](const char* type, const char* prefix, const auto& values, auto print) {
    return values.empty() ? std::string("nullptr") : StaticTable(c, type, prefix, values, print);
  };
  std::string gram_table = table("int64_t", "grams", grams, IntLiteral);
  std::string column_table = table("int64_t", "columns", columns, IntLiteral);
  std::string weight_table = table("float", "weights", weights, [](double w) { return FloatLiteral(w); });
  kernels::TfIdfShape shape{x.size() == 2 ? x[0] : 1,       x.back(),
                            static_cast<int64_t>(columns.size()), y.back(),
                            min_n,                                 max_n,
                            attrs.GetInt("max_skip_count"),        mode == "TF" ? 1 : mode == "IDF" ? 2 : 3,
                            !weights.empty()};
  c.code.Line("const auto shape = " + ParamsLiteral(TypedParams("TfIdfShape", shape)) + ";");
  c.code.Line("kiln::kernels::TfIdfVectorizer(shape, " + gram_table + ", " + column_table + ", " + weight_table + ", " +
              c.inputs[0] + ", " + c.outputs[0] + ");");
}

}  // namespace kiln::backend
