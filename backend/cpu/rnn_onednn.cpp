// oneDNN kernels of rnn_sequence and its backward: lstm, gru (reset_after=False), lbr_gru
// (linear-before-reset = Keras's reset_after=True) and vanilla_rnn primitives, float32, no mask.
//
// Keras's layouts map onto oneDNN's without moving data: oneDNN's gate orders are Keras's (LSTM
// i, f, c~, o; GRU u, r, o = Keras z, r, h), a Keras kernel (in, G*units) is oneDNN's plain
// `ldigo` with L = D = 1, x (batch, time, in) is `ntc`, states (batch, units) are `ldnc`. The
// primitives pick their own weight layouts (format `any`); the reorders from and to Keras's are
// built with the primitive and cached with it in cpu::primitive_cache() under a key of every
// dimension, the kind, activation and propagation kind. go_backwards runs the time-reversed input
// left to right, so the outputs come out in processed order as Keras returns them.
// lbr_gru's bias has four rows (z and r with the input and recurrent biases summed, then the
// candidate's input and recurrent biases): built from, and reduced back to, Keras's (2, 3*units).
#include <cstring>
#include <optional>
#include <unordered_map>
#include <vector>

#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/rnn_kernels.h"

namespace keras::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

bool lbr(const RnnProblem& p) { return p.gru() && p.reset_after; }
int64_t bias_gates(const RnnProblem& p) { return p.gates + (lbr(p) ? 1 : 0); }

// The plain (Keras-layout) descriptors of every argument.
struct Descs {
  memory::desc src_layer, iter, w_layer, w_iter, bias, dst_layer;
  explicit Descs(const RnnProblem& p)
      : src_layer({p.time, p.batch, p.input}, f32, Tag::ntc),
        iter({1, 1, p.batch, p.units}, f32, Tag::ldnc),
        w_layer({1, 1, p.input, p.gates, p.units}, f32, Tag::ldigo),
        w_iter({1, 1, p.units, p.gates, p.units}, f32, Tag::ldigo),
        bias({1, 1, bias_gates(p), p.units}, f32, Tag::ldgo),
        dst_layer({p.time, p.batch, p.units}, f32, Tag::ntc) {}
};

memory::desc any(const memory::desc& d) { return memory::desc(d.dims(), f32, Tag::any); }

dnnl::algorithm vanilla_activation(const std::string& act) {
  if (act == "tanh") return dnnl::algorithm::eltwise_tanh;
  if (act == "relu") return dnnl::algorithm::eltwise_relu;
  if (act == "sigmoid") return dnnl::algorithm::eltwise_logistic;
  fail<NotImplementedError>("rnn_sequence (oneDNN)", "SimpleRNN activation tanh, relu or sigmoid", "'" + act + "'");
}

constexpr auto l2r = dnnl::rnn_direction::unidirectional_left2right;

// Calls f(forward primitive_desc) with the concrete type of the problem's kind.
template <class F>
void with_forward_pd(const RnnProblem& p, dnnl::prop_kind prop, F&& f) {
  Descs d(p);
  auto& eng = dnnl_engine();
  memory::desc wl = any(d.w_layer), wi = any(d.w_iter);
  if (p.lstm()) {
    f(dnnl::lstm_forward::primitive_desc(dnnl::lstm_forward::desc(prop, l2r, d.src_layer, d.iter, d.iter, wl, wi, d.bias,
                                                                  d.dst_layer, d.iter, d.iter),
                                         own_scratchpad(), eng));
  } else if (lbr(p)) {
    f(dnnl::lbr_gru_forward::primitive_desc(
        dnnl::lbr_gru_forward::desc(prop, l2r, d.src_layer, d.iter, wl, wi, d.bias, d.dst_layer, d.iter), own_scratchpad(), eng));
  } else if (p.gru()) {
    f(dnnl::gru_forward::primitive_desc(
        dnnl::gru_forward::desc(prop, l2r, d.src_layer, d.iter, wl, wi, d.bias, d.dst_layer, d.iter), own_scratchpad(), eng));
  } else {
    f(dnnl::vanilla_rnn_forward::primitive_desc(
        dnnl::vanilla_rnn_forward::desc(prop, vanilla_activation(p.activation), l2r, d.src_layer, d.iter, wl, wi,
                                        d.bias, d.dst_layer, d.iter),
        own_scratchpad(), eng));
  }
}

