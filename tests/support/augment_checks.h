// Helpers of the image preprocessing tests: the Keras reference input and a tolerant comparison
// with the Keras outputs of tests/support/augment_reference.h.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/tensor.h"
#include "support/augment_reference.h"

namespace keras::testing {

// The (2, 5, 6, 2) input every reference layer output was computed from.
inline Tensor augment_input() { return Tensor::from_vector(augment_reference::kX, {2, 5, 6, 2}); }

// Element-wise |got - want| <= tol * max(1, |want|), reported with `what` and the index.
inline void expect_close_to(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                            float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0f, std::abs(want[i]))) << what << " element " << i;
}
inline void expect_close_to(const Tensor& got, const std::vector<float>& want, const std::string& what, float tol = 1e-5f) {
  expect_close_to(got.to_vector<float>(), want, what, tol);
}

}  // namespace keras::testing
