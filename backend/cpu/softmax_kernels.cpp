// CPU kernels of softmax and log_softmax (op definitions: backend/ops_activation.cpp), and the
// single-threaded row softmax other kernels call inside their own parallel loops.
//
// float32 runs on oneDNN softmax_v2 primitives, cached per algorithm and dims; the plain loops are
// the float64 path and the reference the tests compare oneDNN against.
#include <algorithm>
#include <cmath>
#include <functional>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/activation_reference.h"
#include "backend/cpu/dispatch_floating.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/op_registry.h"

namespace keras::cpu {
namespace {

constexpr int64_t kParallelMin = 1 << 15;  // below this, thread start-up costs more than it saves

// Views the tensor as (outer, len, inner) around `axis`.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisSplit split_at(const Shape& shape, int axis) {
  AxisSplit s;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (i < axis) s.outer *= shape[i];
    else if (i == axis) s.len = shape[i];
    else s.inner *= shape[i];
  }
  return s;
}

template <class T>
void softmax_forward_typed(const Tensor& x, Tensor& out, int axis, bool log) {
  AxisSplit s = split_at(x.shape(), axis);
  const T* px = static_cast<const T*>(x.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  int64_t rows = s.outer * s.inner;
#pragma omp parallel for if (rows * s.len > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = (r / s.inner) * s.len * s.inner + r % s.inner;
    const T* xr = px + base;
    T* orow = po + base;
    T m = xr[0];
    for (int64_t k = 1; k < s.len; ++k) m = std::max(m, xr[k * s.inner]);
    T sum = 0;
    for (int64_t k = 0; k < s.len; ++k) sum += std::exp(xr[k * s.inner] - m);
    if (log) {
      T lse = m + std::log(sum);
      for (int64_t k = 0; k < s.len; ++k) orow[k * s.inner] = xr[k * s.inner] - lse;
    } else {
      for (int64_t k = 0; k < s.len; ++k) orow[k * s.inner] = std::exp(xr[k * s.inner] - m) / sum;
    }
  }
}

// softmax: dx = y * (g - sum(g * y)); log_softmax: dx = g - exp(y) * sum(g).
template <class T>
void softmax_backward_typed(const Tensor& grad, const Tensor& y, Tensor& out, int axis, bool log) {
  AxisSplit s = split_at(y.shape(), axis);
  const T* pg = static_cast<const T*>(grad.raw_data());
  const T* py = static_cast<const T*>(y.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  int64_t rows = s.outer * s.inner;
#pragma omp parallel for if (rows * s.len > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = (r / s.inner) * s.len * s.inner + r % s.inner;
    T dot = 0;
    for (int64_t k = 0; k < s.len; ++k) {
      int64_t i = base + k * s.inner;
      dot += log ? pg[i] : pg[i] * py[i];
    }
    for (int64_t k = 0; k < s.len; ++k) {
      int64_t i = base + k * s.inner;
      po[i] = log ? pg[i] - std::exp(py[i]) * dot : py[i] * (pg[i] - dot);
    }
  }
}

dnnl::softmax_v2_forward::primitive_desc softmax_fwd_pd(const dnnl::memory::desc& md, int axis, bool log) {
  dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_training,
                                   log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, md, md,
                                   axis);
  return dnnl::softmax_v2_forward::primitive_desc(d, own_scratchpad(), dnnl_engine());
}

std::string softmax_key(const char* what, const Shape& shape, int axis, bool log) {
  return KeyBuilder(what).add(std::string(log ? "softmax_log" : "softmax_accurate"))
      .add(std::string("forward_training")).add(shape).add(static_cast<int64_t>(axis)).str();
}

}  // namespace

void softmax_forward_reference(const Tensor& x, Tensor& out, int axis, bool log) {
  dispatch_floating(x.dtype(), "softmax kernel", [&](auto tag) {
    softmax_forward_typed<decltype(tag)>(x, out, axis, log);
  });
}

void softmax_backward_reference(const Tensor& grad, const Tensor& y, Tensor& out, int axis, bool log) {
  dispatch_floating(y.dtype(), "softmax gradient kernel", [&](auto tag) {
    softmax_backward_typed<decltype(tag)>(grad, y, out, axis, log);
  });
}

void softmax_forward(const Tensor& x, Tensor& out, int axis, bool log) {
  if (x.numel() == 0) return;
  if (x.dtype() != DType::float32) return softmax_forward_reference(x, out, axis, log);
  auto md = plain_desc(x.shape(), x.dtype());
  auto prim = primitive_cache().get<dnnl::softmax_v2_forward>(softmax_key("softmax_fwd", x.shape(), axis, log), [&] {
    return std::make_shared<dnnl::softmax_v2_forward>(softmax_fwd_pd(md, axis, log));
  });
  execute(*prim, {{DNNL_ARG_SRC, wrap(x, md)}, {DNNL_ARG_DST, wrap(out, md)}});
  dnnl_stream().wait();
}

std::function<void(float*)> softmax_rows_in_place(int64_t rows, int64_t len) {
  const Shape shape{rows, len};
  auto md = plain_desc(shape, DType::float32);
  auto prim = primitive_cache().get<dnnl::softmax_v2_forward>(softmax_key("softmax_fwd", shape, 1, false), [&] {
    return std::make_shared<dnnl::softmax_v2_forward>(softmax_fwd_pd(md, 1, false));
  });
  return [prim, md](float* x) {
    dnnl::memory m(md, dnnl_engine(), x);
    execute(*prim, {{DNNL_ARG_SRC, m}, {DNNL_ARG_DST, m}});
    dnnl_stream().wait();
  };
}

void softmax_backward(const Tensor& grad, const Tensor& y, Tensor& out, int axis, bool log) {
  if (y.numel() == 0) return;
  if (y.dtype() != DType::float32) return softmax_backward_reference(grad, y, out, axis, log);
  auto md = plain_desc(y.shape(), y.dtype());
  auto prim = primitive_cache().get<dnnl::softmax_v2_backward>(softmax_key("softmax_bwd", y.shape(), axis, log), [&] {
    dnnl::softmax_v2_backward::desc d(log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, md, md,
                                      md, axis);
    return std::make_shared<dnnl::softmax_v2_backward>(
        dnnl::softmax_v2_backward::primitive_desc(d, own_scratchpad(), dnnl_engine(), softmax_fwd_pd(md, axis, log)));
  });
  execute(*prim, {{DNNL_ARG_DST, wrap(y, md)}, {DNNL_ARG_DIFF_DST, wrap(grad, md)}, {DNNL_ARG_DIFF_SRC, wrap(out, md)}});
  dnnl_stream().wait();
}

}  // namespace keras::cpu

// ---- kernel registrations: forward (x) and backward (grad, y); axis defaults to -1 as in Keras ----
namespace keras {
namespace {

int axis_attr(const Attrs& a, const Tensor& t) { return normalize_axis(a.get_int("axis", -1), t.rank(), "softmax kernel"); }

KERAS_REGISTER_KERNEL(softmax, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::softmax_forward(in[0], out[0], axis_attr(a, in[0]), false);
});
KERAS_REGISTER_KERNEL(softmax_grad, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::softmax_backward(in[0], in[1], out[0], axis_attr(a, in[1]), false);
});
KERAS_REGISTER_KERNEL(log_softmax, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::softmax_forward(in[0], out[0], axis_attr(a, in[0]), true);
});
KERAS_REGISTER_KERNEL(log_softmax_grad, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) {
  cpu::softmax_backward(in[0], in[1], out[0], axis_attr(a, in[1]), true);
});

}  // namespace
}  // namespace keras
