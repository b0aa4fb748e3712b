// Summary statistics of a tensor for the debugging tools (check-numerics messages, the
// tensor-dump listing): NaN and infinity counts, min/max, mean/std, and the vectorised test
// "is every value finite" that check-numerics runs on every op output.
#pragma once
#include <cstdint>
#include <string>

#include "backend/tensor.h"

namespace keras::debugging {

struct TensorStats {
  int64_t size = 0;
  int64_t nan = 0, pos_inf = 0, neg_inf = 0;
  // Over the values that are not NaN (infinities included); NaN when there are none.
  double min = 0, max = 0;
  // Over the finite values; NaN when there are none.
  double mean = 0, std = 0;
  int64_t first_non_finite = -1;  // flat (C-order) index of the first NaN or infinity; -1: none
  int64_t inf() const { return pos_inf + neg_inf; }
};

// Any dtype and layout (bool counts as 0/1, integers never hold NaN); a CUDA tensor is copied to
// the host first. Threaded over the elements; float sums run in double.
TensorStats tensor_stats(const Tensor& t);

// True when no element is NaN or infinite (always for integer and bool tensors). One read of the
// data, vectorised (an integer max over the exponent bits) and split over the OpenMP threads for
// large tensors; a CUDA tensor is copied to the host first.
bool all_finite(const Tensor& t);

// "min=-1.5 max=2 NaN=0 Inf=0", the figures check-numerics prints for an input.
std::string min_max_counts_str(const TensorStats& s);
// A value as %.6g prints it ("nan", "inf", "-inf" for the non-finite ones).
std::string format_number(double v);
// The C-order multi-index of flat position `flat` in `shape`: "(1, 2)".
std::string index_str(const Shape& shape, int64_t flat);

}  // namespace keras::debugging
