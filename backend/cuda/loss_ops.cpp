// CUDA kernels of sparse_softmax_cross_entropy and sparse_softmax_cross_entropy_grad (op
// definitions and CPU kernels: losses/sparse_softmax_cross_entropy.cpp). Shapes and dtypes are
// validated by the ops' shape functions. Labels outside [0, classes) throw the CPU's IndexError
// (same message: the first bad label and its position): the range check runs on the device and
// its answer is copied back, which waits for the stream — the one host sync of these kernels,
// forced by the contract that the op throws.
#include <string>

#include "backend/cuda/runtime.h"
#include "backend/cuda/train_kernels.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

namespace k = cuda::kernels;

// Throws IndexError naming `op` for the first label outside [0, classes).
void check_label_range(const char* op, const Tensor& labels, int64_t classes) {
  const int dev = labels.device().index;
  const int64_t n = labels.numel();
  cudaStream_t s = cuda::stream(dev);
  Tensor scratch = Tensor::empty({1}, DType::int64, labels.device());
  auto* position = static_cast<int64_t*>(scratch.raw_data());
  k::find_bad_label(labels.dtype(), labels.raw_data(), n, classes, position, s);
  cuda::check_launch(op);
  int64_t bad = n;
  cuda::check(cudaMemcpyAsync(&bad, position, sizeof bad, cudaMemcpyDeviceToHost, s), op);
  cuda::check(cudaStreamSynchronize(s), op);
  if (bad >= n) return;
  const size_t size = dtype_size(labels.dtype());
  int64_t value = 0;
  if (labels.dtype() == DType::int32) {
    int32_t v32 = 0;
    cuda::check(cudaMemcpy(&v32, static_cast<const char*>(labels.raw_data()) + bad * size, size,
                           cudaMemcpyDeviceToHost), op);
    value = v32;
  } else {
    cuda::check(cudaMemcpy(&value, static_cast<const char*>(labels.raw_data()) + bad * size, size,
                           cudaMemcpyDeviceToHost), op);
  }
  fail<IndexError>(std::string("op '") + op + "'", "labels in [0, " + std::to_string(classes) + ")",
                   "label " + std::to_string(value) + " at position " + std::to_string(bad));
}

void forward_cuda(const TensorList& in, TensorList& out, const Attrs&) {
  const int64_t n = in[0].dim(0), c = in[0].dim(1);
  const int dev = in[0].device().index;
  cuda::DeviceGuard guard(dev);
  check_label_range("sparse_softmax_cross_entropy", in[1], c);
  k::sparse_ce_forward(in[0].dtype(), in[1].dtype(), in[0].raw_data(), in[1].raw_data(), out[0].raw_data(),
                       out[1].raw_data(), n, c, cuda::stream(dev));
  cuda::check_launch("sparse_softmax_cross_entropy (cuda)");
}

void grad_cuda(const TensorList& in, TensorList& out, const Attrs&) {
  const int64_t n = in[0].dim(0), c = in[0].dim(1);
  const int dev = in[0].device().index;
  cuda::DeviceGuard guard(dev);
  check_label_range("sparse_softmax_cross_entropy_grad", in[1], c);
  k::sparse_ce_grad(in[0].dtype(), in[1].dtype(), in[0].raw_data(), in[1].raw_data(), in[2].raw_data(),
                    out[0].raw_data(), n, c, cuda::stream(dev));
  cuda::check_launch("sparse_softmax_cross_entropy_grad (cuda)");
}

}  // namespace

KERAS_REGISTER_KERNEL(sparse_softmax_cross_entropy, cuda, forward_cuda);
KERAS_REGISTER_KERNEL(sparse_softmax_cross_entropy_grad, cuda, grad_cuda);

}  // namespace keras
