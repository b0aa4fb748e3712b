// CPU pooling kernels (ops max_pool2d, avg_pool2d and their _grad ops), exposed so that tests can
// compare the oneDNN and vectorised paths against the plain loops.
//
// Tensors are contiguous NHWC of one floating dtype. The max-pooling "indices" tensor has the
// output's shape and dtype int32; each entry is the winning position within its window,
// kh * pool_w + kw (padded positions included in the numbering, never chosen). The first valid
// position starts as the maximum and a later one replaces it when strictly greater or NaN, so the
// first maximum wins ties and a window holding a NaN gives NaN (its last NaN's position), as
// TensorFlow keeps NaN through max pooling. Every path follows this convention exactly, so
// indices from any forward feed any backward.
#pragma once
#include "backend/op_registry.h"

namespace keras::cpu {

struct PoolParams {
  int64_t n = 0, h = 0, w = 0, c = 0;      // input
  int64_t oh = 0, ow = 0;                  // output
  int64_t ph = 0, pw = 0, sh = 0, sw = 0;  // window and strides
  int64_t pad_t = 0, pad_b = 0, pad_l = 0, pad_r = 0;
};
// From the input shape (N, H, W, C) and attrs pool_size, strides, padding.
PoolParams pool_params(const Shape& x, const Attrs& attrs);

void max_pool2d_forward_reference(const Tensor& x, Tensor& y, Tensor& indices, const PoolParams& p);
void max_pool2d_backward_reference(const Tensor& grad, const Tensor& indices, Tensor& dx, const PoolParams& p);
void avg_pool2d_forward_reference(const Tensor& x, Tensor& y, const PoolParams& p);
void avg_pool2d_backward_reference(const Tensor& grad, Tensor& dx, const PoolParams& p);

// Vectorised float32 max pooling (max_pool_kernels.cpp: why not oneDNN), also for bfloat16
// tensors. The forward writes y and, when `indices` is not null, the indices; it matches the
// reference bit for bit.
void max_pool2d_forward_f32(const Tensor& x, Tensor& y, Tensor* indices, const PoolParams& p);
// True when no input position lies in two windows (strides >= pool_size on both axes).
bool max_pool2d_windows_disjoint(const PoolParams& p);
// Writes every dx element once (no scatter); requires disjoint windows, throws ValueError
// otherwise. Equal to the reference's scatter, which adds into zeros.
void max_pool2d_backward_f32(const Tensor& grad, const Tensor& indices, Tensor& dx, const PoolParams& p);

// Dispatchers: max pooling runs the vectorised loops above for float32 (the backward only with
// disjoint windows; overlapping ones scatter), average pooling oneDNN (cached) for float32; the
// references otherwise.
void max_pool2d_forward(const Tensor& x, Tensor& y, Tensor& indices, const PoolParams& p);
// Inference form: no indices.
void max_pool2d_forward_inference(const Tensor& x, Tensor& y, const PoolParams& p);
void max_pool2d_backward(const Tensor& grad, const Tensor& indices, Tensor& dx, const PoolParams& p);
void avg_pool2d_forward(const Tensor& x, Tensor& y, const PoolParams& p);
void avg_pool2d_backward(const Tensor& grad, Tensor& dx, const PoolParams& p);

}  // namespace keras::cpu
