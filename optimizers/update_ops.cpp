// The optimizers' fused in-place update ops: one op (and one pass over memory) per variable and
// step, so a device backend replaces a whole update by registering one kernel per op.
//
// Every update op takes (var, grad, slots...) of one shape and floating dtype, writes var and the
// slots in place, and shares three attributes that fold Keras's gradient pre-processing into the
// same pass:
//   grad_scale  g *= grad_scale            (loss-scale unscaling and clip-by-norm factors)
//   clip_value  g = clip(g, -c, c), c > 0  (clipvalue; 0 = off)
//   decay       var -= var * decay         (decoupled weight decay, lr * weight_decay; 0 = off)
// in that order, which is the order of Keras 3's BaseOptimizer.apply. Then the optimizer's rule:
//   sgd_update(var, grad[, m])            lr, momentum, nesterov
//   adam_update(var, grad, m, v[, vhat])  lr, beta_1, beta_2, epsilon, step (1-based)
//   rmsprop_update(var, grad, vel[, mom][, avg_grad])  lr, rho, momentum, epsilon, centered
//   adagrad_update(var, grad, acc)        lr, epsilon
// and sum_squares_f64(x) -> float64 scalar, the reduction behind clipnorm and global_clipnorm.
#include <omp.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "backend/op_registry.h"

namespace keras {
namespace {

// Below this many elements threads cost more than they save.
constexpr int64_t kParallelGrain = 1 << 15;

// Checks the inputs of an update op: `count` tensors of var's shape and floating dtype.
std::vector<TensorSpec> check_update_inputs(const std::string& op, const std::vector<TensorSpec>& in, size_t count,
                                            const char* const* names) {
  std::string where = "op '" + op + "'";
  if (in.size() != count)
    fail<ValueError>(where, std::to_string(count) + " inputs", std::to_string(in.size()) + " inputs",
                     "The slot inputs depend on the op's attributes.");
  if (!is_floating(in[0].dtype)) fail<TypeError>(where, "a floating variable", dtype_name(in[0].dtype));
  for (size_t i = 1; i < in.size(); ++i) {
    const char* name = i < 5 && names[i] ? names[i] : "slot";
    if (in[i].shape != in[0].shape)
      fail<ShapeError>(where, std::string(name) + " of the variable's shape " + shape_str(in[0].shape),
                       shape_str(in[i].shape));
    if (in[i].dtype != in[0].dtype)
      fail<TypeError>(where, std::string(name) + " of dtype " + dtype_name(in[0].dtype), dtype_name(in[i].dtype));
  }
  return {};
}

// The shared gradient pre-processing, in T.
template <class T>
struct Prep {
  T scale, hi, decay;
  explicit Prep(const Attrs& a)
      : scale(static_cast<T>(a.get_float("grad_scale", 1.0))),
        hi(a.get_float("clip_value", 0.0) > 0 ? static_cast<T>(a.get_float("clip_value", 0.0))
                                              : std::numeric_limits<T>::infinity()),
        decay(static_cast<T>(a.get_float("decay", 0.0))) {}
  // Comparisons written so that NaN passes through, as ops.clip does.
  T grad(T g) const {
    g *= scale;
    return g < -hi ? -hi : (g > hi ? hi : g);
  }
  T decayed(T w) const { return w - w * decay; }
};

// Runs body(i) for i in [0, n): vectorised, and threaded for large n. The body must not carry
// dependencies between elements (each touches only index i of each buffer).
template <class F>
void for_each_index(int64_t n, F&& body) {
  if (n >= kParallelGrain) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) body(i);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) body(i);
  }
}

// Runs span(begin, end) over [0, n): one span per OpenMP thread for large n (boundaries on
// 16-element multiples, so every thread's vectors stay aligned as the buffers are), else one.
template <class F>
void for_each_span(int64_t n, F&& span) {
  if (n < kParallelGrain) return span(int64_t{0}, n);
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
    auto edge = [&](int64_t k) { return k == threads ? n : (n * k / threads) & ~int64_t{15}; };
    span(edge(t), edge(t + 1));
  }
}

// One Adam step over elements [begin, end) (vhat null without amsgrad): restrict pointers and
// scalars by value, so that nothing is reloaded per element (captured by reference, the scalars
// may alias the stores and were reloaded each time, in 4-wide SSE code).
template <class T>
[[gnu::always_inline]] inline void adam_span(T* __restrict w, const T* __restrict g, T* __restrict m,
                                             T* __restrict v, T* __restrict vhat, int64_t begin, int64_t end,
                                             T scale, T hi, T decay, T alpha, T one_minus_b1, T one_minus_b2,
                                             T eps) {
  auto grad = [=](T x) {
    x *= scale;
    return x < -hi ? -hi : (x > hi ? hi : x);
  };
  if (vhat) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      const T gi = grad(g[i]);
      const T mi = m[i] + (gi - m[i]) * one_minus_b1;
      const T vi = v[i] + (gi * gi - v[i]) * one_minus_b2;
      const T h = vhat[i] > vi ? vhat[i] : vi;
      m[i] = mi;
      v[i] = vi;
      vhat[i] = h;
      w[i] = (w[i] - w[i] * decay) - (mi * alpha) / (std::sqrt(h) + eps);
    }
  } else {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      const T gi = grad(g[i]);
      const T mi = m[i] + (gi - m[i]) * one_minus_b1;
      const T vi = v[i] + (gi * gi - v[i]) * one_minus_b2;
      m[i] = mi;
      v[i] = vi;
      w[i] = (w[i] - w[i] * decay) - (mi * alpha) / (std::sqrt(vi) + eps);
    }
  }
}

