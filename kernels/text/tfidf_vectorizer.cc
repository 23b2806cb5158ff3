// TfIdfVectorizer: per row of integer tokens, the counts of a pool's n-grams, skip-grams included,
// weighted (ONNX TfIdfVectorizer, as its reference).
#include <algorithm>
#include <map>
#include <vector>

#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

template <typename T>
void Vectorize(const TfIdfShape& s, const int64_t* grams, const int64_t* columns, const float* weights, const T* x,
               float* y) {
  // Each pool n-gram, as its items, to its column; a repeated n-gram takes its last column.
  std::map<std::vector<int64_t>, int64_t> column_of;
  for (int64_t g = 0; g < s.grams; ++g) {
    const int64_t* gram = grams + g * (s.max_gram_length + 1);
    column_of[std::vector<int64_t>(gram + 1, gram + 1 + gram[0])] = columns[g];
  }
  std::vector<int64_t> counts(s.columns), items;
  for (int64_t r = 0; r < s.rows; ++r) {
    const T* row = x + r * s.row_size;
    std::fill(counts.begin(), counts.end(), int64_t{0});
    int64_t shortest = s.min_gram_length;
    // A skip as long as the row fits no n-gram of two items: larger ones are not tried.
    int64_t skips = std::min(s.max_skip_count + 1, std::max<int64_t>(s.row_size, 1));
    for (int64_t skip = 1; skip <= skips && shortest <= s.max_gram_length; ++skip) {
      for (int64_t start = 0; start < s.row_size; ++start) {
        items.clear();
        for (int64_t n = 1; n <= s.max_gram_length; ++n) {
          int64_t at = start + (n - 1) * skip;
          if (at >= s.row_size) break;
          items.push_back(static_cast<int64_t>(row[at]));
          if (n < shortest) continue;
          auto found = column_of.find(items);
          if (found != column_of.end()) ++counts[found->second];
        }
      }
      if (shortest == 1) shortest = 2;  // unigrams do not depend on the skip: counted once
    }
    float* out = y + r * s.columns;
    for (int64_t c = 0; c < s.columns; ++c) {
      float weight = s.has_weights ? weights[c] : 1.0f;
      if (s.mode == 1) out[c] = static_cast<float>(counts[c]);
      else if (s.mode == 2) out[c] = counts[c] > 0 ? weight : 0.0f;
      else out[c] = weight * static_cast<float>(counts[c]);
    }
  }
}

}  // namespace

void TfIdfVectorizer(const TfIdfShape& s, const int64_t* grams, const int64_t* columns, const float* weights,
                     const int32_t* x, float* y) {
  Vectorize(s, grams, columns, weights, x, y);
}
void TfIdfVectorizer(const TfIdfShape& s, const int64_t* grams, const int64_t* columns, const float* weights,
                     const int64_t* x, float* y) {
  Vectorize(s, grams, columns, weights, x, y);
}

}  // namespace kiln::kernels
