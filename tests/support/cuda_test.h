// Shared by the GPU tests (tests/backend/test_cuda*.cpp): the skip every GPU test starts with
// (without a CUDA device or a CUDA build the test reports why it skipped and passes) and the
// GPU-against-CPU error measure.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cuda.h"
#include "backend/tensor.h"

#define REQUIRE_CUDA()                                                                                 \
  do {                                                                                                 \
    if (::keras::cuda::device_count() == 0)                                                            \
      GTEST_SKIP() << "no CUDA device: " << ::keras::cuda::unavailable_reason();                       \
  } while (0)

namespace keras::test_support {

// max |got - want| / max(1, max |want|): relative to the result's scale, absolute near zero; NaN
// must sit where the CPU has NaN (1e300 otherwise, and on a shape mismatch).
inline double rel_err(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.dtype(), want.dtype());
  if (got.shape() != want.shape()) return 1e300;
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double diff = 0, scale = 1;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) != std::isnan(g[i])) return 1e300;
    if (std::isnan(w[i])) continue;
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return diff / scale;
}

}  // namespace keras::test_support