// The float32 span compiled for AVX-512, AVX2 and the baseline: this pass is a quarter of a small
// MLP's training step.
__attribute__((target_clones("avx512f", "avx2", "default"))) void adam_span_f32(
    float* w, const float* g, float* m, float* v, float* vhat, int64_t begin, int64_t end, float scale, float hi,
    float decay, float alpha, float one_minus_b1, float one_minus_b2, float eps) {
  adam_span(w, g, m, v, vhat, begin, end, scale, hi, decay, alpha, one_minus_b1, one_minus_b2, eps);
}

// Accumulated in double so that the norm of a large float32 gradient keeps its precision.
// (Pragmas cannot sit inside the KERAS_REGISTER_KERNEL macro argument, hence a function.)
template <class T>
double sum_squares(const T* x, int64_t n) {
  double total = 0;
#pragma omp parallel for simd reduction(+ : total) schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i) total += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return total;
}

template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(const_cast<Tensor&>(t).raw_data());
}

// Calls f(T{}) for float32/float64 variables.
template <class F>
void dispatch_float(DType dtype, const std::string& op, F&& f) {
  if (dtype == DType::float32) f(float{});
  else if (dtype == DType::float64) f(double{});
  else fail<TypeError>("op '" + op + "'", "float32 or float64", dtype_name(dtype));
}

const char* const kSgdNames[] = {"var", "grad", "momentum", nullptr, nullptr};
const char* const kAdamNames[] = {"var", "grad", "momentum", "velocity", "velocity_hat"};
const char* const kRmsNames[] = {"var", "grad", "velocity", "momentum", "average_gradient"};
const char* const kAdagradNames[] = {"var", "grad", "accumulator", nullptr, nullptr};

}  // namespace

// ---- SGD ----
KERAS_REGISTER_OP(sgd_update) {
  def.mutates_inputs = true;
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    size_t count = a.get_float("momentum", 0.0) != 0.0 ? 3 : 2;
    return check_update_inputs("sgd_update", in, count, kSgdNames);
  };
}
KERAS_REGISTER_KERNEL(sgd_update, cpu, [](const TensorList& in, TensorList&, const Attrs& a) {
  dispatch_float(in[0].dtype(), "sgd_update", [&](auto tag) {
    using T = decltype(tag);
    const Prep<T> prep(a);
    const T lr = static_cast<T>(a.get_float("learning_rate"));
    const T mu = static_cast<T>(a.get_float("momentum", 0.0));
    T* w = ptr<T>(in[0]);
    const T* g = ptr<T>(in[1]);
    const int64_t n = in[0].numel();
    if (in.size() == 2) {
      for_each_index(n, [&](int64_t i) { w[i] = prep.decayed(w[i]) - prep.grad(g[i]) * lr; });
      return;
    }
    T* m = ptr<T>(in[2]);
    if (a.get_bool("nesterov", false)) {
      for_each_index(n, [&](int64_t i) {
        const T gi = prep.grad(g[i]);
        const T mi = -gi * lr + m[i] * mu;
        m[i] = mi;
        w[i] = prep.decayed(w[i]) + (-gi * lr + mi * mu);
      });
    } else {
      for_each_index(n, [&](int64_t i) {
        const T mi = -prep.grad(g[i]) * lr + m[i] * mu;
        m[i] = mi;
        w[i] = prep.decayed(w[i]) + mi;
      });
    }
  });
});

// ---- Adam / AdamW (AdamW differs only by the decay attribute) ----
KERAS_REGISTER_OP(adam_update) {
  def.mutates_inputs = true;
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    return check_update_inputs("adam_update", in, a.get_bool("amsgrad", false) ? 5 : 4, kAdamNames);
  };
}
KERAS_REGISTER_KERNEL(adam_update, cpu, [](const TensorList& in, TensorList&, const Attrs& a) {
  dispatch_float(in[0].dtype(), "adam_update", [&](auto tag) {
    using T = decltype(tag);
    const Prep<T> prep(a);
    const double lr = a.get_float("learning_rate");
    const double b1 = a.get_float("beta_1"), b2 = a.get_float("beta_2");
    const double t = static_cast<double>(a.get_int("step"));
    // Bias correction folded into the step size, as Keras does.
    const T alpha = static_cast<T>(lr * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t)));
    const T one_minus_b1 = static_cast<T>(1.0 - b1), one_minus_b2 = static_cast<T>(1.0 - b2);
    const T eps = static_cast<T>(a.get_float("epsilon"));
    T* w = ptr<T>(in[0]);
    const T* g = ptr<T>(in[1]);
    T* m = ptr<T>(in[2]);
    T* v = ptr<T>(in[3]);
    const int64_t n = in[0].numel();
    T* vhat = in.size() == 5 ? ptr<T>(in[4]) : nullptr;
    for_each_span(n, [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<T, float>)
        adam_span_f32(w, g, m, v, vhat, begin, end, prep.scale, prep.hi, prep.decay, alpha, one_minus_b1,
                      one_minus_b2, eps);
      else
        adam_span(w, g, m, v, vhat, begin, end, prep.scale, prep.hi, prep.decay, alpha, one_minus_b1, one_minus_b2,
                  eps);
    });
  });
});

