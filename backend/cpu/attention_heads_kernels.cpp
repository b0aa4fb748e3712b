// CPU kernels of attention_heads and attention_heads_grad (definitions and semantics:
// backend/ops_attention_heads.cpp). Query, key and value stay in the projections' layout
// (batch, time, heads, features): each (batch, head) pair is a set of small strided GEMMs (row
// stride heads * features), so no transposes to and from (batch, heads, time, features) are
// needed, and the scale rides on the GEMM's alpha. Each OpenMP iteration runs everything of one pair
// (oneDNN's sgemm and softmax run sequentially inside a parallel region) while its (Tq, Tk) scores
// are in the thread's cache: the forward's two GEMMs around the softmax (oneDNN's, for its
// vectorised exp), the backward's four GEMMs around the softmax gradient over a per-thread scratch.
//
// float32 runs oneDNN's sgemm; float64 runs plain loops (the gradient checks' reference).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "backend/cpu/activation_reference.h"
#include "backend/cpu/dispatch_floating.h"
#include "backend/op_registry.h"

namespace keras::cpu {
namespace {

// Row-major C = alpha * op(A) @ op(B) + beta * C; op(A) is m x k, op(B) is k x n. A transposed
// operand is stored as its transpose with the given leading dimension.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) != dnnl_success)
    fail<Error>("attention_heads (cpu)", "a successful oneDNN sgemm", "an error status",
                       "Shapes m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = alpha * s + (beta == 0 ? 0.0 : beta * c[i * ldc + j]);
    }
}

// Extents of one call: q (B, Tq, H, D), k (B, Tk, H, D), v (B, Tk, H, Dv) with row strides ldq,
// ldk, ldv (H * D and H * Dv for separate tensors, 3 * H * D inside a packed (B, T, 3, H, D) one);
// out (B, Tq, H, Dv) and probs (B, H, Tq, Tk) contiguous. Gradients share their input's layout.
struct Geometry {
  int64_t B, Tq, Tk, H, D, Dv, ldq, ldk, ldv;
  int64_t pairs() const { return B * H; }
  // Offsets of pair p = b * H + h in each tensor.
  int64_t q_at(int64_t p) const { return (p / H) * Tq * ldq + (p % H) * D; }
  int64_t k_at(int64_t p) const { return (p / H) * Tk * ldk + (p % H) * D; }
  int64_t v_at(int64_t p) const { return (p / H) * Tk * ldv + (p % H) * Dv; }
  int64_t o_at(int64_t p) const { return (p / H) * Tq * H * Dv + (p % H) * Dv; }
  int64_t s_at(int64_t p) const { return p * Tq * Tk; }
};

Geometry separate(const Tensor& q, const Tensor& v) {
  const Shape &a = q.shape(), &c = v.shape();
  return {a[0], a[1], c[1], a[2], a[3], c[3], a[2] * a[3], a[2] * a[3], c[2] * c[3]};
}

// qkv (B, T, 3, H, D): q, k and v interleaved per row.
Geometry packed(const Tensor& qkv) {
  const Shape& a = qkv.shape();
  const int64_t ld = 3 * a[3] * a[4];
  return {a[0], a[1], a[1], a[3], a[4], a[4], ld, ld, ld};
}

// Where q, k and v (or their gradients) start.
template <class T>
struct Triple {
  T *q, *k, *v;
};

template <class T>
const T* ptr(const Tensor& t) { return static_cast<const T*>(t.raw_data()); }
template <class T>
T* ptr(Tensor& t) { return static_cast<T*>(t.raw_data()); }

// Softmax in place over the rows of one pair's (Tq, Tk) scores: oneDNN's (vectorised exp) for
// float32, plain loops for float64.
std::function<void(float*)> pair_softmax(const Geometry& g, float) { return softmax_rows_in_place(g.Tq, g.Tk); }

std::function<void(double*)> pair_softmax(const Geometry& g, double) {
  return [rows = g.Tq, len = g.Tk](double* s) {
    for (double* row = s; row < s + rows * len; row += len) {
      const double m = *std::max_element(row, row + len);
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += (row[j] = std::exp(row[j] - m));
      for (int64_t j = 0; j < len; ++j) row[j] /= sum;
    }
  };
}

// out = softmax(scale * q k^T) v per pair; probs = the softmax. A pair's scores are softmaxed and
// multiplied by v while they are in the thread's cache (three passes over all pairs' scores,
// which outgrow the caches, cost more than the softmax itself).
template <class T>
void forward_typed(const Geometry& g, Triple<const T> in, double scale, Tensor& out, Tensor& probs) {
  const int64_t ldo = g.H * g.Dv;
  const T *pq = in.q, *pk = in.k, *pv = in.v;
  T *po = ptr<T>(out), *ps = ptr<T>(probs);
  const T alpha = static_cast<T>(scale);
  const auto softmax = pair_softmax(g, T{});
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < g.pairs(); ++p) {
    T* s = ps + g.s_at(p);
    gemm(false, true, g.Tq, g.Tk, g.D, alpha, pq + g.q_at(p), g.ldq, pk + g.k_at(p), g.ldk, T(0), s, g.Tk);
    softmax(s);
    gemm(false, false, g.Tq, g.Dv, g.Tk, T(1), s, g.Tk, pv + g.v_at(p), g.ldv, T(0), po + g.o_at(p), ldo);
  }
}

