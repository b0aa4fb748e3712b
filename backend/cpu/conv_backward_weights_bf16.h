// The weight gradient of a bfloat16 convolution with a 3-wide kernel and stride 1 or 2, from AVX512-BF16
// dot products: the `direct` candidate of the bfloat16 conv2d_backward_weights
// (conv_bf16_kernels.cpp), which the chooser (conv_choice.h) times against oneDNN's.
//
// Why: on a Zen 4, oneDNN 2.6's bfloat16 weight gradient (jit_bf16, NHWC) took 0.83-0.95 ms a call
// on ResNet-20's 3x3 layers, against 0.60-0.75 ms for their forward pass, and 16-31% longer again
// while the host had the two vCPUs on different core complexes: a third of a mixed_bfloat16
// training step. Here each thread sums whole images (where the thread count divides 8, the images
// its own share of the batch-split element-wise passes wrote): flushed trials 0.70-0.85 ms against oneDNN's 0.78-0.97 on those
// layers, and ResNet-20 mixed_bfloat16 training 1,300-1,349 samples/s against 1,270-1,300 with
// oneDNN's alone (1,200-1,207 against 1,027-1,159 on two complexes); the cnn workload's 32 -> 64
// layer at 26x26, batch 128, with its bias: 7.17 ms against 7.53.
//
// How: VDPBF16PS adds the products of two bfloat16 pairs to a float32 lane, so the sum over output
// pixels goes two adjacent pixels at a time: per image, dy is packed as [row][pixel pair][output]
// pairs and x as pairs of the columns those pixels read, [row][pair][input channel] (at stride 1
// two packings, pairs starting at even and at odd columns, since the three taps of a kernel row are
// one column apart; at stride 2 pairs of columns two apart, a packing per tap). Columns outside the
// image are packed as zeros, so padding enters the sums as zero products (a dy of infinity beside
// the padding gives NaN where the exact sum may be infinite: either way the step is not finite).
// Images are summed in at most 8 chunks fixed by the batch size, each in a fixed order, and the
// chunks added in a fixed pairwise tree: the bits do not depend on the thread count. The float32
// sums are rounded to bfloat16 once.
#pragma once
#include <cstdint>

#include "backend/ops_conv.h"
#include "backend/tensor.h"

namespace keras::cpu {

// True when conv2d_backward_weights_bf16 computes the problem: the CPU has AVX512-BF16 (as
// cpu_isa.h allows), the switch of the project's direct kernels is on (conv_direct.h), strides 1
// or 2, dilation 1, one group, a kernel 3 wide, left padding 0 to 2, an even output width, 16, 32, 48
// or 64 outputs, at least one image and one output row, and shapes that agree on the channels.
bool conv2d_backward_weights_bf16_supported(const Shape& x_shape, const Shape& kernel_shape, const Shape& dy_shape,
                                            const ConvParams& params);

// dk (kh, 3, ci, co) = sum over images and output pixels of x (n, ih, iw, ci) times dy
// (n, oh, ow, co), and db (co; skipped when null) = sum of dy, all bfloat16 bits, NHWC,
// contiguous; float32 sums (chunked as above) rounded to nearest even.
// Precondition: conv2d_backward_weights_bf16_supported(...).
void conv2d_backward_weights_bf16(const uint16_t* x, const Shape& x_shape, const uint16_t* dy, const Shape& dy_shape,
                                  uint16_t* dk, const Shape& kernel_shape, uint16_t* db, const ConvParams& params);

}  // namespace keras::cpu