// Calls f(backward primitive_desc), hinted by the training forward.
template <class F>
void with_backward_pd(const RnnProblem& p, F&& f) {
  Descs d(p);
  auto& eng = dnnl_engine();
  memory::desc wl = any(d.w_layer), wi = any(d.w_iter);
  const auto bwd = dnnl::prop_kind::backward;
  with_forward_pd(p, dnnl::prop_kind::forward_training, [&](const auto& fwd) {
    using Fwd = std::decay_t<decltype(fwd)>;
    if constexpr (std::is_same_v<Fwd, dnnl::lstm_forward::primitive_desc>) {
      f(dnnl::lstm_backward::primitive_desc(
          dnnl::lstm_backward::desc(bwd, l2r, d.src_layer, d.iter, d.iter, wl, wi, d.bias, d.dst_layer, d.iter, d.iter,
                                    d.src_layer, d.iter, d.iter, wl, wi, d.bias, d.dst_layer, d.iter, d.iter),
          own_scratchpad(), eng, fwd));
    } else if constexpr (std::is_same_v<Fwd, dnnl::lbr_gru_forward::primitive_desc>) {
      f(dnnl::lbr_gru_backward::primitive_desc(
          dnnl::lbr_gru_backward::desc(bwd, l2r, d.src_layer, d.iter, wl, wi, d.bias, d.dst_layer, d.iter, d.src_layer,
                                       d.iter, wl, wi, d.bias, d.dst_layer, d.iter),
          own_scratchpad(), eng, fwd));
    } else if constexpr (std::is_same_v<Fwd, dnnl::gru_forward::primitive_desc>) {
      f(dnnl::gru_backward::primitive_desc(
          dnnl::gru_backward::desc(bwd, l2r, d.src_layer, d.iter, wl, wi, d.bias, d.dst_layer, d.iter, d.src_layer,
                                   d.iter, wl, wi, d.bias, d.dst_layer, d.iter),
          own_scratchpad(), eng, fwd));
    } else {
      f(dnnl::vanilla_rnn_backward::primitive_desc(
          dnnl::vanilla_rnn_backward::desc(bwd, vanilla_activation(p.activation), l2r, d.src_layer, d.iter, wl, wi,
                                           d.bias, d.dst_layer, d.iter, d.src_layer, d.iter, wl, wi, d.bias,
                                           d.dst_layer, d.iter),
          own_scratchpad(), eng, fwd));
    }
  });
}

// A cached primitive with the weight layouts it wants and the reorders to and from Keras's.
struct Entry {
  dnnl::primitive prim;
  memory::desc w_layer, w_iter, workspace, diff_w_layer, diff_w_iter;
  std::optional<dnnl::reorder> to_w_layer, to_w_iter, from_diff_w_layer, from_diff_w_iter;
};

std::optional<dnnl::reorder> reorder_if_needed(const memory::desc& from, const memory::desc& to) {
  if (from == to) return std::nullopt;
  return make_reorder(from, to);
}

std::string key_of(const std::string& op, const RnnProblem& p) {
  KeyBuilder k(op);
  k.add(p.kind).add(p.activation).add(p.recurrent_activation).add(int64_t{p.reset_after});
  k.add(Shape{p.batch, p.time, p.input, p.units, p.gates});
  return k.str();
}

std::shared_ptr<Entry> forward_entry(const RnnProblem& p) {
  return primitive_cache().get<Entry>(key_of(p.training ? "rnn_fwd_training" : "rnn_fwd_inference", p), [&] {
    auto e = std::make_shared<Entry>();
    Descs d(p);
    auto prop = p.training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    with_forward_pd(p, prop, [&](const auto& pd) {
      e->prim = dnnl::primitive(pd);
      e->w_layer = pd.weights_layer_desc(), e->w_iter = pd.weights_iter_desc();
      e->workspace = pd.workspace_desc();
    });
    e->to_w_layer = reorder_if_needed(d.w_layer, e->w_layer);
    e->to_w_iter = reorder_if_needed(d.w_iter, e->w_iter);
    return e;
  });
}

std::shared_ptr<Entry> backward_entry(const RnnProblem& p) {
  return primitive_cache().get<Entry>(key_of("rnn_bwd", p), [&] {
    auto e = std::make_shared<Entry>();
    Descs d(p);
    with_backward_pd(p, [&](const auto& pd) {
      e->prim = dnnl::primitive(pd);
      e->w_layer = pd.weights_layer_desc(), e->w_iter = pd.weights_iter_desc();
      e->workspace = pd.workspace_desc();
      e->diff_w_layer = pd.diff_weights_layer_desc(), e->diff_w_iter = pd.diff_weights_iter_desc();
    });
    e->to_w_layer = reorder_if_needed(d.w_layer, e->w_layer);
    e->to_w_iter = reorder_if_needed(d.w_iter, e->w_iter);
    e->from_diff_w_layer = reorder_if_needed(e->diff_w_layer, d.w_layer);
    e->from_diff_w_iter = reorder_if_needed(e->diff_w_iter, d.w_iter);
    return e;
  });
}

