// Elementwise step kernels of the fused recurrent op (contract: backend/cuda/rnn_kernels.h). One
// thread per (batch row, unit) of a step: it reads that element's projections, runs the gates,
// activations and state update, and writes the workspace slots, the output and the next state,
// so no element is shared between threads and no atomics are needed (deterministic).
// Activations and their derivatives follow backend/cpu/activation_kernels.cpp's plain loops
// formula for formula (NaN passes through the forwards the same way).
#include "backend/cuda/device_utils.cuh"
#include "backend/cuda/rnn_kernels.h"

namespace keras::cuda::kernels {
namespace {

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kInvSqrt2 = 0.70710678118654752440084436210485;
constexpr double kInvSqrt2Pi = 0.39894228040143267793994605993438;
constexpr double kLeakyReluAlpha = 0.2;  // Keras's leaky_relu default negative_slope
constexpr double kEluAlpha = 1.0;

// Explicit float/double overloads: the precision of the math call follows T, never promotes.
__device__ inline float m_exp(float v) { return expf(v); }
__device__ inline double m_exp(double v) { return exp(v); }
__device__ inline float m_expm1(float v) { return expm1f(v); }
__device__ inline double m_expm1(double v) { return expm1(v); }
__device__ inline float m_tanh(float v) { return tanhf(v); }
__device__ inline double m_tanh(double v) { return tanh(v); }
__device__ inline float m_erf(float v) { return erff(v); }
__device__ inline double m_erf(double v) { return erf(v); }
__device__ inline float m_log1p(float v) { return log1pf(v); }
__device__ inline double m_log1p(double v) { return log1p(v); }
__device__ inline float m_abs(float v) { return fabsf(v); }
__device__ inline double m_abs(double v) { return fabs(v); }
// std::max / std::min as the CPU calls them: (a < b) ? b : a and (b < a) ? b : a.
template <class T>
__device__ inline T m_max(T a, T b) { return a < b ? b : a; }
template <class T>
__device__ inline T m_min(T a, T b) { return b < a ? b : a; }

template <class T>
__device__ inline T sigmoid_of(T v) {
  T e = m_exp(-m_abs(v));  // exp of a non-positive argument only: neither branch overflows
  return v >= 0 ? T(1) / (T(1) + e) : e / (T(1) + e);
}

template <class T>
__device__ T activate(RnnAct a, T v) {
  const T sa = T(kSeluAlpha), ss = T(kSeluScale), r2 = T(kInvSqrt2);
  switch (a) {
    case RnnAct::linear: return v;
    case RnnAct::relu: return v > 0 || v != v ? v : T(0);
    case RnnAct::leaky_relu: return v > 0 ? v : T(kLeakyReluAlpha) * v;
    case RnnAct::relu6: return m_min(m_max(v, T(0)), T(6));
    case RnnAct::elu: return v > 0 ? v : T(kEluAlpha) * m_expm1(v);
    case RnnAct::selu: return ss * (v > 0 ? v : sa * m_expm1(v));
    case RnnAct::gelu_erf: return T(0.5) * v * (T(1) + m_erf(v * r2));
    case RnnAct::sigmoid: return sigmoid_of(v);
    case RnnAct::hard_sigmoid: return m_min(m_max(v + T(3), T(0)), T(6)) / T(6);
    case RnnAct::hard_silu: return v * m_min(m_max(v + T(3), T(0)), T(6)) / T(6);
    case RnnAct::tanh: return m_tanh(v);
    case RnnAct::softplus: return m_max(v, T(0)) + m_log1p(m_exp(-m_abs(v)));
    case RnnAct::softsign: return v / (T(1) + m_abs(v));
    case RnnAct::silu: return v * sigmoid_of(v);
    case RnnAct::exponential: return m_exp(v);
  }
  return v;
}

// d pre = g * f'(pre), reading the output y for relu, sigmoid, tanh and exponential and the
// input x otherwise, as the CPU kernels do (it matters at relu's kink and for rounding).
template <class T>
__device__ T activation_grad(RnnAct a, T g, T x, T y) {
  const T sa = T(kSeluAlpha), ss = T(kSeluScale), r2 = T(kInvSqrt2), ip = T(kInvSqrt2Pi);
  switch (a) {
    case RnnAct::linear: return g;
    case RnnAct::relu: return y > 0 ? g : T(0);
    case RnnAct::leaky_relu: return x > 0 ? g : T(kLeakyReluAlpha) * g;
    case RnnAct::relu6: return x > 0 && x < 6 ? g : T(0);
    case RnnAct::elu: return x > 0 ? g : g * T(kEluAlpha) * m_exp(x);
    case RnnAct::selu: return x > 0 ? g * ss : g * ss * sa * m_exp(x);
    case RnnAct::gelu_erf: return g * (T(0.5) * (T(1) + m_erf(x * r2)) + x * ip * m_exp(T(-0.5) * x * x));
    case RnnAct::sigmoid: return g * y * (T(1) - y);
    case RnnAct::hard_sigmoid: return x > -3 && x < 3 ? g / T(6) : T(0);
    case RnnAct::hard_silu: return x <= T(-3) ? T(0) : x >= T(3) ? g : g * (T(2) * x + T(3)) / T(6);
    case RnnAct::tanh: return g * (T(1) - y * y);
    case RnnAct::softplus: return g * sigmoid_of(x);
    case RnnAct::softsign: {
      T d = T(1) + m_abs(x);
      return g / (d * d);
    }
    case RnnAct::silu: {
      T p = sigmoid_of(x);
      return g * (p + x * p * (T(1) - p));
    }
    case RnnAct::exponential: return g * y;
  }
  return g;
}

// ---- forward ----

// Element k = b * U + u of one forward step: its inputs and slots.
template <class T>
struct ForwardElement {
  const RnnForwardStep& p;
  int64_t k, b, u;
  __device__ T& slot(int64_t kk) const { return static_cast<T*>(p.ws)[p.L.at(kk, p.s) + k]; }
  // x-projection plus input bias, then (separately, as the CPU adds them) the h-projection.
  __device__ T xv(int64_t g) const {
    const int64_t gu = p.L.G * p.L.U, j = g * p.L.U + u;
    return static_cast<const T*>(p.xw)[(b * p.L.T + p.t) * gu + j] + static_cast<const T*>(p.bias)[j];
  }
  __device__ T rv(int64_t g) const {
    const int64_t j = g * p.L.U + u;
    T r = static_cast<const T*>(p.rh)[b * p.L.G * p.L.U + j];
    return p.rbias ? r + static_cast<const T*>(p.rbias)[j] : r;
  }
  // Pre-activation of gate g into its slot, activation into its slot; returns the activation.
  __device__ T gate(int64_t g, T pre, RnnAct a) const {
    slot(p.L.pre(g)) = pre;
    T v = activate(a, pre);
    slot(p.L.act(g)) = v;
    return v;
  }
};

template <class T>
__global__ void forward_gru_gates_kernel(RnnForwardStep p) {
  const int64_t U = p.L.U;
  KERAS_GRID_LOOP(k, p.L.B * U) {
    ForwardElement<T> e{p, k, k / U, k % U};
    e.gate(0, e.xv(0) + e.rv(0), p.rec_act);
    T r = e.gate(1, e.xv(1) + e.rv(1), p.rec_act);
    e.slot(p.L.extra()) = r * e.slot(p.L.h_prev());
  }
}

template <class T>
__global__ void forward_step_kernel(RnnForwardStep p) {
  const RnnLayout& L = p.L;
  const int64_t U = L.U, Tn = L.T;
  KERAS_GRID_LOOP(k, L.B * U) {
    const int64_t b = k / U, u = k % U;
    ForwardElement<T> e{p, k, b, u};
    const T hp = e.slot(L.h_prev());
    T hn, cn = T(0), cp = T(0);
    switch (L.cell) {
      case RnnCell::lstm: {
        T i = e.gate(0, e.xv(0) + e.rv(0), p.rec_act);
        T f = e.gate(1, e.xv(1) + e.rv(1), p.rec_act);
        T cc = e.gate(2, e.xv(2) + e.rv(2), p.act);  // LSTM's candidate takes `activation`
        T o = e.gate(3, e.xv(3) + e.rv(3), p.rec_act);
        cp = e.slot(L.extra());
        cn = f * cp + i * cc;
        hn = o * e.gate(4, cn, p.act);
        break;
      }
      case RnnCell::gru_after: {
        T z = e.gate(0, e.xv(0) + e.rv(0), p.rec_act);
        T r = e.gate(1, e.xv(1) + e.rv(1), p.rec_act);
        T aux = e.rv(2);
        e.slot(L.extra()) = aux;
        T hh = e.gate(2, e.xv(2) + r * aux, p.act);
        hn = z * hp + (T(1) - z) * hh;
        break;
      }
      case RnnCell::gru_before: {
        T z = e.slot(L.act(0));
        T hh = e.gate(2, e.xv(2) + e.slot(L.pre(2)), p.act);  // the pre slot holds (r * h) @ R_h
        hn = z * hp + (T(1) - z) * hh;
        break;
      }
      case RnnCell::simple: hn = e.gate(0, e.xv(0) + e.rv(0), p.act); break;
    }
    const bool keep = p.mask == nullptr || p.mask[b * Tn + p.t];
    T* y = static_cast<T*>(p.y);
    // A masked step repeats the previous output (zeros before the first step) unless zeroed.
    T out = keep ? hn : (p.zero_output_for_mask || p.s == 0 ? T(0) : y[(b * Tn + p.s - 1) * U + u]);
    y[(b * Tn + p.s) * U + u] = out;
    static_cast<T*>(p.h_next)[k] = keep ? hn : hp;
    if (L.cell == RnnCell::lstm) static_cast<T*>(p.c_next)[k] = keep ? cn : cp;
  }
}

// ---- backward ----

template <class T>
struct BackwardElement {
  const RnnBackwardStep& p;
  int64_t k, b, u;
  __device__ T slot(int64_t kk) const { return static_cast<const T*>(p.ws)[p.L.at(kk, p.s) + k]; }
  // Gate g's pre-activation gradient through activation a, from the activation's gradient.
  __device__ T grad(int64_t g, T dact, RnnAct a) const { return activation_grad(a, dact, slot(p.L.pre(g)), slot(p.L.act(g))); }
  __device__ void put_dg(int64_t g, T v) const {
    const int64_t gu = p.L.G * p.L.U;
    static_cast<T*>(p.dg)[(b * p.L.T + p.t) * gu + g * p.L.U + u] = v;
  }
  __device__ void put_drh(int64_t g, T v) const {
    const int64_t gu = p.L.G * p.L.U;
    static_cast<T*>(p.drh)[(p.s * p.L.B + b) * gu + g * p.L.U + u] = v;
  }
  __device__ void put(int64_t g, T v) const { put_dg(g, v), put_drh(g, v); }
  __device__ bool keep() const { return p.mask == nullptr || p.mask[b * p.L.T + p.t]; }
};

template <class T>
__global__ void backward_step_kernel(RnnBackwardStep p) {
  const RnnLayout& L = p.L;
  const int64_t U = L.U;
  KERAS_GRID_LOOP(k, L.B * U) {
    BackwardElement<T> e{p, k, k / U, k % U};
    const bool keep = e.keep();
    T* dprev = static_cast<T*>(p.dprev);
    // The output gradient reaches the new h at valid rows and the previous output at masked ones.
    const T g_out = static_cast<const T*>(p.dy)[(e.b * L.T + p.s) * U + e.u] + dprev[k];
    const T dh_cell = keep ? static_cast<const T*>(p.dh)[k] + g_out : T(0);
    dprev[k] = keep || p.zero_output_for_mask ? T(0) : g_out;
    T* dhp = static_cast<T*>(p.dhp);
    switch (L.cell) {
      case RnnCell::lstm: {
        const T dc_cell = keep ? static_cast<const T*>(p.dc)[k] : T(0);
        const T i = e.slot(L.act(0)), f = e.slot(L.act(1)), cc = e.slot(L.act(2)), o = e.slot(L.act(3));
        const T ac = e.slot(L.act(4)), cp = e.slot(L.extra());
        const T dct = dc_cell + e.grad(4, dh_cell * o, p.act);
        e.put(0, e.grad(0, dct * cc, p.rec_act));
        e.put(1, e.grad(1, dct * cp, p.rec_act));
        e.put(2, e.grad(2, dct * i, p.act));
        e.put(3, e.grad(3, dh_cell * ac, p.rec_act));
        static_cast<T*>(p.dcp)[k] = dct * f;
        dhp[k] = T(0);
        break;
      }
      case RnnCell::gru_after:
      case RnnCell::gru_before: {
        const T z = e.slot(L.act(0)), r = e.slot(L.act(1)), hh = e.slot(L.act(2)), aux = e.slot(L.extra());
        const T hp = e.slot(L.h_prev());
        const T dph = e.grad(2, dh_cell * (T(1) - z), p.act);
        e.put(0, e.grad(0, dh_cell * (hp - hh), p.rec_act));
        dhp[k] = dh_cell * z;
        e.put_dg(2, dph);
        if (L.cell == RnnCell::gru_after) {
          e.put_drh(2, dph * r);
          e.put(1, e.grad(1, dph * aux, p.rec_act));
        } else {
          e.put_drh(2, dph);  // for the GEMMs of d(r * h_{t-1}) and of recurrent_kernel[:, 2U:]
        }
        break;
      }
      case RnnCell::simple: {
        e.put(0, e.grad(0, dh_cell, p.act));
        dhp[k] = T(0);
        break;
      }
    }
  }
}

template <class T>
__global__ void backward_gru_gates_kernel(RnnBackwardStep p) {
  const int64_t U = p.L.U;
  KERAS_GRID_LOOP(k, p.L.B * U) {
    BackwardElement<T> e{p, k, k / U, k % U};
    const T tmp = static_cast<const T*>(p.tmp)[k];
    const T r = e.slot(p.L.act(1));
    e.put(1, e.grad(1, tmp * e.slot(p.L.h_prev()), p.rec_act));
    static_cast<T*>(p.dhp)[k] += tmp * r;
  }
}

template <class T>
__global__ void backward_state_kernel(RnnBackwardStep p) {
  const int64_t U = p.L.U;
  KERAS_GRID_LOOP(k, p.L.B * U) {
    BackwardElement<T> e{p, k, k / U, k % U};
    if (!e.keep()) continue;  // masked: the state gradients pass through unchanged
    static_cast<T*>(p.dh)[k] = static_cast<const T*>(p.dhp)[k];
    if (p.L.cell == RnnCell::lstm) static_cast<T*>(p.dc)[k] = static_cast<const T*>(p.dcp)[k];
  }
}

template <class T>
__global__ void column_sum_kernel(const T* m, int64_t rows, int64_t cols, int64_t ld, T* out) {
  KERAS_GRID_LOOP(j, cols) {
    double acc = 0;  // rows in order: deterministic
    for (int64_t r = 0; r < rows; ++r) acc += static_cast<double>(m[r * ld + j]);
    out[j] = static_cast<T>(acc);
  }
}

template <class P, class K>
void launch(DType t, const P& p, K kernel_f, K kernel_d, cudaStream_t stream) {
  const int64_t n = p.L.B * p.L.U;
  if (n == 0) return;
  if (t == DType::float32) kernel_f<<<blocks_for(n), kThreads, 0, stream>>>(p);
  else if (t == DType::float64) kernel_d<<<blocks_for(n), kThreads, 0, stream>>>(p);
}

}  // namespace

void rnn_forward_step(DType t, const RnnForwardStep& p, cudaStream_t stream) {
  launch(t, p, &forward_step_kernel<float>, &forward_step_kernel<double>, stream);
}

void rnn_forward_gru_gates(DType t, const RnnForwardStep& p, cudaStream_t stream) {
  launch(t, p, &forward_gru_gates_kernel<float>, &forward_gru_gates_kernel<double>, stream);
}

void rnn_backward_step(DType t, const RnnBackwardStep& p, cudaStream_t stream) {
  launch(t, p, &backward_step_kernel<float>, &backward_step_kernel<double>, stream);
}

void rnn_backward_gru_gates(DType t, const RnnBackwardStep& p, cudaStream_t stream) {
  launch(t, p, &backward_gru_gates_kernel<float>, &backward_gru_gates_kernel<double>, stream);
}

void rnn_backward_state(DType t, const RnnBackwardStep& p, cudaStream_t stream) {
  launch(t, p, &backward_state_kernel<float>, &backward_state_kernel<double>, stream);
}

void rnn_column_sum(DType t, const void* m, int64_t rows, int64_t cols, int64_t ld, void* out, cudaStream_t stream) {
  if (cols == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    column_sum_kernel<T><<<blocks_for(cols), kThreads, 0, stream>>>(static_cast<const T*>(m), rows, cols, ld,
                                                                     static_cast<T*>(out));
  });
}

}  // namespace keras::cuda::kernels
