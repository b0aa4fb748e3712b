// oneDNN's float32 and bfloat16 convolutions (see conv_onednn.h); their weights go through weight_cache.h.
#include "backend/cpu/conv_onednn.h"

#include <memory>
#include <optional>
#include <unordered_map>

#include "backend/allocator.h"
#include "backend/cpu/weight_cache.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/errors.h"

namespace keras {
namespace {

using dnnl::memory;
using Dims = memory::dims;

// ---------------- geometry and descriptors ----------------

using Problem = cpu::ConvProblem;

memory::desc act_desc(const Shape& s, memory::data_type dt) {
  return memory::desc({s[0], s[3], s[1], s[2]}, dt, memory::format_tag::nhwc);
}
// Activations as a primitive of `alg` is created with: NHWC, or any layout for Winograd (whose
// oneDNN 2.6 kernels take nChw16c only and refuse NHWC).
memory::desc act_md(const Shape& s, memory::data_type dt, dnnl::algorithm alg) {
  if (alg == dnnl::algorithm::convolution_direct) return act_desc(s, dt);
  return memory::desc({s[0], s[3], s[1], s[2]}, dt, memory::format_tag::any);
}

Dims weight_dims(const Problem& pr) {
  const Shape& k = pr.k;
  if (pr.p.groups == 1) return {k[3], k[2], k[0], k[1]};
  return {pr.p.groups, k[3] / pr.p.groups, k[2], k[0], k[1]};
}

// The Keras kernel's memory as oneDNN's (g,) o, i, h, w dims.
memory::desc keras_weight_desc(const Problem& pr) {
  const Shape& k = pr.k;
  int64_t o = k[3], cg = k[2], kw = k[1];
  Dims h_w_strides{kw * cg * o, cg * o};
  if (pr.p.groups == 1) return memory::desc(weight_dims(pr), pr.dtype, Dims{1, o, h_w_strides[0], h_w_strides[1]});
  return memory::desc(weight_dims(pr), pr.dtype, Dims{o / pr.p.groups, 1, o, h_w_strides[0], h_w_strides[1]});
}

memory::desc weight_any(const Problem& pr) { return memory::desc(weight_dims(pr), pr.dtype, memory::format_tag::any); }
memory::desc bias_desc(const Problem& pr) { return memory::desc({pr.k[3]}, pr.dtype, memory::format_tag::x); }
Dims strides_of(const ConvParams& p) { return {p.stride_h, p.stride_w}; }
Dims dilation_of(const ConvParams& p) { return {p.dilation_h - 1, p.dilation_w - 1}; }  // oneDNN: 0 = none
Dims pad_l(const ConvParams& p) { return {p.pad_top, p.pad_left}; }
Dims pad_r(const ConvParams& p) { return {p.pad_bottom, p.pad_right}; }

cpu::KeyBuilder key_of(const std::string& op, const Problem& pr) {
  cpu::KeyBuilder key(op);
  const ConvParams& p = pr.p;
  key.add(pr.x).add(pr.k).add(pr.y).add(static_cast<int64_t>(pr.dtype));
  key.add(Shape{p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right,
                p.groups});
  return key;
}

dnnl::convolution_forward::primitive_desc forward_pd(const Problem& pr, dnnl::prop_kind prop, bool with_bias,
                                                     const std::string& act, dnnl::algorithm alg, bool with_residual = false) {
  memory::desc src = act_md(pr.x, pr.dtype, alg), dst = act_md(pr.y, pr.dtype, alg);
  auto d = with_bias ? dnnl::convolution_forward::desc(prop, alg, src, weight_any(pr), bias_desc(pr), dst,
                                                       strides_of(pr.p), dilation_of(pr.p), pad_l(pr.p), pad_r(pr.p))
                     : dnnl::convolution_forward::desc(prop, alg, src, weight_any(pr), dst, strides_of(pr.p),
                                                       dilation_of(pr.p), pad_l(pr.p), pad_r(pr.p));
  const memory::desc residual = act_desc(pr.y, pr.dtype);  // NHWC, added before the activation
  return dnnl::convolution_forward::primitive_desc(d, cpu::activation_attr("conv2d", act, with_residual ? &residual : nullptr),
                                                   cpu::dnnl_engine());
}

[[noreturn]] void unsupported(const std::string& op, const std::string& key, const dnnl::error& e) {
  fail<NotImplementedError>(op + " (oneDNN)", "a problem oneDNN supports", key + " (" + e.what() + ")");
}

// ---------------- reorders ----------------

// The cached reorder primitive between two layouts (dnnl::error when oneDNN has none).
std::shared_ptr<dnnl::reorder> reorder_prim(const memory::desc& from, const memory::desc& to, const std::string& key) {
  return cpu::primitive_cache().get<dnnl::reorder>(key, [&] {
    return std::make_shared<dnnl::reorder>(cpu::make_reorder(from, to));
  });
}

std::shared_ptr<dnnl::reorder> weight_reorder(const memory::desc& keras, const memory::desc& wanted,
                                              const std::string& key) {
  if (keras == wanted) return nullptr;
  return reorder_prim(keras, wanted, key);
}

void reorder(memory from, memory to, const std::string& key) {
  cpu::execute_reorder(*reorder_prim(from.get_desc(), to.get_desc(), key), from, to);
}

// ---------------- activations in the primitive's layout ----------------

// A buffer in a primitive's own layout, from the caching allocator: oneDNN's memory(desc, engine)
// would malloc it on every call, and glibc hands megabyte blocks back to the kernel, so each
// Winograd call paid fresh-page faults on its reordered tensors.
struct Scratch {
  std::shared_ptr<Storage> storage;
  memory mem;
  explicit Scratch(const memory::desc& want)
      : storage(std::make_shared<Storage>(want.get_size(), Device::cpu())), mem(want, cpu::dnnl_engine(), storage->data) {}
};

// NHWC `data` as a primitive wants it: wrapped when it takes NHWC (convolution_direct), else
// reordered into `scratch` (Winograd takes oneDNN's blocked nChw16c only).
memory act_in(const memory::desc& want, const Shape& s, const void* data, const std::string& key,
              std::optional<Scratch>& scratch) {
  memory user(act_desc(s, want.data_type()), cpu::dnnl_engine(), const_cast<void*>(data));
  if (want == user.get_desc()) return user;
  scratch.emplace(want);
  reorder(user, scratch->mem, key);
  return scratch->mem;
}

// An output in the primitive's layout; finish() moves it into the NHWC tensor if it was not
// written there directly.
struct ActOut {
  memory user, mem;
  std::optional<Scratch> scratch;
  ActOut(const memory::desc& want, const Shape& s, void* data) : user(act_desc(s, want.data_type()), cpu::dnnl_engine(), data) {
    if (want == user.get_desc()) {
      mem = user;
    } else {
      scratch.emplace(want);
      mem = scratch->mem;
    }
  }
  void finish(const std::string& key) {
    if (scratch) reorder(mem, user, key);
  }
};

// ---------------- forward ----------------

struct FwdEntry {
  bool ok = false;  // false: oneDNN has no such primitive (Winograd only; direct throws)
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
};

std::shared_ptr<FwdEntry> forward_entry(const Problem& pr, bool with_bias, const std::string& act, bool training,
                                        dnnl::algorithm alg, bool with_residual, std::string& key_out) {
  cpu::KeyBuilder key = key_of("conv2d_fwd", pr);
  key.add(std::string(training ? "training" : "inference")).add(static_cast<int64_t>(with_bias)).add(act);
  key.add(static_cast<int64_t>(alg)).add(static_cast<int64_t>(with_residual));
  key_out = key.str();
  return cpu::primitive_cache().get<FwdEntry>(key.str(), [&] {
    auto e = std::make_shared<FwdEntry>();
    try {
      e->pd = forward_pd(pr, training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
                         with_bias, act, alg, with_residual);
      e->prim = dnnl::convolution_forward(e->pd);
      weight_reorder(keras_weight_desc(pr), e->pd.weights_desc(), key.str() + ";weights");
      e->ok = true;
    } catch (const dnnl::error& err) {
      if (alg == dnnl::algorithm::convolution_direct && pr.dtype == memory::data_type::f32 && !with_residual)
        unsupported("conv2d", key.str(), err);
    }
    return e;
  });
}

// ---------------- backward data ----------------

struct BwdDataEntry {
  bool ok = false;
  dnnl::convolution_backward_data::primitive_desc pd;
  dnnl::convolution_backward_data prim;
};

std::shared_ptr<BwdDataEntry> backward_data_entry(const Problem& pr, dnnl::algorithm alg, std::string& key_out) {
  cpu::KeyBuilder key = key_of("conv2d_bwd_data", pr);
  key.add(static_cast<int64_t>(alg));
  key_out = key.str();
  return cpu::primitive_cache().get<BwdDataEntry>(key.str(), [&] {
    auto e = std::make_shared<BwdDataEntry>();
    try {
      auto hint = forward_pd(pr, dnnl::prop_kind::forward_training, false, "linear", alg);
      dnnl::convolution_backward_data::desc d(alg, act_md(pr.x, pr.dtype, alg), weight_any(pr), act_md(pr.y, pr.dtype, alg),
                                              strides_of(pr.p), dilation_of(pr.p), pad_l(pr.p), pad_r(pr.p));
      e->pd = dnnl::convolution_backward_data::primitive_desc(d, cpu::own_scratchpad(), cpu::dnnl_engine(), hint);
      e->prim = dnnl::convolution_backward_data(e->pd);
      weight_reorder(keras_weight_desc(pr), e->pd.weights_desc(), key.str() + ";weights");
      e->ok = true;
    } catch (const dnnl::error& err) {
      if (alg == dnnl::algorithm::convolution_direct && pr.dtype == memory::data_type::f32) unsupported("conv2d_backward_data", key.str(), err);
    }
    return e;
  });
}

// ---------------- backward weights ----------------

struct BwdWeightsEntry {
  bool ok = false;
  dnnl::convolution_backward_weights::primitive_desc pd;
  dnnl::convolution_backward_weights prim;
  bool reorder_out = false;  // diff weights come in oneDNN's layout and go back to Keras's
  dnnl::reorder to_keras;
};

std::shared_ptr<BwdWeightsEntry> backward_weights_entry(const Problem& pr, bool with_bias, dnnl::algorithm alg,
                                                        std::string& key_out) {
  cpu::KeyBuilder key = key_of("conv2d_bwd_weights", pr);
  key.add(static_cast<int64_t>(with_bias)).add(static_cast<int64_t>(alg));
  key_out = key.str();
  return cpu::primitive_cache().get<BwdWeightsEntry>(key.str(), [&] {
    auto e = std::make_shared<BwdWeightsEntry>();
    try {
      auto hint = forward_pd(pr, dnnl::prop_kind::forward_training, with_bias, "linear", alg);
      memory::desc src = act_md(pr.x, pr.dtype, alg), dst = act_md(pr.y, pr.dtype, alg);
      auto d = with_bias ? dnnl::convolution_backward_weights::desc(alg, src, weight_any(pr), bias_desc(pr), dst,
                                                                    strides_of(pr.p), dilation_of(pr.p), pad_l(pr.p),
                                                                    pad_r(pr.p))
                         : dnnl::convolution_backward_weights::desc(alg, src, weight_any(pr), dst, strides_of(pr.p),
                                                                    dilation_of(pr.p), pad_l(pr.p), pad_r(pr.p));
      e->pd = dnnl::convolution_backward_weights::primitive_desc(d, cpu::own_scratchpad(), cpu::dnnl_engine(), hint);
      e->prim = dnnl::convolution_backward_weights(e->pd);
      memory::desc keras = keras_weight_desc(pr);
      e->reorder_out = e->pd.diff_weights_desc() != keras;
      if (e->reorder_out)
        e->to_keras = cpu::make_reorder(e->pd.diff_weights_desc(), keras);
      e->ok = true;
    } catch (const dnnl::error& err) {
      if (alg == dnnl::algorithm::convolution_direct && pr.dtype == memory::data_type::f32) unsupported("conv2d_backward_weights", key.str(), err);
    }
    return e;
  });
}

}  // namespace

namespace cpu {

std::string conv_choice_key(const std::string& direction, const ConvProblem& pr, const std::string& act, bool bias,
                            const std::string& prop) {
  auto dims = [](const Shape& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (i) out += 'x';
      out += std::to_string(s[i]);
    }
    return out;
  };
  const ConvParams& p = pr.p;
  auto pair = [](int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); };
  const char* dtype = pr.dtype == memory::data_type::bf16 ? "|bf16|" : "|f32|";
  return direction + "|" + dims(pr.x) + "|" + dims(pr.k) + "|" + dims(pr.y) + "|s" + pair(p.stride_h, p.stride_w) +
         "|d" + pair(p.dilation_h, p.dilation_w) + "|p" + pair(p.pad_top, p.pad_bottom) + "x" +
         pair(p.pad_left, p.pad_right) + "|g" + std::to_string(p.groups) + dtype + act + "|bias" +
         std::to_string(bias) + "|" + prop;
}

