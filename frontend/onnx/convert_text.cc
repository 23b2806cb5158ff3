// ONNX text ops: TfIdfVectorizer over integer tokens (a pool of strings is not supported: kiln's
// tensors hold no strings).
#include "frontend/onnx/converter.h"

namespace kiln::frontend {

using namespace ir;

namespace {

const OpRef kTfIdfVectorizer("tfidf_vectorizer");

std::vector<Expr> TfIdfVectorizer(const NodeContext& c) {
  if (c.has_attr("pool_strings")) c.FailAt("attribute 'pool_strings'", "string n-grams are not supported (kiln's tensors hold no strings)");
  std::vector<float> weights = c.attr_floats("weights", std::vector<float>{});
  Attrs attrs = MakeAttrs({{"pool_int64s", c.attr_ints("pool_int64s")},
                           {"ngram_counts", c.attr_ints("ngram_counts")},
                           {"ngram_indexes", c.attr_ints("ngram_indexes")},
                           {"weights", std::vector<double>(weights.begin(), weights.end())},
                           {"min_gram_length", c.attr_int("min_gram_length")},
                           {"max_gram_length", c.attr_int("max_gram_length")},
                           {"max_skip_count", c.attr_int("max_skip_count")},
                           {"mode", c.attr_string("mode")}});
  return {c.Op(kTfIdfVectorizer, {c.input(0)}, attrs)};
}

}  // namespace

void AddTextConverters(ConverterTable& table) { Register(table, "TfIdfVectorizer", TfIdfVectorizer, 9); }

}  // namespace kiln::frontend
