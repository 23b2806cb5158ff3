// Shapes decided by input values at run time: an op whose shape-deciding input (a reshape's shape,
// a reduction's axes, a slice's starts) is given as the graph runs computes its result's shape
// here, checked as ONNX defines it, and the generated code then computes the data into storage of
// the largest size the result can have (docs/architecture.md, "Inputs that ONNX lets decide
// shapes, given at run time").
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <limits>

#include "kernels/backend_api.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

// Fails with "<where>: <message>".
int FailAt(const char* where, const char* format, ...) {
  char message[512];
  int used = std::snprintf(message, sizeof(message), "%s: ", where);
  if (used < 0 || used >= static_cast<int>(sizeof(message))) used = 0;
  va_list args;
  va_start(args, format);
  std::vsnprintf(message + used, sizeof(message) - used, format, args);
  va_end(args);
  return Fail(message);
}

// `axis` counted from the end when negative, within [0, rank); -1 when out of range.
int64_t NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return -1;
  return axis < 0 ? axis + rank : axis;
}

// Marks each axis of `axes` in `marked` (rank flags); fails on one out of range or given twice.
int MarkAxes(const int64_t* axes, int64_t num_axes, int64_t rank, bool* marked, const char* where) {
  for (int64_t d = 0; d < rank; ++d) marked[d] = false;
  for (int64_t k = 0; k < num_axes; ++k) {
    int64_t axis = NormalizeAxis(axes[k], rank);
    if (axis < 0) return FailAt(where, "axis %lld is out of range for rank %lld", static_cast<long long>(axes[k]),
                                static_cast<long long>(rank));
    if (marked[axis]) return FailAt(where, "axis %lld is given twice", static_cast<long long>(axes[k]));
    marked[axis] = true;
  }
  return 0;
}

constexpr int64_t kMaxRank = 64;

}  // namespace

int ReshapeAtRunTime(const int64_t* in, int64_t rank, const int64_t* shape, int64_t out_rank, bool allow_zero,
                     int64_t* out, const char* where) {
  int64_t elements = 1;
  for (int64_t d = 0; d < rank; ++d) elements *= in[d];
  int64_t known = 1, infer = -1;
  bool zero = false;
  for (int64_t d = 0; d < out_rank; ++d) {
    int64_t extent = shape[d];
    if (extent == 0 && !allow_zero) {
      if (d >= rank) return FailAt(where, "a 0 at index %lld of the shape copies an extent the input's %lld axes "
                                   "do not have", static_cast<long long>(d), static_cast<long long>(rank));
      extent = in[d];
    }
    zero = zero || (allow_zero && extent == 0);
    if (extent == -1) {
      if (infer >= 0) return FailAt(where, "the shape has more than one -1");
      infer = d;
      continue;
    }
    if (extent < 0) return FailAt(where, "the shape has the negative extent %lld", static_cast<long long>(extent));
    if (__builtin_mul_overflow(known, extent, &known)) return FailAt(where, "the shape has too many elements");
    out[d] = extent;
  }
  if (infer >= 0) {
    if (zero) return FailAt(where, "with allowzero the shape cannot hold both 0 and -1");
    if (known == 0 || elements % known != 0) {
      return FailAt(where, "no extent for the -1 gives the input's %lld elements", static_cast<long long>(elements));
    }
    out[infer] = elements / known;
    known = elements;
  }
  if (known != elements) {
    return FailAt(where, "the shape holds %lld elements, the input %lld", static_cast<long long>(known),
                  static_cast<long long>(elements));
  }
  return 0;
}

int SqueezeAtRunTime(const int64_t* in, int64_t rank, const int64_t* axes, int64_t num_axes, int64_t* out,
                     const char* where) {
  bool squeezed[kMaxRank];
  if (rank > kMaxRank) return FailAt(where, "more than %lld axes", static_cast<long long>(kMaxRank));
  if (MarkAxes(axes, num_axes, rank, squeezed, where) != 0) return -1;
  for (int64_t d = 0, next = 0; d < rank; ++d) {
    if (!squeezed[d]) {
      out[next++] = in[d];
    } else if (in[d] != 1) {
      return FailAt(where, "axis %lld has extent %lld, not 1", static_cast<long long>(d), static_cast<long long>(in[d]));
    }
  }
  return 0;
}

int UnsqueezeAtRunTime(const int64_t* in, int64_t rank, const int64_t* axes, int64_t num_axes, int64_t* out,
                       const char* where) {
  bool inserted[kMaxRank];
  int64_t out_rank = rank + num_axes;
  if (out_rank > kMaxRank) return FailAt(where, "more than %lld axes", static_cast<long long>(kMaxRank));
  if (MarkAxes(axes, num_axes, out_rank, inserted, where) != 0) return -1;
  for (int64_t d = 0, next = 0; d < out_rank; ++d) out[d] = inserted[d] ? 1 : in[next++];
  return 0;
}

int ReduceAtRunTime(const int64_t* in, int64_t rank, const int64_t* axes, int64_t num_axes, bool keepdims,
                    bool noop_with_empty_axes, int64_t* out, int64_t* strides, const char* where) {
  bool reduced[kMaxRank];
  if (rank > kMaxRank) return FailAt(where, "more than %lld axes", static_cast<long long>(kMaxRank));
  if (MarkAxes(axes, num_axes, rank, reduced, where) != 0) return -1;
  if (num_axes == 0) {
    for (int64_t d = 0; d < rank; ++d) reduced[d] = !noop_with_empty_axes;
  }
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = reduced[d] ? 0 : stride;
    stride *= reduced[d] ? 1 : in[d];
  }
  for (int64_t d = 0, next = 0; d < rank; ++d) {
    if (!reduced[d]) out[next++] = in[d];
    else if (keepdims) out[next++] = 1;
  }
  return 0;
}

