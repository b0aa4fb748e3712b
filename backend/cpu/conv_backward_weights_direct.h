// A direct AVX2/FMA kernel for the weight (and bias) gradient of a float32 NHWC convolution.
//
// Why: oneDNN 2.6's AVX2 backward-weights kernels run at about half the FMA rate of its forward
// kernels on the small channel counts of typical image models (the `cnn` workload's 32->64 3x3
// layer: 68 against 129 GFLOP/s), and that one primitive was 40% of a training step. With NHWC
// activations and the Keras (kh, kw, in/groups, out) kernel layout, dk is a sum over output
// pixels of outer products x[pixel's input at tap (kh, kw), c] * dy[pixel, o] whose two factors
// are both contiguous in memory, so a 6 x 16 register tile needs neither im2col nor packing.
// On CPUs with AVX-512, 3-wide stride-1 kernels run conv_backward_weights_avx512.h instead.
#pragma once
#include "backend/ops_conv.h"
#include "backend/tensor.h"

namespace keras::cpu {

// True when conv2d_backward_weights_direct is a candidate for the problem (conv_choice.h times
// it against oneDNN): the CPU has AVX2 and FMA,
// out / groups (the kernel's last extent over groups) is a multiple of 8, and it and in / groups
// are at most kDirectMaxChannels (conv_direct.h; oneDNN is faster beyond); the switch of
// conv_direct.h (set_conv_direct, KERAS_CONV_DIRECT) turns it off with the others.
bool conv2d_backward_weights_direct_supported(const Shape& kernel_shape, const ConvParams& params);

// dk[kh, kw, c, o] = sum over (n, oy, ox) of x[n, iy, ix, group(o) * C/groups + c] * dy[n, oy, ox, o]
// (iy = oy * stride_h + kh * dilation_h - pad_top, likewise ix; taps in the padding contribute
// nothing), and db[o] = sum of dy[..., o] when db is not null. x (N, H, W, C), dy (N, OH, OW, O)
// and dk (KH, KW, C/groups, O) are contiguous float32 buffers of the given shapes; dk and db
// are overwritten. Precondition: conv2d_backward_weights_direct_supported(kernel_shape, params).
// Deterministic: each output element is summed by one thread in a fixed order.
void conv2d_backward_weights_direct(const float* x, const Shape& x_shape, const float* dy, const Shape& dy_shape,
                                    float* dk, const Shape& kernel_shape, float* db, const ConvParams& params);

}  // namespace keras::cpu
