// Batch normalization with batch statistics followed by a ReLU (or ReLU6), as one op each way:
//   batch_norm_relu_train(x, gamma, beta, mean, var) -> y = min(hi, max(0, normalized x))
//   batch_norm_relu_train_grad(grad, x, gamma, beta, mean, var) -> (dx, dgamma, dbeta)
// attrs epsilon, activation ("relu": hi = infinity, "relu6": hi = 6). The training step of a
// BatchNormalization whose only reader is a ReLU (every Conv -> BN -> ReLU of a convnet) then
// makes one pass over the activations where it made two, and the backward none for the ReLU: its
// mask is recomputed from x (y lies inside (0, hi)), nothing more is saved. CPU kernels only
// (backend/cpu/norm_kernels.cpp); defined beside batch_norm_train in backend/ops_norm.cpp.
// layers/batch_normalization.cpp takes it for tensors on the CPU.
#pragma once
#include <string>

#include "backend/ops_nn.h"

namespace keras::ops {

// As batch_norm_training followed by ops::activation(activation, y); activation "relu" or
// "relu6" (else ValueError); x on the CPU. gamma/beta may be undefined (ones / zeros).
BatchNormOutputs batch_norm_relu_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon,
                                          const std::string& activation);

// A residual block's BatchNormalization -> Add -> ReLU in training: relu(batch_norm_training(x).y
// + residual) bit for bit (y and the sum rounded to x's dtype, as the separate ops round them), in
// one pass over the activations after the moments, y never stored; op batch_norm_add_relu_train
// (x, residual, gamma, beta, mean, var), whose gradient masks the incoming one by the output
// (summing a second contribution in that pass: OpDef::grad_sums_two) and hands it to
// batch_norm_train_grad and, as it is, to the residual. residual: x's shape and dtype (else
// ShapeError); x on the CPU.
// moving = moving * momentum + value * (1 - momentum) in place (moving's version bumped), bit for
// bit as ops::add(ops::multiply(moving, momentum), ops::multiply(value, 1 - momentum)); one
// floating dtype and shape (else TypeError), float32 or float64 (in-place ops take no two-byte
// tensors), on the CPU. BatchNormalization's moving statistics.
void moving_average_update(const Tensor& moving, const Tensor& value, double momentum);

BatchNormOutputs batch_norm_add_relu_training(const Tensor& x, const Tensor& residual, const Tensor& gamma,
                                              const Tensor& beta, double epsilon);

}  // namespace keras::ops
