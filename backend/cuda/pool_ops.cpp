// CUDA kernels of the pooling ops (definitions: backend/ops_pool.cpp): max_pool2d (values and
// int32 indices), max_pool2d_inference, max_pool2d_grad, avg_pool2d, avg_pool2d_grad, float32 and
// float64, with the CPU kernels' contracts (backend/cpu/pool_reference.h): "same" pads as TF
// (the odd pad after), padded positions never win a max and are not counted in an average, a
// NaN in a window is its maximum, ties keep the first position. The kernels are the
// backend's own (pool_kernels.cu: why not cuDNN's pooling).
#include <string>

#include "backend/cpu/pool_reference.h"
#include "backend/cuda/conv_pool_kernels.h"
#include "backend/cuda/runtime.h"
#include "backend/cuda/op_checks.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using cuda::require_float;
using cuda::require_numeric;
using cuda::stream_of;

namespace k = cuda::kernels;

k::PoolGeom geom_of(const cpu::PoolParams& p) {
  k::PoolGeom g;
  g.n = p.n, g.h = p.h, g.w = p.w, g.c = p.c, g.oh = p.oh, g.ow = p.ow;
  g.ph = p.ph, g.pw = p.pw, g.sh = p.sh, g.sw = p.sw, g.pad_t = p.pad_t, g.pad_l = p.pad_l;
  return g;
}


k::PoolGeom grad_geom(const Attrs& a) {
  const auto& s = a.get_ints("input_shape");
  return geom_of(cpu::pool_params(Shape(s.begin(), s.end()), a));
}

void max_pool2d_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  require_float(in[0], "max_pool2d");
  const int device = in[0].device().index;
  cuda::DeviceGuard guard(device);
  k::max_pool2d_forward(in[0].dtype(), in[0].raw_data(), out[0].raw_data(), static_cast<int32_t*>(out[1].raw_data()),
                        geom_of(cpu::pool_params(in[0].shape(), a)), cuda::stream(device));
  cuda::check_launch("max_pool2d (cuda)");
}

void max_pool2d_inference_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  require_float(in[0], "max_pool2d_inference");
  const int device = in[0].device().index;
  cuda::DeviceGuard guard(device);
  k::max_pool2d_forward(in[0].dtype(), in[0].raw_data(), out[0].raw_data(), nullptr,
                        geom_of(cpu::pool_params(in[0].shape(), a)), cuda::stream(device));
  cuda::check_launch("max_pool2d_inference (cuda)");
}

// Inputs grad, indices (from max_pool2d).
void max_pool2d_grad_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  require_float(in[0], "max_pool2d_grad");
  const int device = in[0].device().index;
  cuda::DeviceGuard guard(device);
  k::max_pool2d_backward(in[0].dtype(), in[0].raw_data(), static_cast<const int32_t*>(in[1].raw_data()), out[0].raw_data(), grad_geom(a),
                         cuda::stream(device));
  cuda::check_launch("max_pool2d_grad (cuda)");
}

void avg_pool2d_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  require_float(in[0], "avg_pool2d");
  const int device = in[0].device().index;
  cuda::DeviceGuard guard(device);
  k::avg_pool2d_forward(in[0].dtype(), in[0].raw_data(), out[0].raw_data(), geom_of(cpu::pool_params(in[0].shape(), a)),
                        cuda::stream(device));
  cuda::check_launch("avg_pool2d (cuda)");
}

void avg_pool2d_grad_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  require_float(in[0], "avg_pool2d_grad");
  const int device = in[0].device().index;
  cuda::DeviceGuard guard(device);
  k::avg_pool2d_backward(in[0].dtype(), in[0].raw_data(), out[0].raw_data(), grad_geom(a), cuda::stream(device));
  cuda::check_launch("avg_pool2d_grad (cuda)");
}

}  // namespace

KERAS_REGISTER_KERNEL(max_pool2d, cuda, max_pool2d_cuda);
KERAS_REGISTER_KERNEL(max_pool2d_inference, cuda, max_pool2d_inference_cuda);
KERAS_REGISTER_KERNEL(max_pool2d_grad, cuda, max_pool2d_grad_cuda);
KERAS_REGISTER_KERNEL(avg_pool2d, cuda, avg_pool2d_cuda);
KERAS_REGISTER_KERNEL(avg_pool2d_grad, cuda, avg_pool2d_grad_cuda);

}  // namespace keras
