// The CPU kernel of dense_activation_grad: dz = dy * act'(z) from the fused activation's output y,
// the Dense backward's first step (backend/ops_linalg.cpp).
#include <string>

#include "backend/op_registry.h"

namespace keras {
namespace {

// dz from dy and the fused activation's output y.
template <class T>
void activation_grad_loop(const T* __restrict dy, const T* __restrict y, T* __restrict dz, int64_t n,
                          const std::string& act) {
  // Branch-free selects (loads first, then a blend) so that the loops vectorise.
  if (act == "relu") {
#pragma omp parallel for simd if (n >= (1 << 16))
    for (int64_t i = 0; i < n; ++i) {
      const T d = dy[i];
      dz[i] = y[i] > T(0) ? d : T(0);
    }
  } else if (act == "sigmoid") {
#pragma omp parallel for simd if (n >= (1 << 16))
    for (int64_t i = 0; i < n; ++i) dz[i] = dy[i] * y[i] * (T(1) - y[i]);
  } else if (act == "tanh") {
#pragma omp parallel for simd if (n >= (1 << 16))
    for (int64_t i = 0; i < n; ++i) dz[i] = dy[i] * (T(1) - y[i] * y[i]);
  } else if (act == "elu") {
#pragma omp parallel for simd if (n >= (1 << 16))
    for (int64_t i = 0; i < n; ++i) {
      const T d = dy[i], v = y[i];
      dz[i] = v > T(0) ? d : d * (v + T(1));
    }
  } else {
    fail<ValueError>("dense_activation_grad", "relu, sigmoid, tanh or elu", "'" + act + "'");
  }
}

void activation_grad_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const std::string& act = attrs.get_string("activation");
  int64_t n = in[0].numel();
  if (in[0].dtype() == DType::float32)
    activation_grad_loop(in[0].data<float>(), in[1].data<float>(), out[0].data<float>(), n, act);
  else if (in[0].dtype() == DType::float64)
    activation_grad_loop(in[0].data<double>(), in[1].data<double>(), out[0].data<double>(), n, act);
  else
    fail<TypeError>("dense_activation_grad (cpu)", "float32 or float64", dtype_name(in[0].dtype()));
}

}  // namespace

KERAS_REGISTER_KERNEL(dense_activation_grad, cpu, activation_grad_kernel);

}  // namespace keras
