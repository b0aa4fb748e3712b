// How far a result is from its reference, relative to the reference's scale: for kernels whose
// float32 rounding errors grow with the largest magnitude involved (convolutions, matmuls).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/ops.h"

namespace keras::testing {

// max |a - ref| / max |ref|, in float64; the shapes must agree (a gtest failure otherwise).
inline double relative_error(const Tensor& a, const Tensor& ref) {
  EXPECT_EQ(shape_str(a.shape()), shape_str(ref.shape()));
  Tensor r = ref.astype(DType::float64);
  double diff = element_as_double(ops::max(ops::abs(ops::subtract(a.astype(DType::float64), r))), 0);
  return diff / element_as_double(ops::max(ops::abs(r)), 0);
}

// max |a - b| over all elements, in float64, wherever a and b live (copied to the host); the
// element counts must agree (a gtest failure otherwise). NaN where one of a pair is NaN and the
// other is not (so that an unwritten NaN-filled output fails every comparison); two NaNs match.
inline double max_abs_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  EXPECT_EQ(x.size(), y.size());
  double d = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (std::isnan(x[i]) != std::isnan(y[i])) return std::nan("");
      continue;
    }
    d = std::max(d, std::abs(x[i] - y[i]));
  }
  return d;
}

}  // namespace keras::testing
