// cuDNN loading, error checks, handles and descriptors (backend/cuda/cudnn.h).
#include "backend/cuda/cudnn.h"

#include <atomic>
#include <climits>
#include <string>
#include <vector>

namespace keras::cuda {
namespace {

std::atomic<bool> deterministic_on{false};
std::atomic<bool> force_direct_on{false};

int to_int(int64_t v, const char* where) {
  if (v < 0 || v > INT_MAX)
    fail<NotImplementedError>(where, "extents below 2^31 (cuDNN takes int)", std::to_string(v));
  return static_cast<int>(v);
}

}  // namespace

const CudnnApi& cudnn() {
  static const CudnnApi api = [] {
    // The soname of the cuDNN major version the backend was compiled against.
    const DynamicLibrary lib("cuDNN", "libcudnn.so." + std::to_string(CUDNN_MAJOR));
    CudnnApi a{};
    lib.bind(a.get_version, "cudnnGetVersion");
    lib.bind(a.error_string, "cudnnGetErrorString");
    lib.bind(a.create, "cudnnCreate");
    lib.bind(a.set_stream, "cudnnSetStream");
    lib.bind(a.create_tensor, "cudnnCreateTensorDescriptor");
    lib.bind(a.set_tensor_4d, "cudnnSetTensor4dDescriptor");
    lib.bind(a.destroy_tensor, "cudnnDestroyTensorDescriptor");
    lib.bind(a.create_filter, "cudnnCreateFilterDescriptor");
    lib.bind(a.set_filter_4d, "cudnnSetFilter4dDescriptor");
    lib.bind(a.destroy_filter, "cudnnDestroyFilterDescriptor");
    lib.bind(a.create_convolution, "cudnnCreateConvolutionDescriptor");
    lib.bind(a.set_convolution_2d, "cudnnSetConvolution2dDescriptor");
    lib.bind(a.set_convolution_group_count, "cudnnSetConvolutionGroupCount");
    lib.bind(a.set_convolution_math_type, "cudnnSetConvolutionMathType");
    lib.bind(a.get_convolution_2d_forward_output_dim, "cudnnGetConvolution2dForwardOutputDim");
    lib.bind(a.destroy_convolution, "cudnnDestroyConvolutionDescriptor");
    lib.bind(a.create_pooling, "cudnnCreatePoolingDescriptor");
    lib.bind(a.set_pooling_2d, "cudnnSetPooling2dDescriptor");
    lib.bind(a.destroy_pooling, "cudnnDestroyPoolingDescriptor");
    lib.bind(a.forward_workspace_size, "cudnnGetConvolutionForwardWorkspaceSize");
    lib.bind(a.forward_algorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7");
    lib.bind(a.find_forward_ex, "cudnnFindConvolutionForwardAlgorithmEx");
    lib.bind(a.forward, "cudnnConvolutionForward");
    lib.bind(a.backward_data_workspace_size, "cudnnGetConvolutionBackwardDataWorkspaceSize");
    lib.bind(a.backward_data_algorithm_v7, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    lib.bind(a.find_backward_data_ex, "cudnnFindConvolutionBackwardDataAlgorithmEx");
    lib.bind(a.backward_data, "cudnnConvolutionBackwardData");
    lib.bind(a.backward_filter_workspace_size, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    lib.bind(a.backward_filter_algorithm_v7, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    lib.bind(a.find_backward_filter_ex, "cudnnFindConvolutionBackwardFilterAlgorithmEx");
    lib.bind(a.backward_filter, "cudnnConvolutionBackwardFilter");
    // A library of another major version than the headers would mis-read every struct.
    const size_t version = a.get_version();
    if (version / 10000 != CUDNN_MAJOR)
      fail<DeviceError>("cuDNN", "a cuDNN " + std::to_string(CUDNN_MAJOR) + ".x library",
                        "version " + std::to_string(version));
    return a;
  }();
  return api;
}

void check_cudnn(cudnnStatus_t status, const char* where) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  fail<DeviceError>(where, "CUDNN_STATUS_SUCCESS",
                    std::string(cudnn().error_string(status)) + " (status " + std::to_string(static_cast<int>(status)) + ")");
}

cudnnHandle_t cudnn_handle(int device) {
  thread_local std::vector<cudnnHandle_t> handles;
  cudaStream_t s = stream(device);
  if (handles.size() <= static_cast<size_t>(device)) handles.resize(static_cast<size_t>(device) + 1, nullptr);
  cudnnHandle_t& h = handles[static_cast<size_t>(device)];
  if (!h) {
    DeviceGuard guard(device);
    check_cudnn(cudnn().create(&h), "cudnnCreate");
  }
  check_cudnn(cudnn().set_stream(h, s), "cudnnSetStream");
  return h;
}

cudnnDataType_t cudnn_dtype(DType t, const char* where) {
  if (t == DType::float32) return CUDNN_DATA_FLOAT;
  if (t == DType::float64) return CUDNN_DATA_DOUBLE;
  fail<TypeError>(where, "float32 or float64", dtype_name(t));
}

// ---- descriptors ----

TensorDesc::TensorDesc() { check_cudnn(cudnn().create_tensor(&d_), "cudnnCreateTensorDescriptor"); }
TensorDesc::~TensorDesc() {
  if (d_) (void)cudnn().destroy_tensor(d_);
}
void TensorDesc::set_nhwc(cudnnDataType_t t, int64_t n, int64_t h, int64_t w, int64_t c) {
  const char* where = "cudnnSetTensor4dDescriptor";
  check_cudnn(cudnn().set_tensor_4d(d_, CUDNN_TENSOR_NHWC, t, to_int(n, where), to_int(c, where), to_int(h, where),
                                    to_int(w, where)),
              where);
}

FilterDesc::FilterDesc() { check_cudnn(cudnn().create_filter(&d_), "cudnnCreateFilterDescriptor"); }
FilterDesc::~FilterDesc() {
  if (d_) (void)cudnn().destroy_filter(d_);
}
void FilterDesc::set_krsc(cudnnDataType_t t, int64_t out, int64_t kh, int64_t kw, int64_t in_per_group) {
  const char* where = "cudnnSetFilter4dDescriptor";
  check_cudnn(cudnn().set_filter_4d(d_, t, CUDNN_TENSOR_NHWC, to_int(out, where), to_int(in_per_group, where),
                                    to_int(kh, where), to_int(kw, where)),
              where);
}

ConvolutionDesc::ConvolutionDesc() {
  check_cudnn(cudnn().create_convolution(&d_), "cudnnCreateConvolutionDescriptor");
}
ConvolutionDesc::~ConvolutionDesc() {
  if (d_) (void)cudnn().destroy_convolution(d_);
}
void ConvolutionDesc::set(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w, int64_t dilation_h,
                          int64_t dilation_w, int64_t groups, cudnnDataType_t compute) {
  const char* where = "cudnnSetConvolution2dDescriptor";
  check_cudnn(cudnn().set_convolution_2d(d_, to_int(pad_h, where), to_int(pad_w, where), to_int(stride_h, where),
                                         to_int(stride_w, where), to_int(dilation_h, where),
                                         to_int(dilation_w, where), CUDNN_CROSS_CORRELATION, compute),
              where);
  check_cudnn(cudnn().set_convolution_group_count(d_, to_int(groups, "cudnnSetConvolutionGroupCount")),
              "cudnnSetConvolutionGroupCount");
}
void ConvolutionDesc::set_math(cudnnMathType_t m) {
  check_cudnn(cudnn().set_convolution_math_type(d_, m), "cudnnSetConvolutionMathType");
}

PoolingDesc::PoolingDesc() { check_cudnn(cudnn().create_pooling(&d_), "cudnnCreatePoolingDescriptor"); }
PoolingDesc::~PoolingDesc() {
  if (d_) (void)cudnn().destroy_pooling(d_);
}
void PoolingDesc::set(cudnnPoolingMode_t mode, int64_t window_h, int64_t window_w, int64_t pad_h, int64_t pad_w,
                      int64_t stride_h, int64_t stride_w) {
  const char* where = "cudnnSetPooling2dDescriptor";
  check_cudnn(cudnn().set_pooling_2d(d_, mode, CUDNN_PROPAGATE_NAN, to_int(window_h, where), to_int(window_w, where),
                                     to_int(pad_h, where), to_int(pad_w, where), to_int(stride_h, where),
                                     to_int(stride_w, where)),
              where);
}

// ---- switches ----

void set_deterministic(bool on) { deterministic_on = on; }
bool deterministic() { return deterministic_on; }
void set_conv_force_direct(bool on) { force_direct_on = on; }
bool conv_force_direct() { return force_direct_on; }

}  // namespace keras::cuda