// ---- RMSprop ----
KERAS_REGISTER_OP(rmsprop_update) {
  def.mutates_inputs = true;
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    size_t count = 3 + (a.get_float("momentum", 0.0) > 0 ? 1 : 0) + (a.get_bool("centered", false) ? 1 : 0);
    if (count == 4 && a.get_bool("centered", false)) {
      // Centered without momentum: the average gradient sits where momentum would.
      static const char* const names[] = {"var", "grad", "velocity", "average_gradient", nullptr};
      return check_update_inputs("rmsprop_update", in, count, names);
    }
    return check_update_inputs("rmsprop_update", in, count, kRmsNames);
  };
}
KERAS_REGISTER_KERNEL(rmsprop_update, cpu, [](const TensorList& in, TensorList&, const Attrs& a) {
  dispatch_float(in[0].dtype(), "rmsprop_update", [&](auto tag) {
    using T = decltype(tag);
    const Prep<T> prep(a);
    const T lr = static_cast<T>(a.get_float("learning_rate"));
    const T rho = static_cast<T>(a.get_float("rho"));
    const T one_minus_rho = static_cast<T>(1.0 - a.get_float("rho"));
    const T mu = static_cast<T>(a.get_float("momentum", 0.0));
    const T eps = static_cast<T>(a.get_float("epsilon"));
    const bool use_momentum = a.get_float("momentum", 0.0) > 0;
    const bool centered = a.get_bool("centered", false);
    T* w = ptr<T>(in[0]);
    const T* g = ptr<T>(in[1]);
    T* vel = ptr<T>(in[2]);
    T* mom = use_momentum ? ptr<T>(in[3]) : nullptr;
    T* avg = centered ? ptr<T>(in[use_momentum ? 4 : 3]) : nullptr;
    const int64_t n = in[0].numel();
    for_each_index(n, [&](int64_t i) {
      const T gi = prep.grad(g[i]);
      const T vi = rho * vel[i] + one_minus_rho * gi * gi;
      vel[i] = vi;
      T denom = vi + eps;
      if (centered) {
        const T ai = rho * avg[i] + one_minus_rho * gi;
        avg[i] = ai;
        denom = vi - ai * ai + eps;
      }
      const T increment = lr * gi / std::sqrt(denom);
      T wi = prep.decayed(w[i]);
      if (use_momentum) {
        const T mi = mu * mom[i] + increment;
        mom[i] = mi;
        wi -= mi;
      } else {
        wi -= increment;
      }
      w[i] = wi;
    });
  });
});

// ---- Adagrad ----
KERAS_REGISTER_OP(adagrad_update) {
  def.mutates_inputs = true;
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
    return check_update_inputs("adagrad_update", in, 3, kAdagradNames);
  };
}
KERAS_REGISTER_KERNEL(adagrad_update, cpu, [](const TensorList& in, TensorList&, const Attrs& a) {
  dispatch_float(in[0].dtype(), "adagrad_update", [&](auto tag) {
    using T = decltype(tag);
    const Prep<T> prep(a);
    const T lr = static_cast<T>(a.get_float("learning_rate"));
    const T eps = static_cast<T>(a.get_float("epsilon"));
    T* w = ptr<T>(in[0]);
    const T* g = ptr<T>(in[1]);
    T* acc = ptr<T>(in[2]);
    for_each_index(in[0].numel(), [&](int64_t i) {
      const T gi = prep.grad(g[i]);
      const T ai = acc[i] + gi * gi;
      acc[i] = ai;
      w[i] = prep.decayed(w[i]) - lr * gi / std::sqrt(ai + eps);
    });
  });
});

// ---- sum of squares (clipnorm, global_clipnorm) ----
KERAS_REGISTER_OP(sum_squares_f64) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
    if (in.size() != 1) fail<ValueError>("op 'sum_squares_f64'", "1 input", std::to_string(in.size()) + " inputs");
    if (!is_floating(in[0].dtype))
      fail<TypeError>("op 'sum_squares_f64'", "a floating tensor", dtype_name(in[0].dtype));
    return std::vector<TensorSpec>{{Shape{}, DType::float64}};
  };
}
KERAS_REGISTER_KERNEL(sum_squares_f64, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  double total = 0;
  dispatch_float(in[0].dtype(), "sum_squares_f64", [&](auto tag) {
    using T = decltype(tag);
    total = sum_squares(ptr<T>(in[0]), in[0].numel());
  });
  *out[0].data<double>() = total;
});

}  // namespace keras
