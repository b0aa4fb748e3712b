// CUDA kernels of the fused optimizer updates (CPU kernels and the attribute contract:
// optimizers/update_ops.cpp). One thread per element in a grid-stride loop; every element is
// independent, so there is nothing to synchronize. The expressions are the CPU's, operation for
// operation and in T, with products and sums separately rounded (exact_math.cuh), so a step on
// the GPU gives the CPU's bits.
#include <limits>

#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/exact_math.cuh"
#include "backend/cuda/train_kernels.h"

namespace keras::cuda::kernels {
namespace {

// The shared pre-processing in T (update_ops.cpp's Prep).
template <class T>
struct Prep {
  T scale, hi, decay;
  // Comparisons written so that NaN passes through, as on the CPU.
  __device__ T grad(T g) const {
    g = xmul(g, scale);
    return g < -hi ? -hi : (g > hi ? hi : g);
  }
  __device__ T decayed(T w) const { return xsub(w, xmul(w, decay)); }
};

template <class T>
Prep<T> make_prep(const GradPrep& p) {
  const double hi = p.clip_value > 0 ? p.clip_value : std::numeric_limits<double>::infinity();
  return {static_cast<T>(p.grad_scale), static_cast<T>(hi), static_cast<T>(p.decay)};
}

template <class T>
__global__ void sgd_kernel(T* w, const T* g, T* m, int64_t n, Prep<T> prep, T lr, T mu, bool nesterov) {
  KERAS_GRID_LOOP(i, n) {
    const T gi = prep.grad(g[i]);
    if (m == nullptr) {
      w[i] = xsub(prep.decayed(w[i]), xmul(gi, lr));
    } else {
      const T mi = xadd(xmul(-gi, lr), xmul(m[i], mu));
      m[i] = mi;
      w[i] = nesterov ? xadd(prep.decayed(w[i]), xadd(xmul(-gi, lr), xmul(mi, mu))) : xadd(prep.decayed(w[i]), mi);
    }
  }
}

template <class T>
__global__ void adam_kernel(T* w, const T* g, T* m, T* v, T* vhat, int64_t n, Prep<T> prep, T alpha, T omb1,
                            T omb2, T eps) {
  KERAS_GRID_LOOP(i, n) {
    const T gi = prep.grad(g[i]);
    const T mi = xadd(m[i], xmul(xsub(gi, m[i]), omb1));
    const T vi = xadd(v[i], xmul(xsub(xmul(gi, gi), v[i]), omb2));
    T denom_base = vi;
    if (vhat != nullptr) {
      const T hi = vhat[i] > vi ? vhat[i] : vi;
      vhat[i] = hi;
      denom_base = hi;
    }
    m[i] = mi;
    v[i] = vi;
    w[i] = xsub(prep.decayed(w[i]), xmul(mi, alpha) / xadd(sqrt(denom_base), eps));
  }
}

template <class T>
__global__ void rmsprop_kernel(T* w, const T* g, T* vel, T* mom, T* avg, int64_t n, Prep<T> prep, T lr, T rho,
                               T omr, T mu, T eps) {
  KERAS_GRID_LOOP(i, n) {
    const T gi = prep.grad(g[i]);
    const T vi = xadd(xmul(rho, vel[i]), xmul(xmul(omr, gi), gi));
    vel[i] = vi;
    T denom = xadd(vi, eps);
    if (avg != nullptr) {
      const T ai = xadd(xmul(rho, avg[i]), xmul(omr, gi));
      avg[i] = ai;
      denom = xadd(xsub(vi, xmul(ai, ai)), eps);
    }
    const T increment = xmul(lr, gi) / sqrt(denom);
    T wi = prep.decayed(w[i]);
    if (mom != nullptr) {
      const T mi = xadd(xmul(mu, mom[i]), increment);
      mom[i] = mi;
      wi = xsub(wi, mi);
    } else {
      wi = xsub(wi, increment);
    }
    w[i] = wi;
  }
}

template <class T>
__global__ void adagrad_kernel(T* w, const T* g, T* acc, int64_t n, Prep<T> prep, T lr, T eps) {
  KERAS_GRID_LOOP(i, n) {
    const T gi = prep.grad(g[i]);
    const T ai = xadd(acc[i], xmul(gi, gi));
    acc[i] = ai;
    w[i] = xsub(prep.decayed(w[i]), xmul(lr, gi) / sqrt(xadd(ai, eps)));
  }
}

}  // namespace

void sgd_update(DType t, void* var, const void* grad, void* m, int64_t n, const GradPrep& prep, double lr,
                double momentum, bool nesterov, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    sgd_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(var), static_cast<const T*>(grad),
                                                          static_cast<T*>(m), n, make_prep<T>(prep),
                                                          static_cast<T>(lr), static_cast<T>(momentum), nesterov);
  });
}

void adam_update(DType t, void* var, const void* grad, void* m, void* v, void* vhat, int64_t n, const GradPrep& prep,
                 double alpha, double beta_1, double beta_2, double epsilon, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    adam_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<T*>(var), static_cast<const T*>(grad), static_cast<T*>(m), static_cast<T*>(v),
        static_cast<T*>(vhat), n, make_prep<T>(prep), static_cast<T>(alpha), static_cast<T>(1.0 - beta_1),
        static_cast<T>(1.0 - beta_2), static_cast<T>(epsilon));
  });
}

void rmsprop_update(DType t, void* var, const void* grad, void* vel, void* mom, void* avg, int64_t n,
                    const GradPrep& prep, double lr, double rho, double momentum, double epsilon, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    rmsprop_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<T*>(var), static_cast<const T*>(grad), static_cast<T*>(vel), static_cast<T*>(mom),
        static_cast<T*>(avg), n, make_prep<T>(prep), static_cast<T>(lr), static_cast<T>(rho),
        static_cast<T>(1.0 - rho), static_cast<T>(momentum), static_cast<T>(epsilon));
  });
}

void adagrad_update(DType t, void* var, const void* grad, void* acc, int64_t n, const GradPrep& prep, double lr,
                    double epsilon, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    adagrad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(var), static_cast<const T*>(grad),
                                                              static_cast<T*>(acc), n, make_prep<T>(prep),
                                                              static_cast<T>(lr), static_cast<T>(epsilon));
  });
}

}  // namespace keras::cuda::kernels
