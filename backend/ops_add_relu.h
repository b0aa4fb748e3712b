// The residual Add followed by a ReLU, as one op: add_relu(a, b) -> y = relu(a + b), for a and b
// of one shape and floating dtype (no broadcasting). Its gradient is relu_grad(grad, y) for both
// inputs; when two contributions reach it (a block's output feeds the next block's convolution
// and shortcut), add_relu_grad(grad, addend, y) = relu_grad(grad + addend, y) sums them in the
// same pass (OpDef::grad_sums_two). A residual block's forward and backward then each make one
// pass over the activations where they made two. CPU kernels only
// (backend/cpu/add_relu_kernels.cpp); keras/models/functional.cpp takes it (through the Add
// layer) for tensors on the CPU.
#pragma once
#include "backend/op_registry.h"
#include "backend/tensor.h"

namespace keras::ops {

// relu(add(a, b)) bit for bit (the sum rounded to the dtype first; NaN passes, as in relu).
// Throws ShapeError unless a and b have one shape, TypeError unless one floating dtype.
Tensor add_relu(const Tensor& a, const Tensor& b);

// relu(a + b) for a and b of one shape and floating dtype: add_relu on the CPU (unless
// instrumentation splits fused activations), else add then relu. What the Add layer with its
// fused ReLU and a BatchNormalization given a residual compute.
Tensor add_then_relu(const Tensor& a, const Tensor& b);

// Whether a sum of tensors like `t` and its masking run in one pass with add's rounding: on the
// CPU for float32, float64, and bfloat16 where its kernels run (elsewhere the one pass would round
// in float32, and a sum past the dtype's range would not become inf as add's does).
bool add_relu_fuses(const Tensor& t);

// The gradient reaching a sum through relu(sum) = y: relu_grad(g, y), or with a second
// contribution (c.grad_output_addend) relu_grad(g + addend, y), in one pass where that rounds as
// add does. The backward of add_relu and of batch_norm_add_relu_train (ops_batch_norm_relu.h).
Tensor add_relu_backward(const GradContext& c, const Tensor& y);

}  // namespace keras::ops
