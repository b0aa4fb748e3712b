// conv2d_add: a convolution with a residual added before its activation,
//   y = act(conv2d(x, kernel) + bias + residual),
// the inference fold of ResNet's Conv -> BatchNormalization -> Add -> ReLU
// (keras/models/conv_bn_fold.h): one pass over the activations where the layers take three. The
// CPU kernel adds the residual inside oneDNN's convolution (a binary post-op) or, with the
// project's direct kernels, in one pass after it (backend/cpu/conv_kernels.cpp), whichever the
// chooser times faster; in bfloat16 (mixed_bfloat16), inside oneDNN's convolution, rounded once
// (backend/cpu/conv_bf16_kernels.cpp). Forward only: it has no gradient and no CUDA kernel, so callers use it
// only on the CPU with no gradient recorded.
#pragma once
#include "backend/ops_conv.h"

namespace keras::ops {

// x (N,H,W,C), kernel (kh,kw,C/groups,O), bias (O) or undefined, residual of the convolution's
// output shape (N,OH,OW,O) and x's dtype; args.activation "linear", "relu" or "relu6".
// ShapeError / TypeError / ValueError naming conv2d_add for anything else.
Tensor conv2d_add(const Tensor& x, const Tensor& kernel, const Tensor& bias, const Tensor& residual,
                  const Conv2DArgs& args);

}  // namespace keras::ops
