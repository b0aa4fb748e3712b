// Plain-loop kernels of rnn_sequence and its backward (backpropagation through time), float32 and
// float64, for every kind, mask and elementwise activation pair Keras allows. They follow Keras's
// cells line by line (keras/src/layers/rnn/{lstm,gru,simple_rnn}.py) and the masking of
// keras/src/backend/tensorflow/rnn.py, and are what the oneDNN path is tested against.
//
// The input projection x @ kernel + bias is one GEMM over all steps; each step then adds
// h @ recurrent_kernel. Activations run through the activation reference kernels on contiguous
// (batch, units) blocks, so the workspace keeps one block per gate: step s, slot k at
// ws[(s * slots + k) * B * U]. Slots: the G' pre-activations (G' = gates, plus c_t for LSTM,
// whose activation gives h = o * act(c)), their activations, h_{t-1}, and c_{t-1} (LSTM) or the
// GRU's candidate input (reset_after: the recurrent projection of h; else r * h_{t-1}).
#include <cstring>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "backend/cpu/activation_reference.h"
#include "backend/cpu/dispatch_floating.h"
#include "backend/cpu/rnn_kernels.h"

namespace keras::cpu {
namespace {

// Row-major C = op(A) op(B) + beta * C with leading dimensions (oneDNN's sgemm for float32).
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
          T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  auto scale_c = [&] {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
  };
  if constexpr (std::is_same_v<T, float>) {
    if (k == 0) return scale_c();  // sgemm refuses K = 0; the product is empty
    if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.f, a, lda, b, ldb, beta, c, ldc) != dnnl_success)
      fail<ValueError>("rnn_sequence (sgemm)", "valid GEMM dims", std::to_string(m) + "x" + std::to_string(n) + "x" +
                                                                     std::to_string(k));
  } else {
    scale_c();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) {
        T av = ta ? a[p * lda + i] : a[i * lda + p];
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] += av * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      }
  }
}

// A Keras activation by name, as the activation kernels know it (Keras's default parameters).
struct Activation {
  bool linear = false;
  Eltwise kind = Eltwise::tanh;
  double alpha = 0;

  static Activation of(const std::string& name) {
    static const std::vector<std::pair<std::string, Activation>> table = {
        {"linear", {true}}, {"relu", {false, Eltwise::relu}}, {"leaky_relu", {false, Eltwise::leaky_relu, 0.2}},
        {"relu6", {false, Eltwise::relu6}}, {"elu", {false, Eltwise::elu, 1.0}}, {"selu", {false, Eltwise::selu}},
        {"gelu", {false, Eltwise::gelu_erf}}, {"silu", {false, Eltwise::silu}}, {"swish", {false, Eltwise::silu}},
        {"sigmoid", {false, Eltwise::sigmoid}}, {"hard_sigmoid", {false, Eltwise::hard_sigmoid}},
        {"hard_silu", {false, Eltwise::hard_silu}}, {"hard_swish", {false, Eltwise::hard_silu}},
        {"tanh", {false, Eltwise::tanh}}, {"softplus", {false, Eltwise::softplus}},
        {"softsign", {false, Eltwise::softsign}}, {"exponential", {false, Eltwise::exponential}}};
    for (const auto& [n, act] : table)
      if (n == name) return act;
    fail<ValueError>("rnn_sequence", "an elementwise Keras activation", "'" + name + "'");
  }
  void forward(const Tensor& pre, Tensor& out) const {
    if (linear) out.copy_from(pre);
    else eltwise_forward_reference(kind, pre, out, alpha);
  }
  // dpre = dact * f'(pre), from whichever of pre / act the kernel reads.
  void backward(const Tensor& dact, const Tensor& pre, const Tensor& act, Tensor& dpre) const {
    if (linear) dpre.copy_from(dact);
    else eltwise_backward_reference(kind, dact, eltwise_uses_output(kind) ? act : pre, dpre, alpha);
  }
};

struct Layout {
  int64_t B, T, I, U, G, GU, Gp, slots;
  explicit Layout(const RnnProblem& p)
      : B(p.batch), T(p.time), I(p.input), U(p.units), G(p.gates), GU(p.gates * p.units),
        Gp(p.gates + (p.lstm() ? 1 : 0)), slots(2 * Gp + 1 + (p.kind == "simple_rnn" ? 0 : 1)) {}
  int64_t pre(int64_t k) const { return k; }
  int64_t act(int64_t k) const { return Gp + k; }
  int64_t h_prev() const { return 2 * Gp; }
  int64_t extra() const { return 2 * Gp + 1; }  // c_{t-1} (LSTM) or the GRU candidate input
};