bool onednn_conv_forward_offered(const ConvProblem& pr, bool with_bias, const std::string& act, bool training,
                                 dnnl::algorithm alg, bool with_residual) {
  std::string key;
  return forward_entry(pr, with_bias, act, training, alg, with_residual, key)->ok;
}

bool onednn_conv_backward_data_offered(const ConvProblem& pr, dnnl::algorithm alg) {
  std::string key;
  return backward_data_entry(pr, alg, key)->ok;
}

bool onednn_conv_backward_weights_offered(const ConvProblem& pr, bool with_bias, dnnl::algorithm alg) {
  std::string key;
  return backward_weights_entry(pr, with_bias, alg, key)->ok;
}

void onednn_conv_forward(const Tensor& x, const Tensor& k, const Tensor* bias, Tensor& y, const ConvProblem& pr,
                         const std::string& act, bool training, dnnl::algorithm alg, const Tensor* residual) {
  std::string key;
  auto entry = forward_entry(pr, bias != nullptr, act, training, alg, residual != nullptr, key);
  if (!entry->ok) fail<NotImplementedError>("conv2d (oneDNN)", "a problem oneDNN supports", key);
  auto& eng = cpu::dnnl_engine();
  memory w = cpu::prepared_weights(k, keras_weight_desc(pr), entry->pd.weights_desc(), key + ";weights");
  ActOut dst(entry->pd.dst_desc(), pr.y, y.raw_data());
  std::optional<Scratch> src_scratch;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, act_in(entry->pd.src_desc(), pr.x, x.raw_data(), key + ";src", src_scratch)},
                                       {DNNL_ARG_WEIGHTS, w},
                                       {DNNL_ARG_DST, dst.mem}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(bias_desc(pr), eng, const_cast<void*>(bias->raw_data())));
  if (residual)
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                 memory(act_desc(pr.y, pr.dtype), eng, const_cast<void*>(residual->raw_data())));
  cpu::execute(entry->prim, args);
  dst.finish(key + ";dst");
  cpu::dnnl_stream().wait();
}

