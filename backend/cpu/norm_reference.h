// CPU batch-normalization kernels (ops batch_moments, batch_norm_train, batch_norm_train_grad,
// batch_norm_inference), exposed so that tests can compare the float32 paths against the plain loops.
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
// Per-channel mean and biased variance of x (M, C): one pass for float32 (float sums over blocks
// of rows shifted by the first row, double across blocks), two passes in double for float64.
void batch_moments(const Tensor& x, Tensor& mean, Tensor& var);
// y = (x - mean) / sqrt(var + eps) * gamma + beta per channel, one pass (batch_norm_train with
// the batch's moments, batch_norm_inference with moving ones).
void batch_norm_apply(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma, const Tensor& beta,
                      double epsilon, Tensor& y);
// Dispatchers. Forward: batch_moments then batch_norm_apply (the training ops run these two as
// separate ops). Backward: two vectorised passes for float32, the reference otherwise.
void batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon, Tensor& y,
                        Tensor& mean, Tensor& var);
void batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& var, double epsilon, Tensor& dx, Tensor& dgamma, Tensor& dbeta);

// A residual block's BatchNormalization -> Add -> ReLU (op batch_norm_add_relu_train):
// z = relu(normalized x + residual), rounding as the separate ops do; residual of x's shape and dtype.
void batch_norm_apply_add_relu(const Tensor& x, const Tensor& residual, const Tensor& mean, const Tensor& var,
                               const Tensor& gamma, const Tensor& beta, double epsilon, Tensor& z);
// The same with a ReLU after the normalization (ops batch_norm_relu_train and its gradient):
// y = min(hi, max(0, normalized)) (hi: 6 for relu6, infinity for relu); the backward passes the
// gradient only where 0 < y < hi, y recomputed from x, beta and the statistics.
void batch_norm_apply_relu(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma,
                           const Tensor& beta, double epsilon, double hi, Tensor& y);
void batch_norm_relu_backward(const Tensor& grad, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                              const Tensor& mean, const Tensor& var, double epsilon, double hi, Tensor& dx,
                              Tensor& dgamma, Tensor& dbeta);

}  // namespace keras::cpu
