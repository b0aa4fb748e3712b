// The fused op behind SparseCategoricalCrossentropy(from_logits=true): one pass computes the
// per-sample loss -log_softmax(logits)[label] and keeps the softmax for the backward pass,
// whose gradient is (softmax - one_hot(label)) * g. Registered ops:
//   "sparse_softmax_cross_entropy": (logits (N, C) float32/float64, labels (N,) int32/int64)
//       -> (loss (N,), softmax (N, C)); differentiable in logits (the softmax output is an
//       internal by-product; gradients flowing into it are ignored).
//   "sparse_softmax_cross_entropy_grad": (softmax (N, C), labels (N,), g (N,)) -> (N, C).
// Device backends register kernels for both under these names.
#pragma once
#include "backend/op_registry.h"

namespace keras::ops {

// Per-sample softmax cross-entropy of `logits` (N, C) against integer `labels` (N,).
// ShapeError naming the op for other ranks/extents, TypeError for non-integer labels or
// non-floating logits, IndexError naming the label, its position and C for labels outside
// [0, C). Stable for any finite logits (max-shifted log-sum-exp).
Tensor sparse_softmax_cross_entropy(const Tensor& logits, const Tensor& labels);

// Its gradient w.r.t. the logits given the saved softmax and the upstream gradient `g` (N,).
Tensor sparse_softmax_cross_entropy_grad(const Tensor& softmax, const Tensor& labels, const Tensor& g);

}  // namespace keras::ops
