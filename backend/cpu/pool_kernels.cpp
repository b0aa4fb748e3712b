// CPU kernels of the pooling ops (definitions: backend/ops_pool.cpp).
//
// float32 average pooling runs on oneDNN pooling primitives (forward_inference and backward),
// cached per propagation kind and every dim, stride, window and pad; float32 max pooling on the
// vectorised loops of max_pool_kernels.cpp, which beat oneDNN 2.6's NHWC max pooling here (the
// measurements are there). The plain loops are the float64 path and the reference.
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/bf16_compute.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/pool_reference.h"
#include "backend/ops_nn.h"

namespace keras::cpu {
namespace {

constexpr int64_t kParallelMin = 1 << 14;

template <class F>
void dispatch_floating(DType t, const char* where, F&& f) {
  if (t == DType::float32) f(float{});
  else if (t == DType::float64) f(double{});
  else fail<TypeError>(where, "float32 or float64", dtype_name(t));
}

// ---- plain loops (NHWC, channels innermost so the inner loops vectorise) ----

template <class T>
void max_forward_typed(const Tensor& x, Tensor& y, Tensor& indices, const PoolParams& p) {
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  int32_t* pi = indices.data<int32_t>();
  const int64_t rows = p.n * p.oh;
#pragma omp parallel for if (y.numel() * p.ph * p.pw > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r / p.oh, oh = r % p.oh;
    for (int64_t ow = 0; ow < p.ow; ++ow) {
      T* best = py + ((n * p.oh + oh) * p.ow + ow) * p.c;
      int32_t* arg = pi + ((n * p.oh + oh) * p.ow + ow) * p.c;
      for (int64_t c = 0; c < p.c; ++c) best[c] = -std::numeric_limits<T>::infinity(), arg[c] = 0;
      bool first = true;
      for (int64_t kh = 0; kh < p.ph; ++kh) {
        const int64_t ih = oh * p.sh - p.pad_t + kh;
        if (ih < 0 || ih >= p.h) continue;
        for (int64_t kw = 0; kw < p.pw; ++kw) {
          const int64_t iw = ow * p.sw - p.pad_l + kw;
          if (iw < 0 || iw >= p.w) continue;
          const T* src = px + ((n * p.h + ih) * p.w + iw) * p.c;
          const int32_t k = static_cast<int32_t>(kh * p.pw + kw);
          for (int64_t c = 0; c < p.c; ++c) {
            // The first valid position always wins, so a window of -inf/NaN still points inside.
            if (first || src[c] > best[c] || src[c] != src[c]) best[c] = src[c], arg[c] = k;  // NaN wins
          }
          first = false;
        }
      }
    }
  }
}

// Batches are independent; within one, overlapping windows add into the same dx rows.
template <class T>
void max_backward_typed(const Tensor& grad, const Tensor& indices, Tensor& dx, const PoolParams& p) {
  const T* pg = static_cast<const T*>(grad.raw_data());
  const int32_t* pi = indices.data<int32_t>();
  T* pd = static_cast<T*>(dx.raw_data());
  std::memset(pd, 0, dx.nbytes());
#pragma omp parallel for if (grad.numel() > kParallelMin) schedule(static)
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t oh = 0; oh < p.oh; ++oh)
      for (int64_t ow = 0; ow < p.ow; ++ow) {
        const int64_t o = ((n * p.oh + oh) * p.ow + ow) * p.c;
        for (int64_t c = 0; c < p.c; ++c) {
          const int64_t k = pi[o + c];
          const int64_t ih = oh * p.sh - p.pad_t + k / p.pw, iw = ow * p.sw - p.pad_l + k % p.pw;
          pd[((n * p.h + ih) * p.w + iw) * p.c + c] += pg[o + c];
        }
      }
  }
}

// Number of input positions inside the window (padding excluded).
int64_t window_count(const PoolParams& p, int64_t oh, int64_t ow) {
  const int64_t h0 = oh * p.sh - p.pad_t, w0 = ow * p.sw - p.pad_l;
  const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + p.ph, p.h);
  const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + p.pw, p.w);
  return std::max<int64_t>(he - hs, 0) * std::max<int64_t>(we - ws, 0);
}

