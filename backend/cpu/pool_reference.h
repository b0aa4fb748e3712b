// CPU pooling kernels (ops max_pool2d, avg_pool2d and their _grad ops), exposed so that tests can
// compare the oneDNN path against the plain loops.
//
// Tensors are contiguous NHWC of one floating dtype. The max-pooling "indices" tensor has the
// output's shape and dtype int32; each entry is the winning position within its window,
// kh * pool_w + kw (padded positions included in the numbering, never chosen), the first maximum
// winning ties. This is oneDNN's workspace convention, so both paths share one backward.
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

// Dispatchers: oneDNN pooling (cached) for float32, the references otherwise; the max-pooling
// backward is the plain-loop scatter for every dtype (faster than oneDNN's here, see the .cpp).
void max_pool2d_forward(const Tensor& x, Tensor& y, Tensor& indices, const PoolParams& p);
// Inference form: oneDNN forward_inference (no workspace) for float32.
void max_pool2d_forward_inference(const Tensor& x, Tensor& y, const PoolParams& p);
void max_pool2d_backward(const Tensor& grad, const Tensor& indices, Tensor& dx, const PoolParams& p);
void avg_pool2d_forward(const Tensor& x, Tensor& y, const PoolParams& p);
void avg_pool2d_backward(const Tensor& grad, Tensor& dx, const PoolParams& p);

}  // namespace keras::cpu