template <class T>
struct Steps {
  const Layout& L;
  Tensor ws;  // (T * slots, B, U)
  Tensor block(int64_t s, int64_t k) const { return ws.slice_batch(s * L.slots + k, s * L.slots + k + 1); }
  T* at(int64_t s, int64_t k) const { return block(s, k).template data<T>(); }
};

bool valid(const RnnProblem& p, const bool* mask, int64_t b, int64_t t) { return !p.masked || mask[b * p.time + t]; }

template <class T>
void forward_typed(const RnnProblem& p, const TensorList& in, TensorList& out) {
  Layout L(p);
  const int64_t B = L.B, U = L.U, GU = L.GU, BU = B * U;
  const T* x = in[0].data<T>();
  const T* K = in[1].data<T>();
  const T* R = in[2].data<T>();
  const T* bias = in[3].data<T>();
  const bool* mask = p.masked ? in[p.mask_index()].data<bool>() : nullptr;
  Activation act = Activation::of(p.activation), rec_act = Activation::of(p.recurrent_activation);
  RnnWorkspace ws = RnnWorkspace::allocate(L.T * L.slots * BU, p.dtype);
  Steps<T> st{L, ws.flat.view({L.T * L.slots, B, U})};
  out.push_back(ws.handle);

  std::vector<T> xw(B * L.T * GU);  // (B, T, GU): x @ kernel + input bias
  gemm<T>(false, false, B * L.T, GU, L.I, x, L.I, K, GU, T(0), xw.data(), GU);
  for (int64_t r = 0; r < B * L.T; ++r)
    for (int64_t j = 0; j < GU; ++j) xw[r * GU + j] += bias[j];
  const T* rec_bias = p.gru() && p.reset_after ? bias + GU : nullptr;

  std::vector<T> h(in[4].data<T>(), in[4].data<T>() + BU), c, prev_out(BU, T(0));
  if (p.lstm()) c.assign(in[5].data<T>(), in[5].data<T>() + BU);
  std::vector<T> rh(B * GU), h_new(BU), c_new(c.size());
  T* y = out[0].data<T>();
  // Gates whose pre-activation is x-projection + h-projection (the GRU candidate comes later).
  const int64_t direct_gates = p.gru() ? 2 : L.G;
  for (int64_t s = 0; s < L.T; ++s) {
    const int64_t t = p.time_of(s);
    std::memcpy(st.at(s, L.h_prev()), h.data(), sizeof(T) * BU);
    if (p.lstm()) std::memcpy(st.at(s, L.extra()), c.data(), sizeof(T) * BU);
    gemm<T>(false, false, B, p.gru() && !p.reset_after ? 2 * U : GU, U, h.data(), U, R, GU, T(0), rh.data(), GU);
    if (rec_bias)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < GU; ++j) rh[b * GU + j] += rec_bias[j];
    for (int64_t g = 0; g < direct_gates; ++g) {
      T* pre = st.at(s, L.pre(g));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t u = 0; u < U; ++u)
          pre[b * U + u] = xw[(b * L.T + t) * GU + g * U + u] + rh[b * GU + g * U + u];
      Tensor act_block = st.block(s, L.act(g));
      bool candidate = p.lstm() && g == 2;  // LSTM's c~ takes `activation`
      (p.kind == "simple_rnn" || candidate ? act : rec_act).forward(st.block(s, L.pre(g)), act_block);
    }
    if (p.lstm()) {
      const T *i = st.at(s, L.act(0)), *f = st.at(s, L.act(1)), *cc = st.at(s, L.act(2)), *o = st.at(s, L.act(3));
      T* ct = st.at(s, L.pre(4));
      for (int64_t k = 0; k < BU; ++k) ct[k] = f[k] * c[k] + i[k] * cc[k];
      Tensor act_c = st.block(s, L.act(4));
      act.forward(st.block(s, L.pre(4)), act_c);
      const T* ac = st.at(s, L.act(4));
      for (int64_t k = 0; k < BU; ++k) h_new[k] = o[k] * ac[k], c_new[k] = ct[k];
    } else if (p.gru()) {
      const T *z = st.at(s, L.act(0)), *r = st.at(s, L.act(1));
      T* aux = st.at(s, L.extra());
      T* pre_h = st.at(s, L.pre(2));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t u = 0; u < U; ++u) {
          int64_t k = b * U + u;
          aux[k] = p.reset_after ? rh[b * GU + 2 * U + u] : r[k] * h[k];
        }
      if (!p.reset_after) gemm<T>(false, false, B, U, U, aux, U, R + 2 * U, GU, T(0), pre_h, U);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t u = 0; u < U; ++u) {
          int64_t k = b * U + u;
          T xh = xw[(b * L.T + t) * GU + 2 * U + u];
          pre_h[k] = p.reset_after ? xh + r[k] * aux[k] : xh + pre_h[k];
        }
      Tensor act_h = st.block(s, L.act(2));
      act.forward(st.block(s, L.pre(2)), act_h);
      const T* hh = st.at(s, L.act(2));
      for (int64_t k = 0; k < BU; ++k)
        h_new[k] = z[k] * h[k] + (T(1) - z[k]) * hh[k];
    } else {
      std::memcpy(h_new.data(), st.at(s, L.act(0)), sizeof(T) * BU);
    }
    for (int64_t b = 0; b < B; ++b) {
      bool keep = valid(p, mask, b, t);
      for (int64_t u = 0; u < U; ++u) {
        size_t k = b * U + u;
        if (keep) {
          h[k] = h_new[k];
          if (p.lstm()) c[k] = c_new[k];
        }
        T o = keep ? h_new[k] : (p.zero_output_for_mask ? T(0) : prev_out[k]);
        y[(b * L.T + s) * U + u] = prev_out[k] = o;
      }
    }
  }
  std::memcpy(out[1].data<T>(), h.data(), sizeof(T) * BU);
  if (p.lstm()) std::memcpy(out[2].data<T>(), c.data(), sizeof(T) * BU);
}