template <class T>
void avg_forward_typed(const Tensor& x, Tensor& y, const PoolParams& p) {
  const T* px = static_cast<const T*>(x.raw_data());
  T* py = static_cast<T*>(y.raw_data());
  const int64_t rows = p.n * p.oh;
#pragma omp parallel for if (y.numel() * p.ph * p.pw > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r / p.oh, oh = r % p.oh;
    for (int64_t ow = 0; ow < p.ow; ++ow) {
      T* out = py + ((n * p.oh + oh) * p.ow + ow) * p.c;
      for (int64_t c = 0; c < p.c; ++c) out[c] = T(0);
      for (int64_t kh = 0; kh < p.ph; ++kh) {
        const int64_t ih = oh * p.sh - p.pad_t + kh;
        if (ih < 0 || ih >= p.h) continue;
        for (int64_t kw = 0; kw < p.pw; ++kw) {
          const int64_t iw = ow * p.sw - p.pad_l + kw;
          if (iw < 0 || iw >= p.w) continue;
          const T* src = px + ((n * p.h + ih) * p.w + iw) * p.c;
          for (int64_t c = 0; c < p.c; ++c) out[c] += src[c];
        }
      }
      const T inv = T(1) / static_cast<T>(window_count(p, oh, ow));
      for (int64_t c = 0; c < p.c; ++c) out[c] *= inv;
    }
  }
}

template <class T>
void avg_backward_typed(const Tensor& grad, Tensor& dx, const PoolParams& p) {
  const T* pg = static_cast<const T*>(grad.raw_data());
  T* pd = static_cast<T*>(dx.raw_data());
  std::memset(pd, 0, dx.nbytes());
#pragma omp parallel for if (grad.numel() * p.ph * p.pw > kParallelMin) schedule(static)
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t oh = 0; oh < p.oh; ++oh)
      for (int64_t ow = 0; ow < p.ow; ++ow) {
        const T* g = pg + ((n * p.oh + oh) * p.ow + ow) * p.c;
        const T inv = T(1) / static_cast<T>(window_count(p, oh, ow));
        for (int64_t kh = 0; kh < p.ph; ++kh) {
          const int64_t ih = oh * p.sh - p.pad_t + kh;
          if (ih < 0 || ih >= p.h) continue;
          for (int64_t kw = 0; kw < p.pw; ++kw) {
            const int64_t iw = ow * p.sw - p.pad_l + kw;
            if (iw < 0 || iw >= p.w) continue;
            T* d = pd + ((n * p.h + ih) * p.w + iw) * p.c;
            for (int64_t c = 0; c < p.c; ++c) d[c] += g[c] * inv;
          }
        }
      }
  }
}

// ---- oneDNN ----

using dnnl::memory;

memory::desc nhwc_desc(int64_t n, int64_t h, int64_t w, int64_t c, memory::data_type dt) {
  return memory::desc({n, c, h, w}, dt, memory::format_tag::nhwc);
}

// oneDNN runs average pooling only (padding excluded from the divisor, as Keras).
std::string avg_key(const char* what, const PoolParams& p) {
  return KeyBuilder(what).add(std::string("pooling_avg_exclude_padding")).add(DType::float32)
      .add(Shape{p.n, p.h, p.w, p.c, p.oh, p.ow}).add(Shape{p.ph, p.pw, p.sh, p.sw})
      .add(Shape{p.pad_t, p.pad_b, p.pad_l, p.pad_r}).str();
}

dnnl::pooling_forward::primitive_desc avg_fwd_pd(const PoolParams& p, dnnl::prop_kind prop) {
  dnnl::pooling_forward::desc d(prop, dnnl::algorithm::pooling_avg_exclude_padding,
                                nhwc_desc(p.n, p.h, p.w, p.c, memory::data_type::f32),
                                nhwc_desc(p.n, p.oh, p.ow, p.c, memory::data_type::f32), {p.sh, p.sw}, {p.ph, p.pw},
                                {p.pad_t, p.pad_l}, {p.pad_b, p.pad_r});
  return dnnl::pooling_forward::primitive_desc(d, own_scratchpad(), dnnl_engine());
}

