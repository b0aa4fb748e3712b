#include "layers/mask_ops.h"

#include "backend/autodiff.h"
#include "backend/ops.h"

namespace keras::masks {

Tensor as_float(const Tensor& mask, DType dtype) { return ops::cast(mask, dtype); }

Tensor any(const Tensor& mask, int axis, bool keepdims) {
  NoGradGuard no_grad;
  return ops::cast(ops::max(as_float(mask), {axis}, keepdims), DType::boolean);
}

Tensor any_not_equal(const Tensor& x, double value, bool keepdims) {
  NoGradGuard no_grad;
  return any(ops::not_equal(x, Tensor::scalar(value, x.dtype(), x.device())), -1, keepdims);
}

Tensor not_zero(const Tensor& x) {
  NoGradGuard no_grad;
  return ops::not_equal(x, Tensor::scalar(0, x.dtype(), x.device()));
}

Tensor logical_or(const Tensor& a, const Tensor& b) {
  NoGradGuard no_grad;
  return ops::cast(ops::maximum(as_float(a), as_float(b)), DType::boolean);
}

}  // namespace keras::masks
