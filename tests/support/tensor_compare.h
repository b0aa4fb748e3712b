// How far a result is from its reference, relative to the reference's scale: for kernels whose
// float32 rounding errors grow with the largest magnitude involved (convolutions, matmuls).
#pragma once
#include <gtest/gtest.h>

#include "backend/ops.h"

namespace keras::testing {

// max |a - ref| / max |ref|, in float64; the shapes must agree (a gtest failure otherwise).
inline double relative_error(const Tensor& a, const Tensor& ref) {
  EXPECT_EQ(shape_str(a.shape()), shape_str(ref.shape()));
  Tensor r = ref.astype(DType::float64);
  double diff = element_as_double(ops::max(ops::abs(ops::subtract(a.astype(DType::float64), r))), 0);
  return diff / element_as_double(ops::max(ops::abs(r)), 0);
}

}  // namespace keras::testing