// The opaque workspace in float32 words.
int64_t workspace_words(const Entry& e) { return static_cast<int64_t>((e.workspace.get_size() + 3) / 4); }

// The Keras weight `w` in the primitive's layout `want`: wrapped as is, or reordered.
memory weights_for(const Tensor& w, const memory::desc& keras, const memory::desc& want,
                   const std::optional<dnnl::reorder>& reorder) {
  memory src = wrap(w, keras);
  if (!reorder) return src;
  memory dst(want, dnnl_engine());
  execute_reorder(*reorder, src, dst);
  return dst;
}

// x (B, T, C) with its time axis reversed into `out`.
void reverse_time(const float* x, float* out, int64_t batch, int64_t time, int64_t channels) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < time; ++t)
      std::memcpy(out + (b * time + t) * channels, x + (b * time + time - 1 - t) * channels, sizeof(float) * channels);
}

// oneDNN's bias from Keras's (lbr_gru: four rows from Keras's two).
std::vector<float> onednn_bias(const RnnProblem& p, const Tensor& bias) {
  const float* b = bias.data<float>();
  const int64_t U = p.units, GU = p.gates * U;
  if (!lbr(p)) return std::vector<float>(b, b + GU);
  std::vector<float> out(4 * U);
  for (int64_t j = 0; j < 2 * U; ++j) out[j] = b[j] + b[GU + j];
  for (int64_t j = 0; j < U; ++j) out[2 * U + j] = b[2 * U + j], out[3 * U + j] = b[GU + 2 * U + j];
  return out;
}

}  // namespace

bool rnn_onednn_supports(const RnnProblem& p) {
  if (p.dtype != DType::float32 || p.masked) return false;
  if (p.kind == "simple_rnn") return p.activation == "tanh" || p.activation == "relu" || p.activation == "sigmoid";
  return p.activation == "tanh" && p.recurrent_activation == "sigmoid";
}

void rnn_onednn_forward(const RnnProblem& p, const TensorList& in, TensorList& out) {
  if (!rnn_onednn_supports(p))
    fail<NotImplementedError>("rnn_sequence (oneDNN)", "float32, no mask and oneDNN's activations",
                              dtype_name(p.dtype) + ", " + p.kind + " " + p.activation + "/" + p.recurrent_activation);
  Descs d(p);
  auto e = forward_entry(p);
  std::vector<float> x_rev, bias = onednn_bias(p, in[3]);
  memory src = wrap(in[0], d.src_layer);
  if (p.go_backwards) {
    x_rev.resize(in[0].numel());
    reverse_time(in[0].data<float>(), x_rev.data(), p.batch, p.time, p.input);
    src = memory(d.src_layer, dnnl_engine(), x_rev.data());
  }
  RnnWorkspace ws = RnnWorkspace::allocate(workspace_words(*e), DType::float32);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC_LAYER, src},
      {DNNL_ARG_SRC_ITER, wrap(in[4], d.iter)},
      {DNNL_ARG_WEIGHTS_LAYER, weights_for(in[1], d.w_layer, e->w_layer, e->to_w_layer)},
      {DNNL_ARG_WEIGHTS_ITER, weights_for(in[2], d.w_iter, e->w_iter, e->to_w_iter)},
      {DNNL_ARG_BIAS, memory(d.bias, dnnl_engine(), bias.data())},
      {DNNL_ARG_DST_LAYER, wrap(out[0], d.dst_layer)},
      {DNNL_ARG_DST_ITER, wrap(out[1], d.iter)}};
  if (p.lstm()) {
    args.emplace(DNNL_ARG_SRC_ITER_C, wrap(in[5], d.iter));
    args.emplace(DNNL_ARG_DST_ITER_C, wrap(out[2], d.iter));
  }
  if (p.training) args.emplace(DNNL_ARG_WORKSPACE, memory(e->workspace, dnnl_engine(), ws.flat.raw_data()));
  execute(e->prim, args);
  dnnl_stream().wait();
  out.push_back(ws.handle);
}

