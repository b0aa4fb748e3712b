// cuDNN for the CUDA backend (internal header): the library loaded with dlopen on first use (as
// cuBLAS in runtime.h), its error check, per-thread per-device handles bound to the device's
// stream, RAII descriptors, and the switches of the convolution kernels (conv_ops.cpp).
//
// Only cuDNN's headers are needed at build time; a process that never runs a convolution on a
// GPU never loads libcudnn (~1 GB of engines mapped, ~0.3 s). The legacy (v7-style) API is
// used: it is in every cuDNN 9 (the GPU machine has 9.14) and covers NHWC tensors, KRSC
// (NHWC-format) filters, groups, dilation and per-algorithm determinism.
#pragma once
#include <cudnn.h>

#include <cstdint>

#include "backend/cuda.h"
#include "backend/cuda/runtime.h"
#include "backend/dtype.h"

namespace keras::cuda {

// The cuDNN entry points the backend calls, bound from libcudnn.so.<CUDNN_MAJOR>.
struct CudnnApi {
  size_t (*get_version)();
  const char* (*error_string)(cudnnStatus_t);
  cudnnStatus_t (*create)(cudnnHandle_t*);
  cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t);

  cudnnStatus_t (*create_tensor)(cudnnTensorDescriptor_t*);
  cudnnStatus_t (*set_tensor_4d)(cudnnTensorDescriptor_t, cudnnTensorFormat_t, cudnnDataType_t, int, int, int, int);
  cudnnStatus_t (*destroy_tensor)(cudnnTensorDescriptor_t);

  cudnnStatus_t (*create_filter)(cudnnFilterDescriptor_t*);
  cudnnStatus_t (*set_filter_4d)(cudnnFilterDescriptor_t, cudnnDataType_t, cudnnTensorFormat_t, int, int, int, int);
  cudnnStatus_t (*destroy_filter)(cudnnFilterDescriptor_t);

  cudnnStatus_t (*create_convolution)(cudnnConvolutionDescriptor_t*);
  cudnnStatus_t (*set_convolution_2d)(cudnnConvolutionDescriptor_t, int, int, int, int, int, int,
                                      cudnnConvolutionMode_t, cudnnDataType_t);
  cudnnStatus_t (*set_convolution_group_count)(cudnnConvolutionDescriptor_t, int);
  cudnnStatus_t (*set_convolution_math_type)(cudnnConvolutionDescriptor_t, cudnnMathType_t);
  cudnnStatus_t (*get_convolution_2d_forward_output_dim)(cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t,
                                                         cudnnFilterDescriptor_t, int*, int*, int*, int*);
  cudnnStatus_t (*destroy_convolution)(cudnnConvolutionDescriptor_t);

  cudnnStatus_t (*create_pooling)(cudnnPoolingDescriptor_t*);
  cudnnStatus_t (*set_pooling_2d)(cudnnPoolingDescriptor_t, cudnnPoolingMode_t, cudnnNanPropagation_t, int, int, int,
                                  int, int, int);
  cudnnStatus_t (*destroy_pooling)(cudnnPoolingDescriptor_t);

