// Shapes decided by input values at run time: an op whose shape-deciding input (a reshape's shape,
// a reduction's axes, a slice's starts) is given as the graph runs computes its result's shape
// here, checked as ONNX defines it, and the generated code then computes the data into storage of
// the largest size the result can have (docs/architecture.md, "Inputs that ONNX lets decide
// shapes, given at run time").
#include <cmath>
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

int ExpandAtRunTime(const int64_t* in, int64_t rank, const int64_t* shape, int64_t count, int64_t* out,
                    const char* where) {
  int64_t out_rank = rank > count ? rank : count;
  for (int64_t d = 0; d < out_rank; ++d) {  // aligned at the end
    int64_t a = d - (out_rank - rank) >= 0 ? in[d - (out_rank - rank)] : 1;
    int64_t b = d - (out_rank - count) >= 0 ? shape[d - (out_rank - count)] : 1;
    if (b < 0) return FailAt(where, "the shape has the negative extent %lld", static_cast<long long>(b));
    if (a != b && a != 1 && b != 1) {
      return FailAt(where, "the input's extent %lld and the shape's %lld do not broadcast (axis %lld of the result)",
                    static_cast<long long>(a), static_cast<long long>(b), static_cast<long long>(d));
    }
    out[d] = a == 1 ? b : a;
  }
  return 0;
}

int TileAtRunTime(const int64_t* in, int64_t rank, const int64_t* repeats, int64_t* out, const char* where) {
  for (int64_t d = 0; d < rank; ++d) {
    if (repeats[d] < 0) {
      return FailAt(where, "axis %lld repeats %lld times", static_cast<long long>(d), static_cast<long long>(repeats[d]));
    }
    if (__builtin_mul_overflow(in[d], repeats[d], &out[d])) return FailAt(where, "the result has too many elements");
  }
  return 0;
}

int ShapeOfValuesAtRunTime(const int64_t* values, int64_t count, int64_t* out, const char* where) {
  for (int64_t d = 0; d < count; ++d) {
    if (values[d] < 0) return FailAt(where, "the shape has the negative extent %lld", static_cast<long long>(values[d]));
    out[d] = values[d];
  }
  return 0;
}

int RangeAtRunTime(double start, double limit, double delta, int64_t* out, const char* where) {
  if (delta == 0 || std::isnan(start) || std::isnan(limit) || std::isnan(delta)) {
    return FailAt(where, "delta %g from %g to %g makes no range", delta, start, limit);
  }
  double count = std::ceil((limit - start) / delta);
  if (!(count < 9.2e18)) return FailAt(where, "the range from %g to %g by %g has too many elements", start, limit, delta);
  out[0] = count > 0 ? static_cast<int64_t>(count) : 0;
  return 0;
}

int RangeAtRunTime(int64_t start, int64_t limit, int64_t delta, int64_t* out, const char* where) {
  if (delta == 0) return FailAt(where, "delta 0 makes no range");
  // In 128 bits: limit - start and the rounding cannot overflow.
  __int128 span = static_cast<__int128>(limit) - start, step = delta;
  __int128 count = span / step + (span % step != 0 && (span > 0) == (step > 0));
  if (count > static_cast<__int128>(std::numeric_limits<int64_t>::max())) {
    return FailAt(where, "the range has more than 2^63 elements");
  }
  out[0] = count > 0 ? static_cast<int64_t>(count) : 0;
  return 0;
}

int PadAtRunTime(const int64_t* in, int64_t rank, const int64_t* pads, const int64_t* axes, int64_t count, int mode,
                 int64_t* before, int64_t* out, const char* where) {
  bool padded[kMaxRank];
  if (rank > kMaxRank) return FailAt(where, "more than %lld axes", static_cast<long long>(kMaxRank));
  if (MarkAxes(axes, count, rank, padded, where) != 0) return -1;
  for (int64_t d = 0; d < rank; ++d) {
    before[d] = 0;
    out[d] = in[d];
  }
  for (int64_t k = 0; k < count; ++k) {
    int64_t axis = NormalizeAxis(axes[k], rank), begin = pads[k], end = pads[count + k], extent = 0;
    if (__builtin_add_overflow(in[axis], begin, &extent) || __builtin_add_overflow(extent, end, &extent) || extent < 0) {
      return FailAt(where, "pads %lld and %lld do not fit axis %lld of extent %lld", static_cast<long long>(begin),
                    static_cast<long long>(end), static_cast<long long>(axis), static_cast<long long>(in[axis]));
    }
    // What is left after the negative pads crop, which the positive ones pad from (ONNX Runtime's order).
    int64_t kept = in[axis] + (begin < 0 ? begin : 0) + (end < 0 ? end : 0);
    if (mode != kMapPadConstant && kept <= 0 && extent > 0) {
      return FailAt(where, "axis %lld keeps no element to pad from: only a constant pads it",
                    static_cast<long long>(axis));
    }
    before[axis] = begin;
    out[axis] = extent;
  }
  return 0;
}

int CheckSizedOutput(const int64_t* expected, const int64_t* shape, int64_t rank, int64_t capacity, const char* where) {
  int64_t elements = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (expected != nullptr && expected[d] != shape[d]) {
      return FailAt(where, "the shape it was sized for differs from its inputs' at axis %lld (%lld, not %lld)",
                    static_cast<long long>(d), static_cast<long long>(shape[d]), static_cast<long long>(expected[d]));
    }
    if (shape[d] < 0 || __builtin_mul_overflow(elements, shape[d], &elements)) {
      return FailAt(where, "the shape it was sized for is not a shape");
    }
  }
  if (elements > capacity) {
    return FailAt(where, "its output holds %lld elements, its shape needs %lld (the graph's sized entries do not "
                  "match its nodes)", static_cast<long long>(capacity), static_cast<long long>(elements));
  }
  return 0;
}

