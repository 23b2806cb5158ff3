// NonMaxSuppression: per batch and class, greedy selection of the highest-scoring boxes that do
// not overlap a kept box by more than the IoU threshold (ONNX NonMaxSuppression, as its reference).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

struct Corners {
  float x_min, x_max, y_min, y_max;
};

Corners CornersOf(const float* box, bool center_point_box) {
  if (center_point_box) {  // x_center, y_center, width, height
    float half_w = box[2] / 2, half_h = box[3] / 2;
    return {box[0] - half_w, box[0] + half_w, box[1] - half_h, box[1] + half_h};
  }
  // y1, x1, y2, x2: either diagonal.
  return {std::min(box[1], box[3]), std::max(box[1], box[3]), std::min(box[0], box[2]), std::max(box[0], box[2])};
}

// Whether the boxes overlap by more than the threshold (boxes of no area never do).
bool Suppresses(const Corners& a, const Corners& b, float iou_threshold) {
  float x_min = std::max(a.x_min, b.x_min), x_max = std::min(a.x_max, b.x_max);
  if (x_max <= x_min) return false;
  float y_min = std::max(a.y_min, b.y_min), y_max = std::min(a.y_max, b.y_max);
  if (y_max <= y_min) return false;
  float intersection = (x_max - x_min) * (y_max - y_min);
  float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  float union_area = area_a + area_b - intersection;
  if (intersection <= 0 || area_a <= 0 || area_b <= 0 || union_area <= 0) return false;
  return intersection / union_area > iou_threshold;
}

}  // namespace

void NonMaxSuppression(const NonMaxSuppressionShape& s, const float* boxes, const float* scores,
                       const int64_t* max_output_boxes_per_class, const float* iou_threshold,
                       const float* score_threshold, int64_t* selected, int64_t* count) {
  int64_t keep_at_most = std::min(std::max(*max_output_boxes_per_class, int64_t{0}), s.max_per_class);
  std::vector<Corners> corners(s.boxes);
  std::vector<int64_t> candidates, kept;
  int64_t rows = 0;
  for (int64_t b = 0; b < s.batches; ++b) {
    for (int64_t box = 0; box < s.boxes; ++box) corners[box] = CornersOf(boxes + (b * s.boxes + box) * 4, s.center_point_box);
    for (int64_t c = 0; c < s.classes; ++c) {
      const float* score = scores + (b * s.classes + c) * s.boxes;
      candidates.clear();
      for (int64_t box = 0; box < s.boxes; ++box) {
        if (!s.use_score_threshold || score[box] > *score_threshold) candidates.push_back(box);
      }
      // Highest score first, equal scores by box, NaN last.
      std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t x, int64_t y) {
        if (std::isnan(score[y])) return !std::isnan(score[x]);
        return score[x] > score[y];
      });
      kept.clear();
      for (int64_t box : candidates) {
        if (static_cast<int64_t>(kept.size()) >= keep_at_most) break;
        bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t other) {
          return Suppresses(corners[box], corners[other], *iou_threshold);
        });
        if (suppressed) continue;
        kept.push_back(box);
        int64_t* row = selected + 3 * rows++;
        row[0] = b;
        row[1] = c;
        row[2] = box;
      }
    }
  }
  std::fill(selected + 3 * rows, selected + 3 * s.batches * s.classes * s.max_per_class, int64_t{0});
  *count = rows;
}

}  // namespace kiln::kernels
