// CPU kernels of conv2d, conv2d_backward_data and conv2d_backward_weights.
//
// float32: oneDNN convolution primitives on NHWC activations (the layout Keras uses, so no
// activation reorders) with weights in oneDNN's preferred layout (format_tag::any). Primitives
// and the weight reorders are cached in cpu::primitive_cache() under a key of every parameter;
// the reordered weights themselves are cached per tensor storage and version (conv_kernels.h).
// Where they apply, the direct AVX2 kernels of conv_direct.h (forward, and the input gradient of
// stride-1 convolutions) and conv_backward_weights_direct.h (weight gradient) run instead.
// float64: the plain loops of reference_conv.cpp.
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "backend/cpu/conv_backward_weights_direct.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/conv_kernels.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/reference_conv.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using dnnl::memory;
using Dims = memory::dims;
constexpr auto f32 = memory::data_type::f32;

// ---------------- geometry and descriptors ----------------

struct Problem {
  Shape x, k, y;  // NHWC input, Keras kernel (kh,kw,in/groups,out), NHWC output
  ConvParams p;
};

memory::desc act_desc(const Shape& s) { return memory::desc({s[0], s[3], s[1], s[2]}, f32, memory::format_tag::nhwc); }

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
  if (pr.p.groups == 1) return memory::desc(weight_dims(pr), f32, Dims{1, o, h_w_strides[0], h_w_strides[1]});
  return memory::desc(weight_dims(pr), f32, Dims{o / pr.p.groups, 1, o, h_w_strides[0], h_w_strides[1]});
}

memory::desc weight_any(const Problem& pr) { return memory::desc(weight_dims(pr), f32, memory::format_tag::any); }
memory::desc bias_desc(const Problem& pr) { return memory::desc({pr.k[3]}, f32, memory::format_tag::x); }
Dims strides_of(const ConvParams& p) { return {p.stride_h, p.stride_w}; }
Dims dilation_of(const ConvParams& p) { return {p.dilation_h - 1, p.dilation_w - 1}; }  // oneDNN: 0 = none
Dims pad_l(const ConvParams& p) { return {p.pad_top, p.pad_left}; }
Dims pad_r(const ConvParams& p) { return {p.pad_bottom, p.pad_right}; }

cpu::KeyBuilder key_of(const std::string& op, const Problem& pr) {
  cpu::KeyBuilder key(op);
  const ConvParams& p = pr.p;
  key.add(pr.x).add(pr.k).add(pr.y);
  key.add(Shape{p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right,
                p.groups});
  return key;
}

dnnl::algorithm eltwise_alg(const std::string& act, float& alpha, float& beta) {
  alpha = beta = 0.f;
  if (act == "relu") return dnnl::algorithm::eltwise_relu;
  if (act == "relu6") return beta = 6.f, dnnl::algorithm::eltwise_clip_v2;
  if (act == "sigmoid") return dnnl::algorithm::eltwise_logistic;
  if (act == "tanh") return dnnl::algorithm::eltwise_tanh;
  if (act == "elu") return alpha = 1.f, dnnl::algorithm::eltwise_elu;
  if (act == "gelu") return dnnl::algorithm::eltwise_gelu_erf;
  if (act == "swish") return alpha = 1.f, dnnl::algorithm::eltwise_swish;
  fail<ValueError>("conv2d", "a fusable activation (linear, relu, relu6, sigmoid, tanh, elu, gelu, swish)", "'" + act + "'");
}

dnnl::convolution_forward::primitive_desc forward_pd(const Problem& pr, dnnl::prop_kind prop, bool with_bias,
                                                     const std::string& act) {
  memory::desc src = act_desc(pr.x), dst = act_desc(pr.y);
  auto d = with_bias ? dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, src, weight_any(pr),
                                                       bias_desc(pr), dst, strides_of(pr.p), dilation_of(pr.p),
                                                       pad_l(pr.p), pad_r(pr.p))
                     : dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, src, weight_any(pr),
                                                       dst, strides_of(pr.p), dilation_of(pr.p), pad_l(pr.p),
                                                       pad_r(pr.p));
  dnnl::primitive_attr attr;
  if (act != "linear") {
    float alpha, beta;
    dnnl::algorithm alg = eltwise_alg(act, alpha, beta);
    dnnl::post_ops po;
    po.append_eltwise(1.f, alg, alpha, beta);
    attr.set_post_ops(po);
  }
  return dnnl::convolution_forward::primitive_desc(d, attr, cpu::dnnl_engine());
}

[[noreturn]] void unsupported(const std::string& op, const std::string& key, const dnnl::error& e) {
  fail<NotImplementedError>(op + " (oneDNN)", "a problem oneDNN supports", key + " (" + e.what() + ")");
}

