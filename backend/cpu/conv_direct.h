// Direct AVX2/FMA convolutions on float32 NHWC memory: the forward pass and the input gradient.
//
// Why: for the small channel counts of typical image models, oneDNN 2.6's AVX2 kernels for NHWC
// leave much of the FMA rate unused (the `cnn` workload's 32->64 3x3 layer: forward 21 ms,
// backward-data 27 ms). The Keras kernel layout (kh, kw, in, out) already has the outputs
// contiguous, so a tile of up to 6 neighbouring output pixels x 16 output channels runs from
// plain NHWC memory with no weight reorder: per input channel of each tap, two vector loads of the
// kernel, a broadcast per pixel and 12 FMAs. With stride 1 the input gradient is itself such a
// convolution, of dy with the spatially flipped kernel with in/out swapped and padding
// (k - 1) * dilation - pad. On CPUs with AVX-512 both run conv_direct_avx512.h's 16-lane tiles
// where its predicate holds (stride 1, 16/32/64 channels in, whole vectors out), these elsewhere.
#pragma once
#include <string>

#include "backend/ops_conv.h"
#include "backend/tensor.h"

namespace keras::cpu {

// The largest channel count (in or out, per group) the direct kernels take: beyond it oneDNN's
// blocked AVX-512 kernels reuse more per load and win.
inline constexpr int64_t kDirectMaxChannels = 64;

// True when conv2d_direct is a candidate for the problem (conv_choice.h times it against oneDNN
// and keeps the faster): the CPU has AVX2 and FMA, strides 1 (or 2, where the AVX-512 kernel of
// conv_direct_avx512.h runs the problem), groups 1, 8 to 64 input channels
// (fewer leave the inner loop too short; with more it lost to oneDNN everywhere measured, so it
// is not worth timing), the outputs a multiple of 8, and the activation "linear" or "relu".
// KERAS_CONV_DIRECT=0 in the environment, or set_conv_direct(false), turns all direct kernels off.
bool conv2d_direct_supported(const Shape& kernel_shape, const ConvParams& params, const std::string& activation);
// True when conv2d_backward_data_direct is a candidate for the problem: AVX2 and FMA, strides 1, groups 1,
// the input's channels (the kernel's third extent) a multiple of 8, and both channel counts at
// most kDirectMaxChannels.
bool conv2d_backward_data_direct_supported(const Shape& kernel_shape, const ConvParams& params);
// The switch of every direct convolution kernel (this file's and conv_backward_weights_direct.h's).
void set_conv_direct(bool enabled);
// True when the CPU has AVX2 and FMA and the switch is on: the condition all direct kernels share.
bool conv_direct_available();

// y = activation(conv(x, kernel) + bias): x (N, H, W, C), kernel (KH, KW, C, O), bias (O) or
// null, y (N, OH, OW, O), contiguous float32; y is overwritten. The AVX2 kernel also computes
// strided convolutions correctly; conv2d_direct_supported leaves them to oneDNN (as fast) unless
// the AVX-512 kernel takes them.
// Precondition: conv2d_direct_supported(kernel_shape, params, activation).
void conv2d_direct(const float* x, const Shape& x_shape, const float* kernel, const Shape& kernel_shape,
                   const float* bias, float* y, const Shape& y_shape, const ConvParams& params,
                   const std::string& activation);

// dx[n, iy, ix, c] = sum over (kh, kw, o) with oy = iy + pad_top - kh * dilation_h (likewise ox)
// inside dy of dy[n, oy, ox, o] * kernel[kh, kw, c, o]. dy (N, OH, OW, O), kernel (KH, KW, C, O)
// and dx (N, H, W, C) are contiguous float32 buffers; dx is overwritten.
// Precondition: conv2d_backward_data_direct_supported(kernel_shape, params).
void conv2d_backward_data_direct(const float* dy, const Shape& dy_shape, const float* kernel,
                                 const Shape& kernel_shape, float* dx, const Shape& dx_shape, const ConvParams& params);

}  // namespace keras::cpu
