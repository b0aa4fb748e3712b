// Launchers of the convolution and pooling kernels of the CUDA backend (conv_kernels.cu,
// pool_kernels.cu), with a plain C++ interface for conv_ops.cpp and pool_ops.cpp. Tensors are
// contiguous NHWC activations and Keras (kh, kw, in/groups, out) kernels; float32 and float64
// (other dtypes do nothing: callers reject them). Every launcher queues work on `stream`.
//
// All of them are deterministic: each output element is computed by one thread (or one block
// with a fixed reduction tree), with its terms summed in a fixed order.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/dtype.h"

namespace keras::cuda::kernels {

// One 2-D convolution: x (n, h, w, c), kernel (kh, kw, cg, o) with c = cg * groups, y (n, oh, ow, o).
struct ConvGeom {
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t oh = 0, ow = 0, o = 0;
  int64_t kh = 0, kw = 0, cg = 0, groups = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pad_t = 0, pad_l = 0;  // the bottom/right pads follow from the extents
};

// The direct convolutions (the fallback of cuDNN and the float64 path where cuDNN declines).
// Accumulate in double. y = conv(x, k); dx = conv^T(dy, k); dk = sum over positions of x * dy.
void conv2d_direct(DType t, const void* x, const void* k, void* y, const ConvGeom& g, cudaStream_t stream);
void conv2d_backward_data_direct(DType t, const void* dy, const void* k, void* dx, const ConvGeom& g,
                                 cudaStream_t stream);
void conv2d_backward_weights_direct(DType t, const void* x, const void* dy, void* dk, const ConvGeom& g,
                                    cudaStream_t stream);

// dst (n, hs, ws, c) = src (n, h, w, c) placed at row pre_h, column pre_w, zeros around it;
// elements of `elem_size` bytes (4 or 8).
void pad_nhwc(int elem_size, const void* src, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pre_h,
              int64_t pre_w, int64_t hs, int64_t ws, void* dst, cudaStream_t stream);

// y[i] = min(y[i], hi) in place (relu6 after a fused relu); float types.
void clip_max(DType t, void* y, int64_t n, double hi, cudaStream_t stream);

// One 2-D pooling (cpu::PoolParams's fields): x (n, h, w, c) -> y (n, oh, ow, c).
struct PoolGeom {
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t oh = 0, ow = 0;
  int64_t ph = 0, pw = 0, sh = 0, sw = 0;
  int64_t pad_t = 0, pad_l = 0;
};

// Max pooling with the CPU's convention (pool_reference.h): the first valid window position
// starts as the maximum, a later one replaces it when strictly greater or NaN; indices (may be
// null) hold kh * pw + kw of the winner.
void max_pool2d_forward(DType t, const void* x, void* y, int32_t* indices, const PoolGeom& g, cudaStream_t stream);
// dx (n, h, w, c): each input element sums, over the windows that cover it in (oh, ow) order,
// the gradient of those whose index names it (zero when none).
void max_pool2d_backward(DType t, const void* grad, const int32_t* indices, void* dx, const PoolGeom& g,
                         cudaStream_t stream);
// Average pooling, padded positions not counted (sum in window order, times 1 / count).
void avg_pool2d_forward(DType t, const void* x, void* y, const PoolGeom& g, cudaStream_t stream);
void avg_pool2d_backward(DType t, const void* grad, void* dx, const PoolGeom& g, cudaStream_t stream);

}  // namespace keras::cuda::kernels