// ---------------- the weight cache: reordered kernels per storage version ----------------

bool env_cache_enabled() {
  const char* v = std::getenv("KERAS_CONV_WEIGHT_CACHE");
  return !(v && std::string(v) == "0");
}

struct WeightCache {
  struct Entry {
    std::weak_ptr<Storage> storage;
    uint64_t version = 0;
    memory mem;
  };
  std::mutex mutex;
  std::unordered_map<std::string, Entry> entries;
  bool enabled = env_cache_enabled();
  uint64_t hits = 0, reorders = 0;
  static constexpr size_t kCapacity = 256;

  // Entries of dead tensors hold memory for nothing: drop them, and everything when still full.
  void prune() {
    for (auto it = entries.begin(); it != entries.end();)
      it = it->second.storage.expired() ? entries.erase(it) : std::next(it);
    if (entries.size() >= kCapacity) entries.clear();
  }
};

WeightCache& weight_cache() {
  static WeightCache cache;
  return cache;
}

// The kernel tensor `w` in layout `wanted`: wrapped as is when that is the Keras layout, else
// reordered (through the cached reorder primitive `reorder_key`) once per storage version.
memory prepared_weights(const Tensor& w, const memory::desc& keras, const memory::desc& wanted,
                        const std::string& reorder_key) {
  auto& eng = cpu::dnnl_engine();
  memory user(keras, eng, const_cast<void*>(w.raw_data()));
  if (wanted == keras) return user;
  auto reorder = cpu::primitive_cache().get<dnnl::reorder>(reorder_key, [&] {
    return std::make_shared<dnnl::reorder>(dnnl::reorder::primitive_desc(eng, keras, eng, wanted));
  });
  auto run = [&](memory& dst) {
    reorder->execute(cpu::dnnl_stream(), user, dst);
    cpu::dnnl_stream().wait();
  };
  WeightCache& cache = weight_cache();
  const auto& storage = w.impl().storage;
  std::unique_lock lock(cache.mutex);
  if (!cache.enabled) {
    lock.unlock();
    memory dst(wanted, eng);
    run(dst);
    return dst;
  }
  std::string key = reorder_key + ";@" + std::to_string(reinterpret_cast<uintptr_t>(storage.get())) + "+" +
                    std::to_string(w.impl().offset);
  auto it = cache.entries.find(key);
  if (it != cache.entries.end() && it->second.storage.lock() == storage) {
    if (it->second.version == storage->version) {
      ++cache.hits;
      return it->second.mem;
    }
  } else {
    if (it != cache.entries.end()) cache.entries.erase(it);
    cache.prune();
    it = cache.entries.emplace(key, WeightCache::Entry{storage, 0, memory(wanted, eng)}).first;
  }
  ++cache.reorders;
  it->second.version = storage->version;
  memory dst = it->second.mem;
  run(dst);
  return dst;
}

// ---------------- forward ----------------

struct FwdEntry {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
};

void conv2d_f32(const Tensor& x, const Tensor& k, const Tensor* bias, Tensor& y, const Problem& pr,
                const std::string& act, bool training) {
  cpu::KeyBuilder key = key_of("conv2d_fwd_f32", pr);
  key.add(std::string(training ? "training" : "inference")).add(static_cast<int64_t>(bias != nullptr)).add(act);
  auto entry = cpu::primitive_cache().get<FwdEntry>(key.str(), [&] {
    auto e = std::make_shared<FwdEntry>();
    try {
      e->pd = forward_pd(pr, training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
                         bias != nullptr, act);
      e->prim = dnnl::convolution_forward(e->pd);
    } catch (const dnnl::error& err) {
      unsupported("conv2d", key.str(), err);
    }
    return e;
  });
  auto& eng = cpu::dnnl_engine();
  memory w = prepared_weights(k, keras_weight_desc(pr), entry->pd.weights_desc(), key.str() + ";weights");
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(act_desc(pr.x), eng, const_cast<void*>(x.raw_data()))},
                                       {DNNL_ARG_WEIGHTS, w},
                                       {DNNL_ARG_DST, memory(act_desc(pr.y), eng, y.raw_data())}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(bias_desc(pr), eng, const_cast<void*>(bias->raw_data())));
  entry->prim.execute(cpu::dnnl_stream(), args);
  cpu::dnnl_stream().wait();
}

void check_dtype(const std::string& op, const Tensor& t) {
  if (t.dtype() != DType::float32 && t.dtype() != DType::float64)
    fail<TypeError>(op + " (cpu)", "float32 or float64", dtype_name(t.dtype()));
}