void onednn_conv_backward_data(const Tensor& dy, const Tensor& k, Tensor& dx, const ConvProblem& pr,
                               dnnl::algorithm alg) {
  std::string key;
  auto entry = backward_data_entry(pr, alg, key);
  if (!entry->ok) fail<NotImplementedError>("conv2d_backward_data (oneDNN)", "a problem oneDNN supports", key);
  memory w = cpu::prepared_weights(k, keras_weight_desc(pr), entry->pd.weights_desc(), key + ";weights");
  ActOut diff_src(entry->pd.diff_src_desc(), pr.x, dx.raw_data());
  std::optional<Scratch> dy_scratch;
  cpu::execute(entry->prim, {{DNNL_ARG_DIFF_DST, act_in(entry->pd.diff_dst_desc(), pr.y, dy.raw_data(), key + ";diff_dst", dy_scratch)},
                       {DNNL_ARG_WEIGHTS, w},
                       {DNNL_ARG_DIFF_SRC, diff_src.mem}});
  diff_src.finish(key + ";diff_src");
  cpu::dnnl_stream().wait();
}

void onednn_conv_backward_weights(const Tensor& x, const Tensor& dy, TensorList& out, const ConvProblem& pr,
                                  dnnl::algorithm alg) {
  bool with_bias = out.size() > 1;
  std::string key;
  auto entry = backward_weights_entry(pr, with_bias, alg, key);
  if (!entry->ok) fail<NotImplementedError>("conv2d_backward_weights (oneDNN)", "a problem oneDNN supports", key);
  auto& eng = cpu::dnnl_engine();
  memory keras_dk(keras_weight_desc(pr), eng, out[0].raw_data());
  std::optional<Scratch> diff_w_scratch, src_scratch, dy_scratch;
  if (entry->reorder_out) diff_w_scratch.emplace(entry->pd.diff_weights_desc());
  memory diff_w = entry->reorder_out ? diff_w_scratch->mem : keras_dk;
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, act_in(entry->pd.src_desc(), pr.x, x.raw_data(), key + ";src", src_scratch)},
      {DNNL_ARG_DIFF_DST, act_in(entry->pd.diff_dst_desc(), pr.y, dy.raw_data(), key + ";diff_dst", dy_scratch)},
      {DNNL_ARG_DIFF_WEIGHTS, diff_w}};
  if (with_bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(bias_desc(pr), eng, out[1].raw_data()));
  cpu::execute(entry->prim, args);
  if (entry->reorder_out) cpu::execute_reorder(entry->to_keras, diff_w, keras_dk);
  cpu::dnnl_stream().wait();
}

}  // namespace cpu
}  // namespace keras