template <class T>
void backward_typed(const RnnProblem& p, const TensorList& in, TensorList& out) {
  Layout L(p);
  const int64_t B = L.B, U = L.U, GU = L.GU, BU = B * U;
  const size_t n_in = p.forward_input_count(), n_state = p.state_count();
  const T* x = in[0].data<T>();
  const T* K = in[1].data<T>();
  const T* R = in[2].data<T>();
  const bool* mask = p.masked ? in[p.mask_index()].data<bool>() : nullptr;
  Steps<T> st{L, RnnWorkspace::of(in[n_in + 1 + n_state], L.T * L.slots * BU).view({L.T * L.slots, B, U})};
  const T* dy = in[n_in + 2 + n_state].data<T>();
  Activation act = Activation::of(p.activation), rec_act = Activation::of(p.recurrent_activation);
  for (auto& t : out) t.fill_(0);
  T* dR = out[2].data<T>();
  T* dbias = out[3].data<T>();

  std::vector<T> dh(in[n_in + 3 + n_state].data<T>(), in[n_in + 3 + n_state].data<T>() + BU), dc;
  if (p.lstm()) dc.assign(in[n_in + 4 + n_state].data<T>(), in[n_in + 4 + n_state].data<T>() + BU);
  std::vector<T> dprev(BU, T(0)), dxw(B * L.T * GU, T(0));
  std::vector<T> drh(B * GU), dhp(BU), tmp(BU);
  Tensor dact = Tensor::empty({L.Gp, B, U}, p.dtype), dpre = Tensor::empty({L.Gp, B, U}, p.dtype);
  std::vector<T*> da, dp;  // per-gate blocks of dact and dpre
  for (int64_t g = 0; g < L.Gp; ++g) {
    da.push_back(dact.data<T>() + g * BU);
    dp.push_back(dpre.data<T>() + g * BU);
  }
  auto act_backward = [&](const Activation& a, int64_t s, int64_t g) {
    Tensor d = dpre.slice_batch(g, g + 1);
    a.backward(dact.slice_batch(g, g + 1), st.block(s, L.pre(g)), st.block(s, L.act(g)), d);
  };
  std::vector<T> dh_cell(BU), dc_cell(dc.size());
  for (int64_t s = L.T - 1; s >= 0; --s) {
    const int64_t t = p.time_of(s);
    // The output gradient reaches the new h at valid rows and the previous output at masked ones.
    for (int64_t b = 0; b < B; ++b) {
      bool keep = valid(p, mask, b, t);
      for (int64_t u = 0; u < U; ++u) {
        size_t k = b * U + u;
        T g_out = dy[(b * L.T + s) * U + u] + dprev[k];
        dh_cell[k] = keep ? dh[k] + g_out : T(0);
        if (p.lstm()) dc_cell[k] = keep ? dc[k] : T(0);
        dprev[k] = keep || p.zero_output_for_mask ? T(0) : g_out;
      }
    }
    const T* hp = st.at(s, L.h_prev());
    std::fill(dhp.begin(), dhp.end(), T(0));
    if (p.lstm()) {
      const T *i = st.at(s, L.act(0)), *f = st.at(s, L.act(1)), *cc = st.at(s, L.act(2)), *o = st.at(s, L.act(3));
      const T *ac = st.at(s, L.act(4)), *cp = st.at(s, L.extra());
      for (int64_t k = 0; k < BU; ++k) da[3][k] = dh_cell[k] * ac[k], da[4][k] = dh_cell[k] * o[k];
      act_backward(act, s, 4);
      const T* dct_from_h = dp[4];
      for (int64_t k = 0; k < BU; ++k) {
        T dct = dc_cell[k] + dct_from_h[k];
        da[0][k] = dct * cc[k], da[1][k] = dct * cp[k], da[2][k] = dct * i[k];
        tmp[k] = dct * f[k];  // dc_{t-1}
      }
      for (int64_t g : {0, 1, 3}) act_backward(rec_act, s, g);
      act_backward(act, s, 2);
    } else if (p.gru()) {
      const T *z = st.at(s, L.act(0)), *r = st.at(s, L.act(1)), *hh = st.at(s, L.act(2)), *aux = st.at(s, L.extra());
      for (int64_t k = 0; k < BU; ++k) {
        T d = dh_cell[k];
        da[0][k] = d * (hp[k] - hh[k]), da[2][k] = d * (T(1) - z[k]), dhp[k] = d * z[k];
      }
      act_backward(act, s, 2);
      const T* dph = dp[2];
      if (p.reset_after) {
        for (int64_t b = 0; b < B; ++b)
          for (int64_t u = 0; u < U; ++u) {
            int64_t k = b * U + u;
            da[1][k] = dph[k] * aux[k];
            drh[b * GU + 2 * U + u] = dph[k] * r[k];
          }
      } else {
        gemm<T>(false, true, B, U, U, dph, U, R + 2 * U, GU, T(0), tmp.data(), U);  // d(r * h_{t-1})
        gemm<T>(true, false, U, U, B, aux, U, dph, U, T(1), dR + 2 * U, GU);
        for (int64_t k = 0; k < BU; ++k) {
          da[1][k] = tmp[k] * hp[k];
          dhp[k] += tmp[k] * r[k];
        }
      }
      act_backward(rec_act, s, 0);
      act_backward(rec_act, s, 1);
    } else {
      std::memcpy(da[0], dh_cell.data(), sizeof(T) * BU);
      act_backward(act, s, 0);
    }
    // Gate gradients -> (B, GU) rows: the x-projection's gradient and the h-projection's.
    const int64_t rec_cols = p.gru() && !p.reset_after ? 2 * U : GU;
    for (int64_t g = 0; g < L.G; ++g) {
      const T* d = dp[g];
      for (int64_t b = 0; b < B; ++b)
        for (int64_t u = 0; u < U; ++u) {
          T v = d[b * U + u];
          dxw[(b * L.T + t) * GU + g * U + u] = v;
          if (g * U < rec_cols && !(p.gru() && p.reset_after && g == 2)) drh[b * GU + g * U + u] = v;
        }
    }
    gemm<T>(true, false, U, rec_cols, B, hp, U, drh.data(), GU, T(1), dR, GU);
    gemm<T>(false, true, B, U, rec_cols, drh.data(), GU, R, GU, T(1), dhp.data(), U);
    if (p.gru() && p.reset_after)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < GU; ++j) dbias[GU + j] += drh[b * GU + j];
    for (int64_t b = 0; b < B; ++b) {
      if (!valid(p, mask, b, t)) continue;  // masked: the state gradients pass through unchanged
      for (int64_t u = 0; u < U; ++u) {
        size_t k = b * U + u;
        dh[k] = dhp[k];
        if (p.lstm()) dc[k] = tmp[k];
      }
    }
  }
  gemm<T>(false, true, B * L.T, L.I, GU, dxw.data(), GU, K, GU, T(0), out[0].data<T>(), L.I);
  gemm<T>(true, false, L.I, GU, B * L.T, x, L.I, dxw.data(), GU, T(0), out[1].data<T>(), GU);
  for (int64_t r = 0; r < B * L.T; ++r)
    for (int64_t j = 0; j < GU; ++j) dbias[j] += dxw[r * GU + j];
  std::memcpy(out[4].data<T>(), dh.data(), sizeof(T) * BU);
  if (p.lstm()) std::memcpy(out[5].data<T>(), dc.data(), sizeof(T) * BU);
}

}  // namespace

void rnn_reference_forward(const RnnProblem& p, const TensorList& inputs, TensorList& outputs) {
  dispatch_floating(p.dtype, "rnn_sequence", [&](auto tag) { forward_typed<decltype(tag)>(p, inputs, outputs); });
}

void rnn_reference_backward(const RnnProblem& p, const TensorList& inputs, TensorList& outputs) {
  dispatch_floating(p.dtype, "rnn_sequence_backward",
                    [&](auto tag) { backward_typed<decltype(tag)>(p, inputs, outputs); });
}

}  // namespace keras::cpu
