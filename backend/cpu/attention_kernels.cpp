// CPU kernels of masked_softmax and its backward: plain loops over rows of the last axis, one
// OpenMP thread per block of rows, float32 and float64 (see backend/ops_attention.h for the
// fill semantics they implement).
#include <algorithm>
#include <cmath>

#include "backend/cpu/dispatch_floating.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

constexpr int64_t kParallelMin = 1 << 14;
constexpr double kFill = 1e9;  // Keras's large negative number / max_value for float32 and float64

struct FillMode {
  bool subtract = false;
  bool zero_masked = false;
};

FillMode fill_mode(const Attrs& a) {
  const std::string& fill = a.get_string("fill");
  if (fill != "replace" && fill != "subtract")
    fail<ValueError>("masked_softmax kernel attr 'fill'", "'replace' or 'subtract'", "'" + fill + "'");
  return {fill == "subtract", a.get_bool("zero_masked")};
}

// The filled score of entry k, in T as Keras computes it.
template <class T>
inline T filled(T x, bool keep, FillMode m) {
  if (keep) return x;
  return m.subtract ? static_cast<T>(x - static_cast<T>(kFill)) : static_cast<T>(-kFill);
}

// p = softmax(filled(x)) of one row of length n.
template <class T>
void row_probabilities(const T* x, const bool* keep, int64_t n, FillMode m, T* p) {
  T mx = filled(x[0], keep[0], m);
  for (int64_t k = 1; k < n; ++k) mx = std::max(mx, filled(x[k], keep[k], m));
  T sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    p[k] = std::exp(filled(x[k], keep[k], m) - mx);
    sum += p[k];
  }
  for (int64_t k = 0; k < n; ++k) p[k] /= sum;
}

template <class T>
void forward_typed(const Tensor& x, const Tensor& mask, Tensor& out, FillMode m) {
  const int64_t n = x.shape().back();
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const T* px = static_cast<const T*>(x.raw_data());
  const bool* pm = static_cast<const bool*>(mask.raw_data());
  T* po = static_cast<T*>(out.raw_data());
#pragma omp parallel for if (x.numel() > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * n;
    row_probabilities(px + base, pm + base, n, m, po + base);
    if (m.zero_masked)
      for (int64_t k = 0; k < n; ++k)
        if (!pm[base + k]) po[base + k] = 0;
  }
}

// y = zero_masked ? keep * p : p, p = softmax(z), z = filled(x):
//   dL/dz = p * (g' - sum(g' * p)) with g' = zero_masked ? keep * g : g;
//   dL/dx = dL/dz where kept; at masked entries dz/dx is 0 (replace) or 1 (subtract).
template <class T>
void backward_typed(const Tensor& grad, const Tensor& x, const Tensor& mask, Tensor& out, FillMode m) {
  const int64_t n = x.shape().back();
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const T* pg = static_cast<const T*>(grad.raw_data());
  const T* px = static_cast<const T*>(x.raw_data());
  const bool* pm = static_cast<const bool*>(mask.raw_data());
  T* po = static_cast<T*>(out.raw_data());
#pragma omp parallel for if (x.numel() > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * n;
    T* d = po + base;
    row_probabilities(px + base, pm + base, n, m, d);  // p, overwritten by dL/dx below
    auto g = [&](int64_t k) { return (m.zero_masked && !pm[base + k]) ? T(0) : pg[base + k]; };
    T dot = 0;
    for (int64_t k = 0; k < n; ++k) dot += g(k) * d[k];
    for (int64_t k = 0; k < n; ++k) {
      const T dz = d[k] * (g(k) - dot);
      d[k] = (m.subtract || pm[base + k]) ? dz : T(0);
    }
  }
}

void masked_softmax_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  FillMode m = fill_mode(a);
  cpu::dispatch_floating(in[0].dtype(), "masked_softmax (cpu)", [&](auto tag) {
    forward_typed<decltype(tag)>(in[0], in[1], out[0], m);
  });
}

void masked_softmax_grad_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  FillMode m = fill_mode(a);
  cpu::dispatch_floating(in[1].dtype(), "masked_softmax_grad (cpu)", [&](auto tag) {
    backward_typed<decltype(tag)>(in[0], in[1], in[2], out[0], m);
  });
}

KERAS_REGISTER_KERNEL(masked_softmax, cpu, masked_softmax_cpu);
KERAS_REGISTER_KERNEL(masked_softmax_grad, cpu, masked_softmax_grad_cpu);

}  // namespace
}  // namespace keras
