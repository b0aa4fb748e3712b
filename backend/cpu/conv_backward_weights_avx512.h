// The direct weight (and bias) gradient in AVX-512 for 3-wide kernels (conv_backward_weights_direct.h's
// `direct` candidate runs it where the CPU and the problem allow, its AVX2 kernel elsewhere).
//
// Why: the AVX2 kernel ran at 40% of oneDNN's speed on AVX-512 CPUs (ResNet-20's 16-channel 3x3
// layers: 1.8 against 0.8 ms). Here the three taps of a kernel row share each input broadcast:
// input pixel j meets dy of pixels j, j - 1 and j - 2, so one load feeds three fused
// multiply-adds (one load per multiply-add saturates the loads at ~70% of the FMA rate). On the
// AMX Xeon, flushed-cache trials: 16 -> 16 channels at 32x32, batch 64, 0.77 ms against oneDNN's
// 0.90; at 32 and 64 channels oneDNN stays ahead (0.77 against 0.91 ms) and the chooser keeps it.
#pragma once
#include "backend/ops_conv.h"
#include "backend/tensor.h"

namespace keras::cpu::avx512 {

// True when conv_backward_weights runs the problem: the CPU has AVX-512F, the switch of
// conv_direct_avx512.h is on, stride 1, one group, a kernel 3 wide with no horizontal dilation,
// 1 to 64 input channels and 16, 32, 48 or 64 outputs.
bool conv_backward_weights_supports(const Shape& kernel_shape, const ConvParams& params);

// As conv2d_backward_weights_direct (the same contract and determinism: each element of dk and
// db is summed by one thread in an order fixed by the shapes). Precondition:
// conv_backward_weights_supports(kernel_shape, params).
void conv_backward_weights(const float* x, const Shape& x_shape, const float* dy, const Shape& dy_shape, float* dk,
                           const Shape& kernel_shape, float* db, const ConvParams& params);

}  // namespace keras::cpu::avx512
