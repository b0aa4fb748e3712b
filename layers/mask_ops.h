// Boolean Keras masks (Tensor::keras_mask) as layers build and combine them: what keras.ops
// any / logical_or / not_equal do on masks, written with the ops the backend has (reductions
// refuse bool, so masks go through float32 {0, 1} and back). Masks never need gradients.
#pragma once
#include "backend/tensor.h"

namespace keras::masks {

// any(x != value) over the last axis of x (rank >= 1): a bool tensor of x's shape without its
// last axis (keepdims: with it as 1). Keras Masking's mask.
Tensor any_not_equal(const Tensor& x, double value, bool keepdims = false);
// x != 0 elementwise, as bool (Embedding's mask_zero); x numeric of any dtype.
Tensor not_zero(const Tensor& x);
// a OR b (bool, broadcast as NumPy does).
Tensor logical_or(const Tensor& a, const Tensor& b);
// any over `axis` of a bool tensor.
Tensor any(const Tensor& mask, int axis, bool keepdims = false);
// The bool mask as float32 {0, 1} (or `dtype`), e.g. to weight the steps of a sum.
Tensor as_float(const Tensor& mask, DType dtype = DType::float32);

}  // namespace keras::masks