void conv2d_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& x = in[0];
  const Tensor& k = in[1];
  Tensor& y = out[0];
  Problem pr{x.shape(), k.shape(), y.shape(), ConvParams::from_attrs(attrs)};
  const std::string& act = attrs.get_string("activation");
  check_dtype("conv2d", x);
  if (y.numel() == 0) return;
  if (x.dtype() == DType::float32 && cpu::conv2d_direct_supported(pr.k, pr.p, act)) {
    cpu::conv2d_direct(x.data<float>(), pr.x, k.data<float>(), pr.k, in.size() > 2 ? in[2].data<float>() : nullptr,
                       y.data<float>(), pr.y, pr.p, act);
    return;
  }
  if (x.dtype() == DType::float32) {
    conv2d_f32(x, k, in.size() > 2 ? &in[2] : nullptr, y, pr, act, attrs.get_string("prop") == "training");
    return;
  }
  cpu::conv2d_loop(x, k, in.size() > 2 ? in[2] : Tensor(), pr.p, act, y);
}

// ---------------- backward data ----------------

struct BwdDataEntry {
  dnnl::convolution_backward_data::primitive_desc pd;
  dnnl::convolution_backward_data prim;
};

void backward_data_f32(const Tensor& dy, const Tensor& k, Tensor& dx, const Problem& pr) {
  cpu::KeyBuilder key = key_of("conv2d_bwd_data_f32", pr);
  auto entry = cpu::primitive_cache().get<BwdDataEntry>(key.str(), [&] {
    auto e = std::make_shared<BwdDataEntry>();
    try {
      auto hint = forward_pd(pr, dnnl::prop_kind::forward_training, false, "linear");
      dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, act_desc(pr.x), weight_any(pr),
                                              act_desc(pr.y), strides_of(pr.p), dilation_of(pr.p), pad_l(pr.p),
                                              pad_r(pr.p));
      e->pd = dnnl::convolution_backward_data::primitive_desc(d, cpu::dnnl_engine(), hint);
      e->prim = dnnl::convolution_backward_data(e->pd);
    } catch (const dnnl::error& err) {
      unsupported("conv2d_backward_data", key.str(), err);
    }
    return e;
  });
  auto& eng = cpu::dnnl_engine();
  memory w = prepared_weights(k, keras_weight_desc(pr), entry->pd.weights_desc(), key.str() + ";weights");
  entry->prim.execute(cpu::dnnl_stream(),
                      {{DNNL_ARG_DIFF_DST, memory(act_desc(pr.y), eng, const_cast<void*>(dy.raw_data()))},
                       {DNNL_ARG_WEIGHTS, w},
                       {DNNL_ARG_DIFF_SRC, memory(act_desc(pr.x), eng, dx.raw_data())}});
  cpu::dnnl_stream().wait();
}

// dx (rows, C) += bias (C): conv2d_transpose's bias, one in-place pass inside the op (no separate
// add op, output buffer or tape node).
template <class T>
void add_bias(Tensor& dx, const Tensor& bias) {
  const int64_t C = bias.numel(), rows = C ? dx.numel() / C : 0;
  T* d = dx.data<T>();
  const T* b = bias.data<T>();
#pragma omp parallel for if (dx.numel() > (1 << 15)) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) d[r * C + c] += b[c];
}

void backward_data_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& dy = in[0];
  const Tensor& k = in[1];
  Tensor& dx = out[0];
  Problem pr{dx.shape(), k.shape(), dy.shape(), ConvParams::from_attrs(attrs)};
  check_dtype("conv2d_backward_data", dy);
  if (dx.numel() == 0) return;
  if (dy.numel() == 0) dx.fill_(0);
  else if (dy.dtype() != DType::float32) cpu::conv2d_backward_data_loop(dy, k, pr.p, dx);
  else if (cpu::conv2d_backward_data_direct_supported(pr.k, pr.p))
    cpu::conv2d_backward_data_direct(dy.data<float>(), pr.y, k.data<float>(), pr.k, dx.data<float>(), pr.x, pr.p);
  else backward_data_f32(dy, k, dx, pr);
  if (in.size() > 2) {
    if (dx.dtype() == DType::float32) add_bias<float>(dx, in[2]);
    else add_bias<double>(dx, in[2]);
  }
}

// ---------------- backward weights ----------------

struct BwdWeightsEntry {
  dnnl::convolution_backward_weights::primitive_desc pd;
  dnnl::convolution_backward_weights prim;
  bool reorder_out = false;  // diff weights come in oneDNN's layout and go back to Keras's
  dnnl::reorder to_keras;
};