// Average pooling saves nothing for its backward, so its forward is always forward_inference.
std::shared_ptr<dnnl::pooling_forward> avg_forward_prim(const PoolParams& p) {
  return primitive_cache().get<dnnl::pooling_forward>(avg_key("avg_pool_fwd", p), [&] {
    return std::make_shared<dnnl::pooling_forward>(avg_fwd_pd(p, dnnl::prop_kind::forward_inference));
  });
}

std::shared_ptr<dnnl::pooling_backward> avg_backward_prim(const PoolParams& p) {
  return primitive_cache().get<dnnl::pooling_backward>(avg_key("avg_pool_bwd", p), [&] {
    dnnl::pooling_backward::desc d(dnnl::algorithm::pooling_avg_exclude_padding,
                                   nhwc_desc(p.n, p.h, p.w, p.c, memory::data_type::f32),
                                   nhwc_desc(p.n, p.oh, p.ow, p.c, memory::data_type::f32), {p.sh, p.sw},
                                   {p.ph, p.pw}, {p.pad_t, p.pad_l}, {p.pad_b, p.pad_r});
    return std::make_shared<dnnl::pooling_backward>(dnnl::pooling_backward::primitive_desc(
        d, own_scratchpad(), dnnl_engine(), avg_fwd_pd(p, dnnl::prop_kind::forward_training)));
  });
}

bool use_dnnl(const Tensor& t) { return t.dtype() == DType::float32; }

}  // namespace

PoolParams pool_params(const Shape& x, const Attrs& a) {
  const auto& ps = a.get_ints("pool_size");
  const auto& st = a.get_ints("strides");
  auto g = ops::pool2d_geometry(x.at(1), x.at(2), {ps.at(0), ps.at(1)}, {st.at(0), st.at(1)}, a.get_string("padding"),
                                "pooling kernel");
  PoolParams p;
  p.n = x[0], p.h = x[1], p.w = x[2], p.c = x[3];
  p.oh = g.out_h, p.ow = g.out_w;
  p.ph = ps[0], p.pw = ps[1], p.sh = st[0], p.sw = st[1];
  p.pad_t = g.pad_top, p.pad_b = g.pad_bottom, p.pad_l = g.pad_left, p.pad_r = g.pad_right;
  return p;
}

void max_pool2d_forward_reference(const Tensor& x, Tensor& y, Tensor& indices, const PoolParams& p) {
  dispatch_floating(x.dtype(), "max_pool2d kernel", [&](auto tag) { max_forward_typed<decltype(tag)>(x, y, indices, p); });
}
void max_pool2d_backward_reference(const Tensor& grad, const Tensor& indices, Tensor& dx, const PoolParams& p) {
  dispatch_floating(grad.dtype(), "max_pool2d_grad kernel",
                    [&](auto tag) { max_backward_typed<decltype(tag)>(grad, indices, dx, p); });
}
void avg_pool2d_forward_reference(const Tensor& x, Tensor& y, const PoolParams& p) {
  dispatch_floating(x.dtype(), "avg_pool2d kernel", [&](auto tag) { avg_forward_typed<decltype(tag)>(x, y, p); });
}
void avg_pool2d_backward_reference(const Tensor& grad, Tensor& dx, const PoolParams& p) {
  dispatch_floating(grad.dtype(), "avg_pool2d_grad kernel", [&](auto tag) { avg_backward_typed<decltype(tag)>(grad, dx, p); });
}

void max_pool2d_forward(const Tensor& x, Tensor& y, Tensor& indices, const PoolParams& p) {
  if (y.numel() == 0) return;
  if (x.dtype() == DType::float32 || x.dtype() == DType::bfloat16) return max_pool2d_forward_f32(x, y, &indices, p);
  max_pool2d_forward_reference(x, y, indices, p);
}

void max_pool2d_forward_inference(const Tensor& x, Tensor& y, const PoolParams& p) {
  if (y.numel() == 0) return;
  if (x.dtype() == DType::float32 || x.dtype() == DType::bfloat16) return max_pool2d_forward_f32(x, y, nullptr, p);
  Tensor indices = Tensor::empty(y.shape(), DType::int32);
  max_pool2d_forward_reference(x, y, indices, p);
}