// d = p * (d - sum(d * p)) over one row of n: the softmax gradient, in place.
template <class T>
inline void softmax_row_grad(const T* __restrict p, int64_t n, T* __restrict d) {
  T dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int64_t k = 0; k < n; ++k) dot += d[k] * p[k];
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) d[k] = p[k] * (d[k] - dot);
}

// With S = scale * q k^T, P = softmax(S), out = P v:
//   dv = P^T dout;  dP = dout v^T + dprobs;  dS = P * (dP - rowsum(dP * P));
//   dq = scale * dS k;  dk = scale * dS^T q.
template <class T>
void backward_typed(const Geometry& g, const Tensor& dout, const Tensor& dprobs, Triple<const T> in, const Tensor& probs,
                    double scale, Triple<T> grad) {
  const int64_t ldo = g.H * g.Dv;
  const T *pdo = ptr<T>(dout), *pq = in.q, *pk = in.k, *pv = in.v, *ps = ptr<T>(probs);
  T *pdq = grad.q, *pdk = grad.k, *pdv = grad.v;
  const T* pdp = dprobs.numel() ? ptr<T>(dprobs) : nullptr;  // none: the probabilities got no gradient
  const T alpha = static_cast<T>(scale);
  // One pass per pair: dP and dS live in a (Tq, Tk) scratch of the thread, hot in cache.
#pragma omp parallel
  {
    std::vector<T> scratch(static_cast<size_t>(g.Tq * g.Tk));
    T* d = scratch.data();
#pragma omp for schedule(static)
    for (int64_t p = 0; p < g.pairs(); ++p) {
      const T* P = ps + g.s_at(p);
      gemm(true, false, g.Tk, g.Dv, g.Tq, T(1), P, g.Tk, pdo + g.o_at(p), ldo, T(0), pdv + g.v_at(p), g.ldv);
      if (pdp) std::memcpy(d, pdp + g.s_at(p), sizeof(T) * static_cast<size_t>(g.Tq * g.Tk));
      gemm(false, true, g.Tq, g.Tk, g.Dv, T(1), pdo + g.o_at(p), ldo, pv + g.v_at(p), g.ldv, T(pdp ? 1 : 0), d, g.Tk);
      for (int64_t i = 0; i < g.Tq; ++i) softmax_row_grad(P + i * g.Tk, g.Tk, d + i * g.Tk);
      gemm(false, false, g.Tq, g.D, g.Tk, alpha, d, g.Tk, pk + g.k_at(p), g.ldk, T(0), pdq + g.q_at(p), g.ldq);
      gemm(true, false, g.Tk, g.D, g.Tq, alpha, d, g.Tk, pq + g.q_at(p), g.ldq, T(0), pdk + g.k_at(p), g.ldk);
    }
  }
}

