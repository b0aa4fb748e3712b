// Winograd F(2x2, 3x3) convolutions on float32 NHWC memory (transforms in AVX2, GEMMs in AVX2 or
// AVX-512, small_gemm.h): the forward pass, the input
// gradient and the weight gradient (conv_choice.h's `winograd` candidate).
//
// Why: oneDNN 2.6 has Winograd kernels for AVX-512 CPUs only, so on AVX2 CPUs every 3x3
// stride-1 convolution ran 9 multiply-adds per output and channel pair. F(2x2, 3x3) computes a
// 2x2 output tile from a 4x4 input tile with 16 products per channel pair instead of 36: the
// input tiles and the kernel are transformed (V = B^T d B, U = G g G^T), the 16 positions are
// 16 independent GEMMs over the channels, and the products are transformed back (Y = A^T M A);
// the weight gradient transforms the output gradient's tiles and sums 16 GEMMs over the tiles.
// Tiles go in blocks whose transformed inputs and products stay in L2; the GEMMs run
// small_gemm.h's register tiles. The transforms round differently from a direct sum: results
// stay within the chooser's kWinogradTolerance of the exact kernels (tests state the bound).
#pragma once
#include <string>

#include "backend/ops_conv.h"
#include "backend/tensor.h"

namespace keras::cpu {

// True when conv2d_winograd runs the problem: AVX2 with FMA (cpu_isa.h's cap applies), a 3x3
// kernel, strides and dilations 1, one group, input and output channels multiples of 8 up to
// kDirectMaxChannels (64), each padding between 0 and 2, activation "linear" or "relu" (which
// keeps NaN, as the direct kernels' does). KERAS_CONV_DIRECT=0 (conv_direct.h's
// switch) turns it off with the direct kernels.
bool conv2d_winograd_supported(const Shape& kernel_shape, const ConvParams& params, const std::string& activation);
// The same for the input gradient (activation linear).
bool conv2d_backward_data_winograd_supported(const Shape& kernel_shape, const ConvParams& params);

// y = activation(conv(x, kernel) + bias): x (N, H, W, C), kernel (3, 3, C, O), bias (O) or null,
// y (N, OH, OW, O), contiguous float32; y is overwritten. Each output is summed by one thread in
// an order fixed by the shapes: the bits do not depend on the thread count.
// Precondition: conv2d_winograd_supported(kernel_shape, params, activation).
void conv2d_winograd(const float* x, const Shape& x_shape, const float* kernel, const Shape& kernel_shape,
                     const float* bias, float* y, const Shape& y_shape, const ConvParams& params,
                     const std::string& activation);

// dx = the input gradient of that convolution for dy (N, OH, OW, O): the forward convolution of
// dy with the kernel turned by 180 degrees, input and output channels swapped, and each padding
// p replaced by 2 - p. dx (N, H, W, C) is overwritten.
// Precondition: conv2d_backward_data_winograd_supported(kernel_shape, params).
void conv2d_backward_data_winograd(const float* dy, const Shape& dy_shape, const float* kernel,
                                   const Shape& kernel_shape, float* dx, const Shape& dx_shape, const ConvParams& params);

// The same for the weight gradient.
bool conv2d_backward_weights_winograd_supported(const Shape& kernel_shape, const ConvParams& params);

// dk (3, 3, C, O) and, when db is not null, db (O) of that convolution, given x (N, H, W, C) and
// dy (N, OH, OW, O): as conv2d_backward_weights_direct (conv_backward_weights_direct.h) computes
// them, up to the transforms' rounding; both overwritten. The sums over the tiles are split by
// the shapes alone: the bits do not depend on the thread count.
// Precondition: conv2d_backward_weights_winograd_supported(kernel_shape, params).
void conv2d_backward_weights_winograd(const float* x, const Shape& x_shape, const float* dy, const Shape& dy_shape,
                                      float* dk, const Shape& kernel_shape, float* db, const ConvParams& params);

}  // namespace keras::cpu
