// CUDA kernels of dropout and dropout_grad (op definitions, the mask contract and the CPU
// kernels: backend/ops_dropout.cpp). The mask matches the CPU's bit for bit for the same seed
// and counter attributes. Shapes, dtypes and the rate are validated by the ops' shape functions.
#include <cmath>

#include "backend/cuda/runtime.h"
#include "backend/cuda/train_kernels.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

namespace k = cuda::kernels;

// Smallest 32-bit word that keeps an element, as the CPU computes it.
uint64_t keep_threshold(double rate) { return static_cast<uint64_t>(std::ceil(rate * 4294967296.0)); }

void dropout_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  const double rate = a.get_float("rate");
  const int dev = in[0].device().index;
  cuda::DeviceGuard guard(dev);
  k::dropout(in[0].dtype(), in[0].raw_data(), out[0].raw_data(), static_cast<bool*>(out[1].raw_data()), in[0].numel(),
             static_cast<uint64_t>(a.get_int("seed")), static_cast<uint64_t>(a.get_int("counter")),
             keep_threshold(rate), rate, cuda::stream(dev));
  cuda::check_launch("dropout (cuda)");
}

void dropout_grad_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  const int dev = in[0].device().index;
  cuda::DeviceGuard guard(dev);
  k::dropout_grad(in[0].dtype(), in[0].raw_data(), static_cast<const bool*>(in[1].raw_data()), out[0].raw_data(), in[0].numel(),
                  a.get_float("rate"), cuda::stream(dev));
  cuda::check_launch("dropout_grad (cuda)");
}

}  // namespace

KERAS_REGISTER_KERNEL(dropout, cuda, dropout_cuda);
KERAS_REGISTER_KERNEL(dropout_grad, cuda, dropout_grad_cuda);

}  // namespace keras
