// A direct AVX2/FMA kernel for the input gradient of a stride-1 float32 NHWC convolution.
//
// Why: oneDNN 2.6's AVX2 backward-data kernels for NHWC run well below its forward kernels on
// small channel counts (the `cnn` workload's 32->64 3x3 layer: 27 ms against 21 ms forward, a
// quarter of a training step). With stride 1 the input gradient is itself a convolution of dy
// with the spatially flipped kernel, its in/out axes swapped, and padding (k - 1) * dilation - pad;
// this kernel computes it with 6-pixel x 16-channel register tiles straight from NHWC memory.
#pragma once
#include "backend/ops_conv.h"
#include "backend/tensor.h"

namespace keras::cpu {

// True when conv2d_backward_data_direct handles the problem: the CPU has AVX2 and FMA, strides
// are 1, groups 1, and the input's channels (the kernel's third extent) are a multiple of 8.
// KERAS_CONV_DIRECT_DX=0 in the environment, or set_conv_backward_data_direct(false), turns it off.
bool conv2d_backward_data_direct_supported(const Shape& kernel_shape, const ConvParams& params);
void set_conv_backward_data_direct(bool enabled);

// dx[n, iy, ix, c] = sum over (kh, kw, o) with oy = iy + pad_top - kh * dilation_h (likewise ox)
// inside dy of dy[n, oy, ox, o] * kernel[kh, kw, c, o]. dy (N, OH, OW, O), kernel (KH, KW, C, O)
// and dx (N, H, W, C) are contiguous float32 buffers; dx is overwritten.
// Precondition: conv2d_backward_data_direct_supported(kernel_shape, params).
void conv2d_backward_data_direct(const float* dy, const Shape& dy_shape, const float* kernel,
                                 const Shape& kernel_shape, float* dx, const Shape& dx_shape, const ConvParams& params);

}  // namespace keras::cpu
