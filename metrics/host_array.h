// Host-side arrays of doubles that the metrics compute on: a metric's work per batch is tiny
// next to the model's, and doing it in double on the host gives exact, deterministic counts
// (argmax ties resolve to the first maximum, as NumPy and TensorFlow do).
#pragma once
#include <cstdint>
#include <vector>

#include "backend/tensor.h"

namespace keras::metrics {

struct HostArray {
  Shape shape;
  std::vector<double> data;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

// Copies any tensor (any device, any dtype, strided or not) into a HostArray.
HostArray to_host(const Tensor& t);

// Rounds `v` as a value of `dtype` would hold it (float32 rounding, integer truncation), as
// Keras's convert_to_tensor(y_true, dtype=y_pred.dtype) does.
double cast_like(double v, DType dtype);

// Keras's squeeze_or_expand_to_same_rank on host arrays (see losses/loss.h).
void squeeze_or_expand(HostArray& a, HostArray& b);

// Mean over all axes from `axis` on: (d0..dk, rest...) -> (d0..dk). Empty trailing extents give NaN.
HostArray mean_trailing(const HostArray& a, int axis);

// `a` broadcast to `shape` (same rank; each extent equal or 1). Returns false if impossible.
bool broadcast_to(const HostArray& a, const Shape& shape, HostArray& out);

// Index of the first maximum in data[begin, begin + n).
int64_t first_argmax(const double* data, int64_t n);

// A float32 CPU tensor of `values` with `shape`.
Tensor make_values(const std::vector<double>& values, const Shape& shape);

}  // namespace keras::metrics