void max_pool2d_backward(const Tensor& grad, const Tensor& indices, Tensor& dx, const PoolParams& p) {
  if (dx.numel() == 0) return;
  if ((grad.dtype() == DType::float32 || grad.dtype() == DType::bfloat16) && max_pool2d_windows_disjoint(p))
    return max_pool2d_backward_f32(grad, indices, dx, p);
  max_pool2d_backward_reference(grad, indices, dx, p);
}

void avg_pool2d_forward(const Tensor& x, Tensor& y, const PoolParams& p) {
  if (y.numel() == 0) return;
  if (!use_dnnl(x)) return avg_pool2d_forward_reference(x, y, p);
  execute(*avg_forward_prim(p), {{DNNL_ARG_SRC, wrap(x, nhwc_desc(p.n, p.h, p.w, p.c, memory::data_type::f32))},
                                {DNNL_ARG_DST, wrap(y, nhwc_desc(p.n, p.oh, p.ow, p.c, memory::data_type::f32))}});
  dnnl_stream().wait();
}

void avg_pool2d_backward(const Tensor& grad, Tensor& dx, const PoolParams& p) {
  if (dx.numel() == 0) return;
  if (!use_dnnl(grad) || grad.numel() == 0) return avg_pool2d_backward_reference(grad, dx, p);
  execute(*avg_backward_prim(p), {{DNNL_ARG_DIFF_DST, wrap(grad, nhwc_desc(p.n, p.oh, p.ow, p.c, memory::data_type::f32))},
                                 {DNNL_ARG_DIFF_SRC, wrap(dx, nhwc_desc(p.n, p.h, p.w, p.c, memory::data_type::f32))}});
  dnnl_stream().wait();
}

}  // namespace keras::cpu

// ---- registrations: max_pool2d(x) -> (y, indices); max_pool2d_grad(grad, indices) -> dx;
// avg_pool2d(x) -> y; avg_pool2d_grad(grad) -> dx. The _grad ops carry attr input_shape. ----
namespace keras {
namespace {

cpu::PoolParams grad_params(const Attrs& a) {
  const auto& s = a.get_ints("input_shape");
  return cpu::pool_params(Shape(s.begin(), s.end()), a);
}

void max_pool2d_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::max_pool2d_forward(in[0], out[0], out[1], cpu::pool_params(in[0].shape(), a));
}
void max_pool2d_inference_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::max_pool2d_forward_inference(in[0], out[0], cpu::pool_params(in[0].shape(), a));
}
void max_pool2d_grad_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::max_pool2d_backward(in[0], in[1], out[0], grad_params(a));
}
void avg_pool2d_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::avg_pool2d_forward(in[0], out[0], cpu::pool_params(in[0].shape(), a));
}
void avg_pool2d_grad_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::avg_pool2d_backward(in[0], out[0], grad_params(a));
}

// bfloat16 max pooling (backend/bf16_compute.h) runs the float32 loops on the bfloat16 values
// (exact: a maximum is one of its inputs); overlapping windows' backward converts.
void max_pool2d_grad_bf16(const TensorList& in, TensorList& out, const Attrs& a) {
  if (cpu::max_pool2d_windows_disjoint(grad_params(a))) return max_pool2d_grad_cpu(in, out, a);
  run_bf16_in_float32(max_pool2d_grad_cpu, in, out, a);
}

}  // namespace

KERAS_REGISTER_BF16_KERNEL(max_pool2d, cpu, max_pool2d_cpu);
KERAS_REGISTER_BF16_KERNEL(max_pool2d_inference, cpu, max_pool2d_inference_cpu);
KERAS_REGISTER_BF16_KERNEL(max_pool2d_grad, cpu, max_pool2d_grad_bf16);
KERAS_REGISTER_KERNEL(max_pool2d, cpu, max_pool2d_cpu);
KERAS_REGISTER_KERNEL(max_pool2d_inference, cpu, max_pool2d_inference_cpu);
KERAS_REGISTER_KERNEL(max_pool2d_grad, cpu, max_pool2d_grad_cpu);
KERAS_REGISTER_KERNEL(avg_pool2d, cpu, avg_pool2d_cpu);
KERAS_REGISTER_KERNEL(avg_pool2d_grad, cpu, avg_pool2d_grad_cpu);

}  // namespace keras