void rnn_onednn_backward(const RnnProblem& p, const TensorList& in, TensorList& out) {
  Descs d(p);
  auto e = backward_entry(p);
  auto& eng = dnnl_engine();
  const size_t n_in = p.forward_input_count(), n_state = p.state_count();
  const Tensor& y = in[n_in];
  Tensor ws = RnnWorkspace::of(in[n_in + 1 + n_state], workspace_words(*e));
  const Tensor& dy = in[n_in + 2 + n_state];
  std::vector<float> x_rev, dx_rev, bias = onednn_bias(p, in[3]), dbias(bias.size(), 0.f);
  memory src = wrap(in[0], d.src_layer), diff_src = wrap(out[0], d.src_layer);
  if (p.go_backwards) {
    x_rev.resize(in[0].numel());
    dx_rev.resize(in[0].numel());
    reverse_time(in[0].data<float>(), x_rev.data(), p.batch, p.time, p.input);
    src = memory(d.src_layer, eng, x_rev.data());
    diff_src = memory(d.src_layer, eng, dx_rev.data());
  }
  // Gradients of the weights may be accumulated by the primitive: start from zeros.
  memory dwl = e->from_diff_w_layer ? memory(e->diff_w_layer, eng) : wrap(out[1], d.w_layer);
  memory dwi = e->from_diff_w_iter ? memory(e->diff_w_iter, eng) : wrap(out[2], d.w_iter);
  for (memory* m : {&dwl, &dwi}) std::memset(m->get_data_handle(), 0, m->get_desc().get_size());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC_LAYER, src},
      {DNNL_ARG_SRC_ITER, wrap(in[4], d.iter)},
      {DNNL_ARG_WEIGHTS_LAYER, weights_for(in[1], d.w_layer, e->w_layer, e->to_w_layer)},
      {DNNL_ARG_WEIGHTS_ITER, weights_for(in[2], d.w_iter, e->w_iter, e->to_w_iter)},
      {DNNL_ARG_BIAS, memory(d.bias, eng, bias.data())},
      {DNNL_ARG_DST_LAYER, wrap(y, d.dst_layer)},
      {DNNL_ARG_DST_ITER, wrap(in[n_in + 1], d.iter)},
      {DNNL_ARG_WORKSPACE, memory(e->workspace, eng, const_cast<void*>(ws.raw_data()))},
      {DNNL_ARG_DIFF_SRC_LAYER, diff_src},
      {DNNL_ARG_DIFF_SRC_ITER, wrap(out[4], d.iter)},
      {DNNL_ARG_DIFF_WEIGHTS_LAYER, dwl},
      {DNNL_ARG_DIFF_WEIGHTS_ITER, dwi},
      {DNNL_ARG_DIFF_BIAS, memory(d.bias, eng, dbias.data())},
      {DNNL_ARG_DIFF_DST_LAYER, wrap(dy, d.dst_layer)},
      {DNNL_ARG_DIFF_DST_ITER, wrap(in[n_in + 3 + n_state], d.iter)}};
  if (p.lstm()) {
    args.emplace(DNNL_ARG_SRC_ITER_C, wrap(in[5], d.iter));
    args.emplace(DNNL_ARG_DST_ITER_C, wrap(in[n_in + 2], d.iter));
    args.emplace(DNNL_ARG_DIFF_SRC_ITER_C, wrap(out[5], d.iter));
    args.emplace(DNNL_ARG_DIFF_DST_ITER_C, wrap(in[n_in + 4 + n_state], d.iter));
  }
  execute(e->prim, args);
  if (e->from_diff_w_layer) {
    memory keras = wrap(out[1], d.w_layer);
    execute_reorder(*e->from_diff_w_layer, dwl, keras);
  }
  if (e->from_diff_w_iter) {
    memory keras = wrap(out[2], d.w_iter);
    execute_reorder(*e->from_diff_w_iter, dwi, keras);
  }
  dnnl_stream().wait();
  if (p.go_backwards) reverse_time(dx_rev.data(), out[0].data<float>(), p.batch, p.time, p.input);
  float* db = out[3].data<float>();
  const int64_t U = p.units, GU = p.gates * U;
  if (!lbr(p)) {
    std::memcpy(db, dbias.data(), sizeof(float) * GU);
  } else {
    for (int64_t j = 0; j < 2 * U; ++j) db[j] = db[GU + j] = dbias[j];
    for (int64_t j = 0; j < U; ++j) db[2 * U + j] = dbias[2 * U + j], db[GU + 2 * U + j] = dbias[3 * U + j];
  }
}

}  // namespace keras::cpu
