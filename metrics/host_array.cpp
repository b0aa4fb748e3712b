#include "metrics/host_array.h"

#include <cmath>
#include <limits>

namespace keras::metrics {

HostArray to_host(const Tensor& t) { return HostArray{t.shape(), t.to_vector<double>()}; }

double cast_like(double v, DType dtype) {
  switch (dtype) {
    case DType::float32: return static_cast<double>(static_cast<float>(v));
    case DType::float64: return v;
    case DType::int32:
    case DType::int64: return std::isfinite(v) ? std::trunc(v) : v;
    case DType::boolean: return v != 0 ? 1.0 : 0.0;
  }
  return v;
}

void squeeze_or_expand(HostArray& a, HostArray& b) {
  const int ra = a.rank(), rb = b.rank();
  if (ra == rb + 1 && a.shape.back() == 1) {
    if (rb == 1) b.shape.push_back(1);
    else a.shape.pop_back();
  } else if (rb == ra + 1 && b.shape.back() == 1) {
    if (ra == 1) a.shape.push_back(1);
    else b.shape.pop_back();
  }
}

HostArray mean_trailing(const HostArray& a, int axis) {
  if (axis >= a.rank()) return a;
  Shape outer_shape(a.shape.begin(), a.shape.begin() + axis);
  const int64_t outer = shape_numel(outer_shape);
  int64_t inner = 1;
  for (int i = axis; i < a.rank(); ++i) inner *= a.shape[static_cast<size_t>(i)];
  HostArray out{outer_shape, std::vector<double>(static_cast<size_t>(outer))};
  for (int64_t i = 0; i < outer; ++i) {
    double s = 0;
    for (int64_t j = 0; j < inner; ++j) s += a.data[static_cast<size_t>(i * inner + j)];
    out.data[static_cast<size_t>(i)] = inner > 0 ? s / static_cast<double>(inner) : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

bool broadcast_to(const HostArray& a, const Shape& shape, HostArray& out) {
  if (a.shape.size() != shape.size()) return false;
  const size_t r = shape.size();
  Shape src_strides(r, 0);
  int64_t stride = 1;
  for (size_t i = r; i-- > 0;) {
    if (a.shape[i] != shape[i] && a.shape[i] != 1) return false;
    src_strides[i] = a.shape[i] == 1 ? 0 : stride;
    stride *= a.shape[i];
  }
  const int64_t n = shape_numel(shape);
  out.shape = shape;
  out.data.assign(static_cast<size_t>(n), 0.0);
  std::vector<int64_t> idx(r, 0);
  int64_t src = 0;
  for (int64_t k = 0; k < n; ++k) {
    out.data[static_cast<size_t>(k)] = a.data[static_cast<size_t>(src)];
    for (size_t d = r; d-- > 0;) {
      src += src_strides[d];
      if (++idx[d] < shape[d]) break;
      src -= src_strides[d] * shape[d];
      idx[d] = 0;
    }
  }
  return true;
}

int64_t first_argmax(const double* data, int64_t n) {
  int64_t best = 0;
  for (int64_t j = 1; j < n; ++j)
    if (data[j] > data[best]) best = j;
  return best;
}

Tensor make_values(const std::vector<double>& values, const Shape& shape) {
  std::vector<float> v(values.begin(), values.end());
  return Tensor::from_vector(v, shape, Device::cpu());
}

}  // namespace keras::metrics