int OneHotAtRunTime(const int64_t* in, int64_t rank, int64_t depth, int64_t axis, int64_t* out, const char* where) {
  if (depth < 1) return FailAt(where, "depth %lld must be at least 1", static_cast<long long>(depth));
  for (int64_t d = 0, next = 0; d <= rank; ++d) out[d] = d == axis ? depth : in[next++];
  return 0;
}

int CenterCropPadAtRunTime(const int64_t* in, int64_t rank, const int64_t* lengths, const int64_t* axes, int64_t count,
                           int64_t* out, const char* where) {
  for (int64_t d = 0; d < rank; ++d) out[d] = in[d];
  for (int64_t k = 0; k < count; ++k) {
    if (lengths[k] < 0) return FailAt(where, "length %lld must not be negative", static_cast<long long>(lengths[k]));
    out[axes[k]] = lengths[k];
  }
  return 0;
}

int AffineGridAtRunTime(int64_t batches, const int64_t* size, int64_t count, int64_t* out, const char* where) {
  if (size[0] != batches) {
    return FailAt(where, "the size's N is %lld, theta's %lld", static_cast<long long>(size[0]),
                  static_cast<long long>(batches));
  }
  out[0] = batches;
  for (int64_t d = 2; d < count; ++d) {
    if (size[d] < 0 || size[d] > (int64_t{1} << 24)) {
      return FailAt(where, "extent %lld of the size is out of range", static_cast<long long>(size[d]));
    }
    out[d - 1] = size[d];
  }
  out[count - 1] = count - 2;
  return 0;
}

namespace {

// The index along an axis of extent `n` that position `c` of the result maps to; -1: outside (fill).
int64_t MapIndex(int map, int64_t c, int64_t n, int64_t before) {
  switch (map) {
    case kMapBroadcast:
      return n == 1 ? 0 : c;
    case kMapTile:
      return c % n;
    case kMapPadConstant:
      return c - before >= 0 && c - before < n ? c - before : -1;
    case kMapPadEdge:
      return c - before < 0 ? 0 : c - before >= n ? n - 1 : c - before;
    case kMapPadReflect: {  // mirrored without repeating the edge: a period of 2 (n - 1)
      if (n == 1) return 0;
      int64_t period = 2 * (n - 1), j = (c - before) % period;
      if (j < 0) j += period;
      return j < n ? j : period - j;
    }
    default: {  // kMapPadWrap
      int64_t j = (c - before) % n;
      return j < 0 ? j + n : j;
    }
  }
}

// With padding (`before` given), each axis is cropped by its negative pads first and padded from
// what is left (`kept` elements from `first`): so ONNX Runtime pads, and so a negative `before`
// crops in CenterCropPad.
template <class T>
void CopyMapped(const T* in, const int64_t* in_shape, const int64_t* out, int64_t rank, int map, const int64_t* before,
                const T* fill, T* result) {
  int64_t strides[kMaxRank], at[kMaxRank] = {}, first[kMaxRank], kept[kMaxRank], begin[kMaxRank], elements = 1;
  for (int64_t d = rank - 1, stride = 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= in_shape[d];
    elements *= out[d];
    int64_t b = before == nullptr ? 0 : before[d], e = out[d] - in_shape[d] - b;
    first[d] = b < 0 ? -b : 0;
    begin[d] = b < 0 ? 0 : b;
    kept[d] = before == nullptr ? in_shape[d] : in_shape[d] - first[d] - (e < 0 ? -e : 0);
  }
  for (int64_t i = 0; i < elements; ++i) {
    int64_t source = 0;
    bool inside = true;
    for (int64_t d = 0; d < rank && inside; ++d) {
      int64_t j = MapIndex(map, at[d], kept[d], begin[d]);
      inside = j >= 0;
      source += (first[d] + j) * strides[d];
    }
    result[i] = inside ? in[source] : *fill;
    for (int64_t d = rank - 1; d >= 0 && ++at[d] == out[d]; --d) at[d] = 0;
  }
}

}  // namespace

void CopyMappedAtRunTime(const void* in, const int64_t* in_shape, const int64_t* out, int64_t rank, int map,
                         const int64_t* before, const void* fill, int64_t element_bytes, void* result) {
  switch (element_bytes) {
    case 1:
      return CopyMapped(static_cast<const uint8_t*>(in), in_shape, out, rank, map, before,
                        static_cast<const uint8_t*>(fill), static_cast<uint8_t*>(result));
    case 2:
      return CopyMapped(static_cast<const uint16_t*>(in), in_shape, out, rank, map, before,
                        static_cast<const uint16_t*>(fill), static_cast<uint16_t*>(result));
    case 4:
      return CopyMapped(static_cast<const uint32_t*>(in), in_shape, out, rank, map, before,
                        static_cast<const uint32_t*>(fill), static_cast<uint32_t*>(result));
    default:
      return CopyMapped(static_cast<const uint64_t*>(in), in_shape, out, rank, map, before,
                        static_cast<const uint64_t*>(fill), static_cast<uint64_t*>(result));
  }
}

}  // namespace kiln::kernels
