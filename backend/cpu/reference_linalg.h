// Plain-loop references for the linear-algebra and reduction kernels, plus the small helpers the
// reduction ops and kernels share.
//
// The references are deliberately naive (an index computation per element, accumulation in
// double, any dtype in, the input dtype out) so that tests can hold the fast oneDNN and
// vectorised kernels against something obviously right. They run on CPU tensors only.
#pragma once
#include <string>
#include <vector>

#include "backend/tensor.h"

namespace keras::cpu {

// op(a) @ op(b) over the last two axes, batch axes broadcast as numpy.matmul; op = transpose
// when the flag is set. Preconditions (unchecked): rank >= 2, inner extents match, same dtype.
Tensor reference_matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b);

// x (..., in) @ kernel (in, units) + bias (units, may be undefined), then `activation`, one of
// linear, relu, sigmoid, tanh, elu, gelu (erf form), swish.
Tensor reference_dense(const Tensor& x, const Tensor& kernel, const Tensor& bias, const std::string& activation);

enum class ReduceKind { sum, mean, max, min };

// Reduction over `axes` (empty = all; negative allowed) with numpy semantics for keepdims.
Tensor reference_reduce(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, ReduceKind kind);

// Index (int64) of the first maximum (is_max) or minimum along `axis`; the axis is removed.
Tensor reference_arg_reduce(const Tensor& x, int axis, bool is_max);

// Which axes of a rank-`rank` tensor `axes` reduces (empty = all). Negative axes count from the
// end; throws IndexError (out of range) or ValueError (repeated axis) naming `where`.
inline std::vector<bool> reduced_axes_mask(int64_t rank, const std::vector<int64_t>& axes, const std::string& where) {
  std::vector<bool> mask(static_cast<size_t>(rank), axes.empty());
  std::vector<bool> seen(static_cast<size_t>(rank == 0 ? 1 : rank), false);
  for (int64_t a : axes) {
    int n = normalize_axis(a, rank, where);
    if (seen[static_cast<size_t>(n)])
      fail<ValueError>(where, "distinct axes", "axis " + std::to_string(a) + " repeated",
                       "List each axis once.");
    seen[static_cast<size_t>(n)] = true;
    if (n < rank) mask[static_cast<size_t>(n)] = true;
  }
  return mask;
}

// Output shape of a reduction given its mask.
inline Shape reduced_shape(const Shape& shape, const std::vector<bool>& mask, bool keepdims) {
  Shape out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!mask[i]) out.push_back(shape[i]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

}  // namespace keras::cpu
