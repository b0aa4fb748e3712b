// CPU batch-normalization kernels (ops batch_norm_train and batch_norm_train_grad), exposed so
// that tests can compare the oneDNN path against the plain loops.
//
// x is viewed as (M, C): every axis but the last is reduced. Tensors are contiguous and of one
// floating dtype; outputs are pre-allocated. Statistics use the biased variance (divide by M).
#pragma once
#include "backend/tensor.h"

namespace keras::cpu {

// y = (x - mean) / sqrt(var + eps) * gamma + beta with this batch's mean and var, which are
// written to `mean` and `var` (C,).
void batch_norm_forward_reference(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon, Tensor& y,
                                  Tensor& mean, Tensor& var);
// Gradients of the batch-statistics forward for an incoming `grad` (shape of x).
void batch_norm_backward_reference(const Tensor& grad, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                   const Tensor& var, double epsilon, Tensor& dx, Tensor& dgamma, Tensor& dbeta);
// Per-channel mean and biased variance of x (M, C), double accumulators, two passes; the
// backward recomputes them so that the forward op need not keep its output alive.
void batch_moments(const Tensor& x, Tensor& mean, Tensor& var);
// Dispatchers: oneDNN batch_normalization (forward_training / backward with scale and shift,
// cached) for float32, the references otherwise.
void batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon, Tensor& y,
                        Tensor& mean, Tensor& var);
void batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& var, double epsilon, Tensor& dx, Tensor& dgamma, Tensor& dbeta);

}  // namespace keras::cpu