void backward_weights_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& x = in[0];
  const Tensor& dy = in[1];
  Tensor& dk = out[0];
  bool with_bias = out.size() > 1;
  Problem pr{x.shape(), dk.shape(), dy.shape(), ConvParams::from_attrs(attrs)};
  check_dtype("conv2d_backward_weights", x);
  if (dk.numel() == 0 && !with_bias) return;
  if (dy.numel() == 0 || dk.numel() == 0) {
    for (auto& o : out) o.fill_(0);
    return;
  }
  if (x.dtype() != DType::float32) {
    cpu::conv2d_backward_weights_loop(x, dy, pr.p, dk);
    if (with_bias) {
      int64_t o = dk.shape()[3], rows = dy.numel() / o;
      const double* g = dy.data<double>();
      double* b = out[1].data<double>();
      for (int64_t j = 0; j < o; ++j) b[j] = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < o; ++j) b[j] += g[r * o + j];
    }
    return;
  }
  if (cpu::conv2d_backward_weights_direct_supported(pr.k, pr.p)) {
    cpu::conv2d_backward_weights_direct(x.data<float>(), pr.x, dy.data<float>(), pr.y, dk.data<float>(), pr.k,
                                        with_bias ? out[1].data<float>() : nullptr, pr.p);
    return;
  }
  cpu::KeyBuilder key = key_of("conv2d_bwd_weights_f32", pr);
  key.add(static_cast<int64_t>(with_bias));
  auto entry = cpu::primitive_cache().get<BwdWeightsEntry>(key.str(), [&] {
    auto e = std::make_shared<BwdWeightsEntry>();
    try {
      auto hint = forward_pd(pr, dnnl::prop_kind::forward_training, with_bias, "linear");
      auto d = with_bias ? dnnl::convolution_backward_weights::desc(
                               dnnl::algorithm::convolution_direct, act_desc(pr.x), weight_any(pr), bias_desc(pr),
                               act_desc(pr.y), strides_of(pr.p), dilation_of(pr.p), pad_l(pr.p), pad_r(pr.p))
                         : dnnl::convolution_backward_weights::desc(
                               dnnl::algorithm::convolution_direct, act_desc(pr.x), weight_any(pr), act_desc(pr.y),
                               strides_of(pr.p), dilation_of(pr.p), pad_l(pr.p), pad_r(pr.p));
      e->pd = dnnl::convolution_backward_weights::primitive_desc(d, cpu::dnnl_engine(), hint);
      e->prim = dnnl::convolution_backward_weights(e->pd);
      memory::desc keras = keras_weight_desc(pr);
      e->reorder_out = e->pd.diff_weights_desc() != keras;
      if (e->reorder_out)
        e->to_keras = dnnl::reorder(
            dnnl::reorder::primitive_desc(cpu::dnnl_engine(), e->pd.diff_weights_desc(), cpu::dnnl_engine(), keras));
    } catch (const dnnl::error& err) {
      unsupported("conv2d_backward_weights", key.str(), err);
    }
    return e;
  });
  auto& eng = cpu::dnnl_engine();
  memory keras_dk(keras_weight_desc(pr), eng, dk.raw_data());
  memory diff_w = entry->reorder_out ? memory(entry->pd.diff_weights_desc(), eng) : keras_dk;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(act_desc(pr.x), eng, const_cast<void*>(x.raw_data()))},
                                       {DNNL_ARG_DIFF_DST, memory(act_desc(pr.y), eng, const_cast<void*>(dy.raw_data()))},
                                       {DNNL_ARG_DIFF_WEIGHTS, diff_w}};
  if (with_bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(bias_desc(pr), eng, out[1].raw_data()));
  entry->prim.execute(cpu::dnnl_stream(), args);
  if (entry->reorder_out) entry->to_keras.execute(cpu::dnnl_stream(), diff_w, keras_dk);
  cpu::dnnl_stream().wait();
}

}  // namespace

KERAS_REGISTER_KERNEL(conv2d, cpu, conv2d_kernel);
KERAS_REGISTER_KERNEL(conv2d_backward_data, cpu, backward_data_kernel);
KERAS_REGISTER_KERNEL(conv2d_backward_weights, cpu, backward_weights_kernel);

namespace cpu {

ConvWeightCacheStats conv_weight_cache_stats() {
  WeightCache& c = weight_cache();
  std::lock_guard lock(c.mutex);
  return {c.hits, c.reorders, c.entries.size()};
}

void set_conv_weight_cache_enabled(bool enabled) {
  WeightCache& c = weight_cache();
  std::lock_guard lock(c.mutex);
  c.enabled = enabled;
  if (!enabled) c.entries.clear();
}

bool conv_weight_cache_enabled() {
  WeightCache& c = weight_cache();
  std::lock_guard lock(c.mutex);
  return c.enabled;
}

void clear_conv_weight_cache() {
  WeightCache& c = weight_cache();
  std::lock_guard lock(c.mutex);
  c.entries.clear();
  c.hits = c.reorders = 0;
}

}  // namespace cpu
}  // namespace keras