  // Forward: workspace size, heuristics (v7), timed search (FindEx), the convolution.
  cudnnStatus_t (*forward_workspace_size)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                                          cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t,
                                          cudnnConvolutionFwdAlgo_t, size_t*);
  cudnnStatus_t (*forward_algorithm_v7)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                                        cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int*,
                                        cudnnConvolutionFwdAlgoPerf_t*);
  cudnnStatus_t (*find_forward_ex)(cudnnHandle_t, cudnnTensorDescriptor_t, const void*, cudnnFilterDescriptor_t,
                                   const void*, cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, void*, int,
                                   int*, cudnnConvolutionFwdAlgoPerf_t*, void*, size_t);
  cudnnStatus_t (*forward)(cudnnHandle_t, const void*, cudnnTensorDescriptor_t, const void*, cudnnFilterDescriptor_t,
                           const void*, cudnnConvolutionDescriptor_t, cudnnConvolutionFwdAlgo_t, void*, size_t,
                           const void*, cudnnTensorDescriptor_t, void*);

  // Backward data (dx from dy and w).
  cudnnStatus_t (*backward_data_workspace_size)(cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
                                                cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t,
                                                cudnnConvolutionBwdDataAlgo_t, size_t*);
  cudnnStatus_t (*backward_data_algorithm_v7)(cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
                                              cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int*,
                                              cudnnConvolutionBwdDataAlgoPerf_t*);
  cudnnStatus_t (*find_backward_data_ex)(cudnnHandle_t, cudnnFilterDescriptor_t, const void*, cudnnTensorDescriptor_t,
                                         const void*, cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, void*,
                                         int, int*, cudnnConvolutionBwdDataAlgoPerf_t*, void*, size_t);
  cudnnStatus_t (*backward_data)(cudnnHandle_t, const void*, cudnnFilterDescriptor_t, const void*,
                                 cudnnTensorDescriptor_t, const void*, cudnnConvolutionDescriptor_t,
                                 cudnnConvolutionBwdDataAlgo_t, void*, size_t, const void*, cudnnTensorDescriptor_t,
                                 void*);

  // Backward filter (dw from x and dy).
  cudnnStatus_t (*backward_filter_workspace_size)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t,
                                                  cudnnConvolutionDescriptor_t, cudnnFilterDescriptor_t,
                                                  cudnnConvolutionBwdFilterAlgo_t, size_t*);
  cudnnStatus_t (*backward_filter_algorithm_v7)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t,
                                                cudnnConvolutionDescriptor_t, cudnnFilterDescriptor_t, int, int*,
                                                cudnnConvolutionBwdFilterAlgoPerf_t*);
  cudnnStatus_t (*find_backward_filter_ex)(cudnnHandle_t, cudnnTensorDescriptor_t, const void*,
                                           cudnnTensorDescriptor_t, const void*, cudnnConvolutionDescriptor_t,
                                           cudnnFilterDescriptor_t, void*, int, int*,
                                           cudnnConvolutionBwdFilterAlgoPerf_t*, void*, size_t);
  cudnnStatus_t (*backward_filter)(cudnnHandle_t, const void*, cudnnTensorDescriptor_t, const void*,
                                   cudnnTensorDescriptor_t, const void*, cudnnConvolutionDescriptor_t,
                                   cudnnConvolutionBwdFilterAlgo_t, void*, size_t, const void*,
                                   cudnnFilterDescriptor_t, void*);
};
// Loads cuDNN on first use; DeviceError naming cuDNN when the library or a symbol is missing.
const CudnnApi& cudnn();

// Throws DeviceError "<where>: expected CUDNN_STATUS_SUCCESS, got <status text>".
void check_cudnn(cudnnStatus_t status, const char* where);

// This thread's cuDNN handle for `device`, bound to stream(device). Created once per thread and
// device and never destroyed (as cublas_handle: destroying at exit races the driver's shutdown).
cudnnHandle_t cudnn_handle(int device);

// cuDNN's data type of a float dtype; TypeError (naming `where`) for any other.
cudnnDataType_t cudnn_dtype(DType t, const char* where);

// ---- RAII descriptors (move-only; the handle is created in the constructor) ----

class TensorDesc {
 public:
  TensorDesc();
  ~TensorDesc();
  TensorDesc(TensorDesc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  TensorDesc& operator=(TensorDesc&&) = delete;
  TensorDesc(const TensorDesc&) = delete;
  // A packed NHWC tensor of extents (n, h, w, c).
  void set_nhwc(cudnnDataType_t t, int64_t n, int64_t h, int64_t w, int64_t c);
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

class FilterDesc {
 public:
  FilterDesc();
  ~FilterDesc();
  FilterDesc(FilterDesc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  FilterDesc& operator=(FilterDesc&&) = delete;
  FilterDesc(const FilterDesc&) = delete;
  // A packed KRSC filter (CUDNN_TENSOR_NHWC): memory (out, kh, kw, in_per_group).
  void set_krsc(cudnnDataType_t t, int64_t out, int64_t kh, int64_t kw, int64_t in_per_group);
  cudnnFilterDescriptor_t get() const { return d_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};

class ConvolutionDesc {
 public:
  ConvolutionDesc();
  ~ConvolutionDesc();
  ConvolutionDesc(ConvolutionDesc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  ConvolutionDesc& operator=(ConvolutionDesc&&) = delete;
  ConvolutionDesc(const ConvolutionDesc&) = delete;
  // Cross-correlation (as Keras) with symmetric pads, computing in `compute`.
  void set(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
           int64_t groups, cudnnDataType_t compute);
  void set_math(cudnnMathType_t m);
  cudnnConvolutionDescriptor_t get() const { return d_; }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
};

class PoolingDesc {
 public:
  PoolingDesc();
  ~PoolingDesc();
  PoolingDesc(PoolingDesc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  PoolingDesc& operator=(PoolingDesc&&) = delete;
  PoolingDesc(const PoolingDesc&) = delete;
  // Symmetric pads only, as every cuDNN pooling. NaNs propagate.
  void set(cudnnPoolingMode_t mode, int64_t window_h, int64_t window_w, int64_t pad_h, int64_t pad_w,
           int64_t stride_h, int64_t stride_w);
  cudnnPoolingDescriptor_t get() const { return d_; }

 private:
  cudnnPoolingDescriptor_t d_ = nullptr;
};

// The switches of the convolution kernels (set_deterministic, set_conv_force_direct,
// conv_counters, clear_conv_algorithm_cache) are public: backend/cuda.h, declared in every build.

}  // namespace keras::cuda