int SliceAtRunTime(const int64_t* in, int64_t rank, const int64_t* starts, const int64_t* ends, const int64_t* axes,
                   const int64_t* steps, int64_t count, int64_t* first, int64_t* step, int64_t* out, const char* where) {
  bool sliced[kMaxRank];
  if (rank > kMaxRank) return FailAt(where, "more than %lld axes", static_cast<long long>(kMaxRank));
  if (MarkAxes(axes, count, rank, sliced, where) != 0) return -1;
  for (int64_t d = 0; d < rank; ++d) {
    first[d] = 0;
    step[d] = 1;
    out[d] = in[d];
  }
  for (int64_t k = 0; k < count; ++k) {
    int64_t axis = NormalizeAxis(axes[k], rank), extent = in[axis], by = steps[k];
    if (by == 0) return FailAt(where, "the step along axis %lld is 0", static_cast<long long>(axes[k]));
    // Negative indices count from the end; then clamped to [0, extent] going forward, [-1, extent - 1]
    // going back (ONNX's Slice).
    int64_t start = starts[k] < 0 ? starts[k] + extent : starts[k];
    int64_t end = ends[k] < 0 ? ends[k] + extent : ends[k];
    int64_t low = by > 0 ? 0 : -1, high = by > 0 ? extent : extent - 1;
    start = start < 0 ? 0 : (start > high ? high : start);
    end = end < low ? low : (end > high ? high : end);
    if (extent == 0) start = end = 0;
    uint64_t magnitude = by > 0 ? static_cast<uint64_t>(by) : 0 - static_cast<uint64_t>(by);
    int64_t span = by > 0 ? end - start : start - end;
    first[axis] = start;
    step[axis] = by;
    out[axis] = span <= 0 ? 0 : static_cast<int64_t>((static_cast<uint64_t>(span) - 1) / magnitude + 1);
  }
  return 0;
}

int SplitAtRunTime(const int64_t* in, int64_t rank, int64_t axis, const int64_t* sizes, int64_t pieces,
                   const char* where) {
  (void)rank;
  int64_t total = 0;
  for (int64_t p = 0; p < pieces; ++p) {
    if (sizes[p] < 0) return FailAt(where, "piece %lld has the negative size %lld", static_cast<long long>(p),
                                    static_cast<long long>(sizes[p]));
    if (__builtin_add_overflow(total, sizes[p], &total)) return FailAt(where, "the sizes overflow");
  }
  if (total != in[axis]) {
    return FailAt(where, "the sizes add up to %lld, not to the extent %lld of axis %lld", static_cast<long long>(total),
                  static_cast<long long>(in[axis]), static_cast<long long>(axis));
  }
  return 0;
}

int TopKAtRunTime(const int64_t* in, int64_t rank, int64_t axis, int64_t k, int64_t* out, const char* where) {
  if (k < 0 || k > in[axis]) {
    return FailAt(where, "k = %lld is outside [0, %lld], the extent of axis %lld", static_cast<long long>(k),
                  static_cast<long long>(in[axis]), static_cast<long long>(axis));
  }
  for (int64_t d = 0; d < rank; ++d) out[d] = d == axis ? k : in[d];
  return 0;
}

int AxisAtRunTime(int64_t axis, int64_t rank, int64_t* normalized, const char* where) {
  *normalized = NormalizeAxis(axis, rank);
  if (*normalized < 0) {
    return FailAt(where, "axis %lld is out of range for rank %lld", static_cast<long long>(axis),
                  static_cast<long long>(rank));
  }
  return 0;
}

namespace {

template <class T>
void Gather(const T* in, const int64_t* in_shape, int64_t rank, const int64_t* first, const int64_t* step,
            const int64_t* out, T* result) {
  int64_t strides[kMaxRank], at[kMaxRank] = {}, elements = 1, source = 0;
  for (int64_t d = rank - 1, stride = 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= in_shape[d];
    elements *= out[d];
    source += first[d] * strides[d];
  }
  for (int64_t i = 0; i < elements; ++i) {
    result[i] = in[source];
    for (int64_t d = rank - 1; d >= 0; --d) {  // the next position, in row-major order
      if (++at[d] < out[d]) {
        source += step[d] * strides[d];
        break;
      }
      source -= (out[d] - 1) * strides[d] * step[d];  // back to the first along d
      at[d] = 0;
    }
  }
}

}  // namespace

void GatherStridedAtRunTime(const void* in, const int64_t* in_shape, int64_t rank, const int64_t* first,
                            const int64_t* step, const int64_t* out, int64_t element_bytes, void* result) {
  switch (element_bytes) {
    case 1:
      return Gather(static_cast<const uint8_t*>(in), in_shape, rank, first, step, out, static_cast<uint8_t*>(result));
    case 2:
      return Gather(static_cast<const uint16_t*>(in), in_shape, rank, first, step, out, static_cast<uint16_t*>(result));
    case 4:
      return Gather(static_cast<const uint32_t*>(in), in_shape, rank, first, step, out, static_cast<uint32_t*>(result));
    default:
      return Gather(static_cast<const uint64_t*>(in), in_shape, rank, first, step, out, static_cast<uint64_t*>(result));
  }
}

}  // namespace kiln::kernels
