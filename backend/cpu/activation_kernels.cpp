// CPU kernels of the activation ops (op definitions: backend/ops_activation.cpp).
//
// float32 runs on oneDNN eltwise primitives (softmax: softmax_kernels.cpp), cached per algorithm,
// alpha, beta, propagation kind and dims. The plain loops below are the float64 path and the reference the
// tests compare oneDNN against, so they follow oneDNN's conventions at the kinks (relu'(0) = 0,
// relu6'(0) = relu6'(6) = 0). The forward of every activation passes NaN through, as TensorFlow's
// (float32 relu and relu6 therefore run on loops of their own, see eltwise_forward).
#include <cmath>
#include <cstring>
#include <optional>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/activation_reference.h"
#include "backend/cpu/dispatch_floating.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/op_registry.h"

namespace keras::cpu {
namespace {

constexpr int64_t kParallelMin = 1 << 15;  // below this, thread start-up costs more than it saves
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;
constexpr double kInvSqrt2 = 0.70710678118654752440084436210485;
constexpr double kInvSqrt2Pi = 0.39894228040143267793994605993438;

template <class T, class F>
void map_unary(const Tensor& x, Tensor& out, F f) {
  const T* px = static_cast<const T*>(x.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  int64_t n = x.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
}

template <class T, class F>
void map_binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  int64_t n = a.numel();
#pragma omp parallel for if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
}

// exp of a non-positive argument only, so that neither branch overflows.
template <class T>
T sigmoid_of(T v) {
  T e = std::exp(-std::abs(v));
  return v >= 0 ? T(1) / (T(1) + e) : e / (T(1) + e);
}

template <class T>
void forward_typed(Eltwise kind, const Tensor& x, Tensor& out, T alpha) {
  const T sa = T(kSeluAlpha), ss = T(kSeluScale), c = T(kSqrt2OverPi), r2 = T(kInvSqrt2);
  switch (kind) {
    case Eltwise::relu: return map_unary<T>(x, out, [](T v) { return v > 0 || v != v ? v : T(0); });  // NaN stays
    case Eltwise::leaky_relu: return map_unary<T>(x, out, [=](T v) { return v > 0 ? v : alpha * v; });
    case Eltwise::relu6: return map_unary<T>(x, out, [](T v) { return std::min(std::max(v, T(0)), T(6)); });
    case Eltwise::elu: return map_unary<T>(x, out, [=](T v) { return v > 0 ? v : alpha * std::expm1(v); });
    case Eltwise::selu: return map_unary<T>(x, out, [=](T v) { return ss * (v > 0 ? v : sa * std::expm1(v)); });
    case Eltwise::gelu_erf: return map_unary<T>(x, out, [=](T v) { return T(0.5) * v * (T(1) + std::erf(v * r2)); });
    case Eltwise::gelu_tanh:
      return map_unary<T>(x, out, [=](T v) { return T(0.5) * v * (T(1) + std::tanh(c * (v + T(0.044715) * v * v * v))); });
    case Eltwise::sigmoid: return map_unary<T>(x, out, [](T v) { return sigmoid_of(v); });
    case Eltwise::hard_sigmoid:
      return map_unary<T>(x, out, [](T v) { return std::min(std::max(v + T(3), T(0)), T(6)) / T(6); });
    case Eltwise::hard_silu:
      return map_unary<T>(x, out, [](T v) { return v * std::min(std::max(v + T(3), T(0)), T(6)) / T(6); });
    case Eltwise::tanh: return map_unary<T>(x, out, [](T v) { return std::tanh(v); });
    case Eltwise::softplus:
      return map_unary<T>(x, out, [](T v) { return std::max(v, T(0)) + std::log1p(std::exp(-std::abs(v))); });
    case Eltwise::softsign: return map_unary<T>(x, out, [](T v) { return v / (T(1) + std::abs(v)); });
    case Eltwise::silu: return map_unary<T>(x, out, [](T v) { return v * sigmoid_of(v); });
    case Eltwise::exponential: return map_unary<T>(x, out, [](T v) { return std::exp(v); });
  }
}

// `s` is y for the kinds eltwise_uses_output names, x otherwise.
template <class T>
void backward_typed(Eltwise kind, const Tensor& grad, const Tensor& saved, Tensor& out, T alpha) {
  const T sa = T(kSeluAlpha), ss = T(kSeluScale), c = T(kSqrt2OverPi), r2 = T(kInvSqrt2), ip = T(kInvSqrt2Pi);
  switch (kind) {
    case Eltwise::relu: return map_binary<T>(grad, saved, out, [](T g, T y) { return y > 0 ? g : T(0); });
    case Eltwise::leaky_relu: return map_binary<T>(grad, saved, out, [=](T g, T s) { return s > 0 ? g : alpha * g; });
    case Eltwise::relu6:
      return map_binary<T>(grad, saved, out, [](T g, T s) { return s > 0 && s < 6 ? g : T(0); });
    case Eltwise::elu:
      return map_binary<T>(grad, saved, out, [=](T g, T s) { return s > 0 ? g : g * alpha * std::exp(s); });
    case Eltwise::selu:
      return map_binary<T>(grad, saved, out, [=](T g, T s) { return s > 0 ? g * ss : g * ss * sa * std::exp(s); });
    case Eltwise::gelu_erf:
      return map_binary<T>(grad, saved, out, [=](T g, T s) {
        return g * (T(0.5) * (T(1) + std::erf(s * r2)) + s * ip * std::exp(T(-0.5) * s * s));
      });
    case Eltwise::gelu_tanh:
      return map_binary<T>(grad, saved, out, [=](T g, T s) {
        T t = std::tanh(c * (s + T(0.044715) * s * s * s));
        return g * (T(0.5) * (T(1) + t) + T(0.5) * s * (T(1) - t * t) * c * (T(1) + T(3 * 0.044715) * s * s));
      });
    case Eltwise::sigmoid: return map_binary<T>(grad, saved, out, [](T g, T y) { return g * y * (T(1) - y); });
    case Eltwise::hard_sigmoid:
      return map_binary<T>(grad, saved, out, [](T g, T s) { return s > -3 && s < 3 ? g / T(6) : T(0); });
    // d/dx x * relu6(x + 3) / 6 = (2x + 3) / 6 inside (-3, 3); 0 at and below -3, 1 at and above 3
    // (oneDNN's hardswish and TensorFlow's gradient of Keras 3's x * hard_sigmoid(x) agree there).
    case Eltwise::hard_silu:
      return map_binary<T>(grad, saved, out, [](T g, T s) {
        return s <= T(-3) ? T(0) : s >= T(3) ? g : g * (T(2) * s + T(3)) / T(6);
      });
    case Eltwise::tanh: return map_binary<T>(grad, saved, out, [](T g, T y) { return g * (T(1) - y * y); });
    case Eltwise::softplus: return map_binary<T>(grad, saved, out, [](T g, T s) { return g * sigmoid_of(s); });
    case Eltwise::softsign:
      return map_binary<T>(grad, saved, out, [](T g, T s) { T d = T(1) + std::abs(s); return g / (d * d); });
    case Eltwise::silu:
      return map_binary<T>(grad, saved, out, [](T g, T s) {
        T p = sigmoid_of(s);
        return g * (p + s * p * (T(1) - p));
      });
    case Eltwise::exponential: return map_binary<T>(grad, saved, out, [](T g, T y) { return g * y; });
  }
}

// ---- oneDNN eltwise ----

struct DnnlEltwise {
  dnnl::algorithm alg;
  float alpha = 0, beta = 0;
};

// The oneDNN algorithm of each kind; none for selu, hard_sigmoid and softsign (oneDNN 2.6 has no
// such algorithm). The _use_dst_for_bwd variants match the kinds whose backward reads y.
std::optional<DnnlEltwise> dnnl_algorithm(Eltwise kind, double alpha) {
  using A = dnnl::algorithm;
  switch (kind) {
    case Eltwise::relu: return DnnlEltwise{A::eltwise_relu_use_dst_for_bwd};
    case Eltwise::leaky_relu: return DnnlEltwise{A::eltwise_relu, static_cast<float>(alpha)};
    case Eltwise::relu6: return DnnlEltwise{A::eltwise_clip_v2, 0.f, 6.f};
    case Eltwise::elu: return DnnlEltwise{A::eltwise_elu, static_cast<float>(alpha)};
    case Eltwise::gelu_erf: return DnnlEltwise{A::eltwise_gelu_erf};
    case Eltwise::gelu_tanh: return DnnlEltwise{A::eltwise_gelu_tanh};
    case Eltwise::sigmoid: return DnnlEltwise{A::eltwise_logistic_use_dst_for_bwd};
    case Eltwise::tanh: return DnnlEltwise{A::eltwise_tanh_use_dst_for_bwd};
    // oneDNN 2.6 ignores alpha here (plain log(1 + e^x)); later versions read it as the slope.
    case Eltwise::softplus: return DnnlEltwise{A::eltwise_soft_relu, 1.f};
    case Eltwise::silu: return DnnlEltwise{A::eltwise_swish, 1.f};
    case Eltwise::exponential: return DnnlEltwise{A::eltwise_exp_use_dst_for_bwd};
    case Eltwise::hard_silu: return DnnlEltwise{A::eltwise_hardswish};
    default: return std::nullopt;
  }
}

// alpha/beta enter the key as their bit patterns: KeyBuilder::add(double) prints 6 decimals,
// which would give leaky_relu(1e-7) the primitive of relu.
int64_t float_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::string eltwise_key(const char* what, const DnnlEltwise& e, int64_t n) {
  return KeyBuilder(what).add(static_cast<int64_t>(e.alg)).add(float_bits(e.alpha)).add(float_bits(e.beta))
      .add(std::string("forward_training")).add(Shape{n}).str();
}

// Elementwise ops see the tensor as 1-D: one primitive serves every shape with the same size.
dnnl::memory::desc flat_desc(int64_t n) {
  return dnnl::memory::desc({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
}

dnnl::eltwise_forward::primitive_desc eltwise_fwd_pd(const DnnlEltwise& e, int64_t n) {
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_training, e.alg, flat_desc(n), e.alpha, e.beta);
  return dnnl::eltwise_forward::primitive_desc(d, own_scratchpad(), dnnl_engine());
}

void dnnl_eltwise_forward(const DnnlEltwise& e, const Tensor& x, Tensor& out) {
  int64_t n = x.numel();
  auto prim = primitive_cache().get<dnnl::eltwise_forward>(eltwise_key("eltwise_fwd", e, n), [&] {
    return std::make_shared<dnnl::eltwise_forward>(eltwise_fwd_pd(e, n));
  });
  auto md = flat_desc(n);
  execute(*prim, {{DNNL_ARG_SRC, wrap(x, md)}, {DNNL_ARG_DST, wrap(out, md)}});
  dnnl_stream().wait();
}

void dnnl_eltwise_backward(const DnnlEltwise& e, bool saved_is_output, const Tensor& grad, const Tensor& saved,
                           Tensor& out) {
  int64_t n = grad.numel();
  auto prim = primitive_cache().get<dnnl::eltwise_backward>(eltwise_key("eltwise_bwd", e, n), [&] {
    dnnl::eltwise_backward::desc d(e.alg, flat_desc(n), flat_desc(n), e.alpha, e.beta);
    return std::make_shared<dnnl::eltwise_backward>(
        dnnl::eltwise_backward::primitive_desc(d, own_scratchpad(), dnnl_engine(), eltwise_fwd_pd(e, n)));
  });
  auto md = flat_desc(n);
  execute(*prim, {{DNNL_ARG_DIFF_DST, wrap(grad, md)},
                                {saved_is_output ? DNNL_ARG_DST : DNNL_ARG_SRC, wrap(saved, md)},
                                {DNNL_ARG_DIFF_SRC, wrap(out, md)}});
  dnnl_stream().wait();
}

}  // namespace

bool eltwise_uses_output(Eltwise kind) {
  return kind == Eltwise::relu || kind == Eltwise::sigmoid || kind == Eltwise::tanh || kind == Eltwise::exponential;
}

void eltwise_forward_reference(Eltwise kind, const Tensor& x, Tensor& out, double alpha) {
  dispatch_floating(x.dtype(), "activation kernel", [&](auto tag) {
    using T = decltype(tag);
    forward_typed<T>(kind, x, out, static_cast<T>(alpha));
  });
}

void eltwise_backward_reference(Eltwise kind, const Tensor& grad, const Tensor& saved, Tensor& out, double alpha) {
  dispatch_floating(grad.dtype(), "activation gradient kernel", [&](auto tag) {
    using T = decltype(tag);
    backward_typed<T>(kind, grad, saved, out, static_cast<T>(alpha));
  });
}

void eltwise_forward(Eltwise kind, const Tensor& x, Tensor& out, double alpha) {
  if (x.numel() == 0) return;
  // oneDNN 2.6's relu and clip (relu6) compute max(x, 0) with maxps, which returns 0 for a NaN;
  // TensorFlow keeps NaN through them, and a hidden NaN is what a user hunting one must not get.
  // These loops are as fast (one streaming pass, vectorised blends) and give oneDNN's values
  // elsewhere (+0 for -0, 6 for +inf).
  if (x.dtype() == DType::float32 && kind == Eltwise::relu)
    return map_unary<float>(x, out, [](float v) { return v > 0.f || v != v ? v : 0.f; });
  if (x.dtype() == DType::float32 && kind == Eltwise::relu6)
    return map_unary<float>(x, out, [](float v) { return v > 0.f ? (v < 6.f ? v : 6.f) : (v != v ? v : 0.f); });
  auto e = x.dtype() == DType::float32 ? dnnl_algorithm(kind, alpha) : std::nullopt;
  if (e) dnnl_eltwise_forward(*e, x, out);
  else eltwise_forward_reference(kind, x, out, alpha);
}

void eltwise_backward(Eltwise kind, const Tensor& grad, const Tensor& saved, Tensor& out, double alpha) {
  if (grad.numel() == 0) return;
  auto e = grad.dtype() == DType::float32 ? dnnl_algorithm(kind, alpha) : std::nullopt;
  if (e) dnnl_eltwise_backward(*e, eltwise_uses_output(kind), grad, saved, out);
  else eltwise_backward_reference(kind, grad, saved, out, alpha);
}

}  // namespace keras::cpu

// ---- kernel registrations: forward (x) and backward (grad, x or y) per activation ----
// Missing attrs take the Keras defaults (leaky_relu 0.2, elu 1.0, gelu exact).
namespace keras {
namespace {
using cpu::Eltwise;

#define KERAS_ACTIVATION_KERNELS(op, kind_expr, alpha_expr)                                      \
  KERAS_REGISTER_KERNEL(op, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) {     \
    cpu::eltwise_forward(kind_expr, in[0], out[0], alpha_expr);                                  \
  });                                                                                            \
  KERAS_REGISTER_KERNEL(op##_grad, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) { \
    cpu::eltwise_backward(kind_expr, in[0], in[1], out[0], alpha_expr);                          \
  })

KERAS_ACTIVATION_KERNELS(relu, Eltwise::relu, 0.0);
KERAS_ACTIVATION_KERNELS(leaky_relu, Eltwise::leaky_relu, a.get_float("alpha", 0.2));
KERAS_ACTIVATION_KERNELS(relu6, Eltwise::relu6, 0.0);
KERAS_ACTIVATION_KERNELS(elu, Eltwise::elu, a.get_float("alpha", 1.0));
KERAS_ACTIVATION_KERNELS(selu, Eltwise::selu, 0.0);
KERAS_ACTIVATION_KERNELS(gelu, a.get_bool("approximate", false) ? Eltwise::gelu_tanh : Eltwise::gelu_erf, 0.0);
KERAS_ACTIVATION_KERNELS(sigmoid, Eltwise::sigmoid, 0.0);
KERAS_ACTIVATION_KERNELS(hard_sigmoid, Eltwise::hard_sigmoid, 0.0);
KERAS_ACTIVATION_KERNELS(hard_silu, Eltwise::hard_silu, 0.0);
KERAS_ACTIVATION_KERNELS(tanh, Eltwise::tanh, 0.0);
KERAS_ACTIVATION_KERNELS(softplus, Eltwise::softplus, 0.0);
KERAS_ACTIVATION_KERNELS(softsign, Eltwise::softsign, 0.0);
KERAS_ACTIVATION_KERNELS(silu, Eltwise::silu, 0.0);
KERAS_ACTIVATION_KERNELS(exponential, Eltwise::exponential, 0.0);
#undef KERAS_ACTIVATION_KERNELS

}  // namespace
}  // namespace keras
