// CPU kernels of exp, log and sqrt, exposed so that tests can compare the oneDNN eltwise path
// against the plain loops (the float64 path and the reference).
//
// Both take contiguous tensors of one floating dtype and equal shapes, write `out` (pre-allocated)
// and throw TypeError for other dtypes.
#pragma once
#include "backend/tensor.h"

namespace keras::cpu {

enum class UnaryMath { exp, log, sqrt };

// Plain loop over std::exp / std::log / std::sqrt.
void unary_math_reference(UnaryMath op, const Tensor& x, Tensor& out);
// oneDNN eltwise for float32 tensors of at least `kUnaryMathDnnlMin` elements (its vectorised
// exp/log beat the scalar libm calls by an order of magnitude), the reference otherwise.
void unary_math(UnaryMath op, const Tensor& x, Tensor& out);
inline constexpr int64_t kUnaryMathDnnlMin = 4096;

}  // namespace keras::cpu
