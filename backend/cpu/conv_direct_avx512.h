// The direct forward and input-gradient convolution in AVX-512 (conv_direct.h's `direct`
// candidate runs it where the CPU and the problem allow, its AVX2 kernel elsewhere).
//
// Why: on AVX-512 CPUs the AVX2 kernel uses half of each FMA, yet still beat oneDNN 2.6's
// kernels on ResNet-20's 32-channel layers in training steps; a 16-lane version keeps its plain
// NHWC memory and Keras kernel layout and doubles the width.
#pragma once
#include "backend/cpu/conv_direct_problem.h"

namespace keras::cpu::avx512 {

// True when conv_direct runs `g`: the CPU has AVX-512F, the switch below is on, strides 1 or 2, a
// left padding of at least 0, input channels 16, 32 or 64 (a compile-time count keeps every pixel
// of a tile at a constant offset from one pointer) and outputs 16, 32, 48 or 64.
bool conv_direct_supports(const DirectConv& g);
// The same for a problem given by its channels, strides and left padding.
bool conv_direct_supports(int64_t ci, int64_t co, int64_t stride_h, int64_t stride_w, int64_t pad_left);

// Computes g.out as conv_direct.cpp's AVX2 kernel does. Kernels 3 wide and undilated sum each
// output in another order (kernel rows, channels, then the three taps) and so round differently;
// other kernels give the AVX2 kernel's bits. Either way every output element is summed by one
// thread in a fixed order: the bits do not depend on the thread count. Nothing happens for an
// empty output. Precondition: conv_direct_supports(g).
void conv_direct(const DirectConv& g);

// Tests: false makes conv_direct_supports and conv_backward_weights_supports
// (conv_backward_weights_avx512.h) false, so the AVX2 kernels run (default true).
void set_conv_direct_enabled(bool enabled);
bool conv_direct_enabled();

}  // namespace keras::cpu::avx512