template <class T>
Triple<const T> separate_inputs(const Tensor& q, const Tensor& k, const Tensor& v) {
  return {ptr<T>(q), ptr<T>(k), ptr<T>(v)};
}

// q, k, v of a packed (B, T, 3, H, D) buffer: each row holds q's H * D values, then k's, then v's.
template <class P>
Triple<P> packed_parts(P* qkv, const Geometry& g) {
  return {qkv, qkv + g.H * g.D, qkv + 2 * g.H * g.D};
}

void zero_all(TensorList& out) {
  for (Tensor& t : out)
    if (t.numel()) std::memset(t.raw_data(), 0, t.nbytes());
}

// attention_heads(q, k, v) -> (out, probs); attr scale.
void attention_heads_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  if (out[0].numel() == 0 && out[1].numel() == 0) return;
  if (in[1].shape()[1] == 0) {  // no keys: nothing to attend to
    std::memset(out[0].raw_data(), 0, out[0].nbytes());
    return;
  }
  dispatch_floating(in[0].dtype(), "attention_heads (cpu)", [&](auto tag) {
    using T = decltype(tag);
    forward_typed<T>(separate(in[0], in[2]), separate_inputs<const T>(in[0], in[1], in[2]), a.get_float("scale"), out[0],
                     out[1]);
  });
}

// attention_heads_grad(dout, dprobs, q, k, v, probs) -> (dq, dk, dv); attr scale.
void attention_heads_grad_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  if (in[5].numel() == 0) return zero_all(out);  // no scores: no gradient reaches q, k or v
  dispatch_floating(in[2].dtype(), "attention_heads_grad (cpu)", [&](auto tag) {
    using T = decltype(tag);
    backward_typed<T>(separate(in[2], in[4]), in[0], in[1], separate_inputs<const T>(in[2], in[3], in[4]), in[5],
                      a.get_float("scale"), Triple<T>{ptr<T>(out[0]), ptr<T>(out[1]), ptr<T>(out[2])});
  });
}

// attention_heads_packed(qkv) -> (out, probs); attr scale.
void attention_heads_packed_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  if (out[0].numel() == 0 && out[1].numel() == 0) return;
  dispatch_floating(in[0].dtype(), "attention_heads_packed (cpu)", [&](auto tag) {
    using T = decltype(tag);
    const Geometry g = packed(in[0]);
    forward_typed<T>(g, packed_parts(ptr<T>(in[0]), g), a.get_float("scale"), out[0], out[1]);
  });
}

// attention_heads_packed_grad(dout, dprobs, qkv, probs) -> dqkv; attr scale. Every element of
// dqkv belongs to one pair's dq, dk or dv columns: all are written.
void attention_heads_packed_grad_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  if (in[3].numel() == 0) return zero_all(out);
  dispatch_floating(in[2].dtype(), "attention_heads_packed_grad (cpu)", [&](auto tag) {
    using T = decltype(tag);
    const Geometry g = packed(in[2]);
    backward_typed<T>(g, in[0], in[1], packed_parts(ptr<T>(in[2]), g), in[3], a.get_float("scale"),
                      packed_parts(ptr<T>(out[0]), g));
  });
}

}  // namespace

KERAS_REGISTER_KERNEL(attention_heads, cpu, attention_heads_cpu);
KERAS_REGISTER_KERNEL(attention_heads_grad, cpu, attention_heads_grad_cpu);
KERAS_REGISTER_KERNEL(attention_heads_packed, cpu, attention_heads_packed_cpu);
KERAS_REGISTER_KERNEL(attention_heads_packed_grad, cpu, attention_heads_packed_grad_cpu);

}  // namespace keras::cpu
