// CPU kernels of the elementwise ops (backend/ops_elementwise.cpp defines the ops).
//
// These ops are memory-bound, so plain loops written for the auto-vectoriser are as fast as
// oneDNN's binary/eltwise primitives here and work for every dtype (float64 included).
// Broadcasting is planned once per call: size-1 axes are dropped and adjacent axes merged while
// every operand stays linear across them, leaving rows whose innermost stride is 0 (broadcast)
// or 1 (contiguous) per operand. Each row then runs a branch-free loop specialised on those
// strides: same-shape, scalar and row-broadcast operands all hit vectorised loops.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/elementwise_kernels.h"
#include "backend/op_registry.h"
#include "backend/threads.h"

namespace keras {
namespace {

// Below this many elements a parallel region costs more than it saves.
constexpr int64_t kParallelMin = 1 << 15;

template <size_t N>
struct Plan {
  Shape dims;                      // merged iteration extents, innermost last, never empty
  std::array<Shape, N> strides;    // per operand, per merged extent (0 = broadcast)
};

// Plans iterating `out` (row-major) with N contiguous operands broadcast into it.
template <size_t N>
Plan<N> make_plan(const Shape& out, const std::array<const Shape*, N>& in) {
  const size_t r = out.size();
  std::array<Shape, N> full;
  for (size_t k = 0; k < N; ++k) {
    const Shape& s = *in[k];
    Shape cs = contiguous_strides(s);
    full[k].assign(r, 0);
    const size_t lead = r - s.size();
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != 1) full[k][lead + i] = cs[i];
  }
  Plan<N> p;
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    bool merge = !p.dims.empty();
    for (size_t k = 0; merge && k < N; ++k) merge = p.strides[k].back() == full[k][i] * out[i];
    if (merge) {
      p.dims.back() *= out[i];
      for (size_t k = 0; k < N; ++k) p.strides[k].back() = full[k][i];
    } else {
      p.dims.push_back(out[i]);
      for (size_t k = 0; k < N; ++k) p.strides[k].push_back(full[k][i]);
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    for (size_t k = 0; k < N; ++k) p.strides[k].push_back(0);
  }
  return p;
}

// Calls row(out_offset, operand_offsets, length) over the whole iteration space, in parallel for
// large sizes. A single long row is split into chunks; many rows are split into blocks.
template <size_t N, class Row>
void run_rows(const Plan<N>& p, int64_t total, bool parallel_ok, Row&& row) {
  if (total == 0) return;
  const int64_t n = p.dims.back();
  const int64_t rows = total / n;
  const int threads = parallel_ok && total >= kParallelMin ? num_threads() : 1;
  if (rows == 1) {
    const int64_t chunk = threads > 1 ? std::max<int64_t>(4096, (n + threads - 1) / threads) : n;
    const int64_t chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t begin = c * chunk;
      std::array<int64_t, N> off;
      for (size_t k = 0; k < N; ++k) off[k] = begin * p.strides[k].back();
      row(begin, off, std::min(chunk, n - begin));
    }
    return;
  }
  const size_t outer = p.dims.size() - 1;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t r0 = rows * t / nt, r1 = rows * (t + 1) / nt;
    std::vector<int64_t> idx(outer);
    std::array<int64_t, N> off{};
    int64_t rem = r0;
    for (size_t d = outer; d-- > 0;) {
      idx[d] = rem % p.dims[d];
      rem /= p.dims[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * p.strides[k][d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      row(r * n, off, n);
      for (size_t d = outer; d-- > 0;) {
        for (size_t k = 0; k < N; ++k) off[k] += p.strides[k][d];
        if (++idx[d] < p.dims[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= p.strides[k][d] * p.dims[d];
        idx[d] = 0;
      }
    }
  }
}

// out = f(a, b) with broadcasting.
template <class TO, class TA, class TB, class F>
void binary_loop(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const TA* pa = static_cast<const TA*>(a.raw_data());
  const TB* pb = static_cast<const TB*>(b.raw_data());
  TO* po = static_cast<TO*>(out.raw_data());
  auto plan = make_plan<2>(out.shape(), {&a.shape(), &b.shape()});
  const int64_t sa = plan.strides[0].back(), sb = plan.strides[1].back();
  run_rows(plan, out.numel(), true, [&](int64_t o, const std::array<int64_t, 2>& off, int64_t len) {
    TO* __restrict__ y = po + o;
    const TA* __restrict__ x = pa + off[0];
    const TB* __restrict__ z = pb + off[1];
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < len; ++i) y[i] = f(x[i], z[i]);
    } else if (sa == 1 && sb == 0) {
      const TB s = *z;
      for (int64_t i = 0; i < len; ++i) y[i] = f(x[i], s);
    } else if (sa == 0 && sb == 1) {
      const TA s = *x;
      for (int64_t i = 0; i < len; ++i) y[i] = f(s, z[i]);
    } else if (sa == 0 && sb == 0) {
      std::fill(y, y + len, f(*x, *z));
    } else {
      for (int64_t i = 0; i < len; ++i) y[i] = f(x[i * sa], z[i * sb]);
    }
  });
}

// out = f(x) over contiguous tensors of equal size.
template <class TO, class TI, class F>
void unary_loop(const Tensor& in, Tensor& out, F f) {
  const TI* __restrict__ x = static_cast<const TI*>(in.raw_data());
  TO* __restrict__ y = static_cast<TO*>(out.raw_data());
  const int64_t n = in.numel();
  const int threads = n >= kParallelMin ? num_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

// Calls f(T{}) for the numeric dtypes; the shape functions keep bool away from arithmetic.
template <class F>
void dispatch_numeric(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::float32: f(float{}); return;
    case DType::float64: f(double{}); return;
    case DType::int32: f(int32_t{}); return;
    case DType::int64: f(int64_t{}); return;
    default: fail<TypeError>(std::string(op) + " (cpu kernel)", "a numeric dtype", dtype_name(t));
  }
}
template <class F>
void dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::float32: f(float{}); return;
    case DType::float64: f(double{}); return;
    default: fail<TypeError>(std::string(op) + " (cpu kernel)", "a floating dtype", dtype_name(t));
  }
}

// Registers a numeric binary kernel whose result has the operands' dtype.
#define KERAS_BINARY_KERNEL(name, dispatch, expr)                                          \
  KERAS_REGISTER_KERNEL(name, cpu, [](const TensorList& in, TensorList& out, const Attrs&) { \
    dispatch(in[0].dtype(), #name, [&](auto tag) {                                          \
      using T = decltype(tag);                                                              \
      binary_loop<T, T, T>(in[0], in[1], out[0], [](T a, T b) -> T { return expr; });      \
    });                                                                                     \
  })

// Comparisons take any dtype (bool included) and give bool.
#define KERAS_COMPARE_KERNEL(name, expr)                                                    \
  KERAS_REGISTER_KERNEL(name, cpu, [](const TensorList& in, TensorList& out, const Attrs&) { \
    dispatch_dtype(in[0].dtype(), [&](auto tag) {                                           \
      using T = decltype(tag);                                                              \
      binary_loop<bool, T, T>(in[0], in[1], out[0], [](T a, T b) -> bool { return expr; }); \
    });                                                                                     \
  })

#define KERAS_UNARY_KERNEL(name, dispatch, expr)                                           \
  KERAS_REGISTER_KERNEL(name, cpu, [](const TensorList& in, TensorList& out, const Attrs&) { \
    dispatch(in[0].dtype(), #name, [&](auto tag) {                                          \
      using T = decltype(tag);                                                              \
      unary_loop<T, T>(in[0], out[0], [](T x) -> T { return expr; });                       \
    });                                                                                     \
  })

// Scalar-operand kernels: the attribute "value" converted to the tensor's dtype.
#define KERAS_SCALAR_KERNEL(name, dispatch, expr)                                           \
  KERAS_REGISTER_KERNEL(name, cpu, [](const TensorList& in, TensorList& out, const Attrs& attrs) { \
    const double value = attrs.get_float("value");                                           \
    dispatch(in[0].dtype(), #name, [&](auto tag) {                                           \
      using T = decltype(tag);                                                               \
      const T s = static_cast<T>(value);                                                     \
      unary_loop<T, T>(in[0], out[0], [s](T x) -> T { return expr; });                       \
    });                                                                                      \
  })

template <class T>
T sign_of(T x) {
  return static_cast<T>((T(0) < x) - (x < T(0)));
}

}  // namespace

KERAS_BINARY_KERNEL(add, dispatch_numeric, a + b);
KERAS_BINARY_KERNEL(subtract, dispatch_numeric, a - b);
KERAS_BINARY_KERNEL(multiply, dispatch_numeric, a * b);
KERAS_BINARY_KERNEL(divide, dispatch_float, a / b);
// NaN propagates (a != a only for NaN), as NumPy's maximum/minimum.
KERAS_BINARY_KERNEL(maximum, dispatch_numeric, (a > b || a != a) ? a : b);
KERAS_BINARY_KERNEL(minimum, dispatch_numeric, (a < b || a != a) ? a : b);
KERAS_BINARY_KERNEL(pow, dispatch_numeric, static_cast<T>(std::pow(a, b)));

KERAS_COMPARE_KERNEL(equal, a == b);
KERAS_COMPARE_KERNEL(not_equal, a != b);
KERAS_COMPARE_KERNEL(less, a < b);
KERAS_COMPARE_KERNEL(less_equal, a <= b);
KERAS_COMPARE_KERNEL(greater, a > b);
KERAS_COMPARE_KERNEL(greater_equal, a >= b);

KERAS_UNARY_KERNEL(negative, dispatch_numeric, static_cast<T>(-x));
KERAS_REGISTER_KERNEL(exp, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  cpu::unary_math(cpu::UnaryMath::exp, in[0], out[0]);
});
KERAS_REGISTER_KERNEL(log, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  cpu::unary_math(cpu::UnaryMath::log, in[0], out[0]);
});
KERAS_REGISTER_KERNEL(sqrt, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  cpu::unary_math(cpu::UnaryMath::sqrt, in[0], out[0]);
});
KERAS_UNARY_KERNEL(square, dispatch_numeric, x * x);
KERAS_UNARY_KERNEL(abs, dispatch_numeric, x < T(0) ? static_cast<T>(-x) : x);
KERAS_UNARY_KERNEL(sign, dispatch_numeric, sign_of(x));

KERAS_SCALAR_KERNEL(add_scalar, dispatch_numeric, x + s);
KERAS_SCALAR_KERNEL(multiply_scalar, dispatch_numeric, x * s);
KERAS_SCALAR_KERNEL(divide_scalar, dispatch_float, x / s);
KERAS_SCALAR_KERNEL(rsubtract_scalar, dispatch_numeric, s - x);
KERAS_SCALAR_KERNEL(rdivide_scalar, dispatch_float, s / x);

// pow with a scalar exponent; squares and square roots avoid the slow std::pow.
KERAS_REGISTER_KERNEL(pow_scalar, cpu, [](const TensorList& in, TensorList& out, const Attrs& attrs) {
  const double e = attrs.get_float("value");
  dispatch_numeric(in[0].dtype(), "pow_scalar", [&](auto tag) {
    using T = decltype(tag);
    if (e == 1) unary_loop<T, T>(in[0], out[0], [](T x) -> T { return x; });
    else if (e == 2) unary_loop<T, T>(in[0], out[0], [](T x) -> T { return x * x; });
    else if (e == 0.5) unary_loop<T, T>(in[0], out[0], [](T x) -> T { return static_cast<T>(std::sqrt(x)); });
    else unary_loop<T, T>(in[0], out[0], [e](T x) -> T { return static_cast<T>(std::pow(x, static_cast<T>(e))); });
  });
});

KERAS_REGISTER_KERNEL(clip, cpu, [](const TensorList& in, TensorList& out, const Attrs& attrs) {
  const double lo_d = attrs.get_float("min"), hi_d = attrs.get_float("max");
  dispatch_numeric(in[0].dtype(), "clip", [&](auto tag) {
    using T = decltype(tag);
    const T lo = static_cast<T>(lo_d), hi = static_cast<T>(hi_d);
    unary_loop<T, T>(in[0], out[0], [lo, hi](T x) -> T { return x < lo ? lo : (x > hi ? hi : x); });
  });
});

// cond ? a : b, all three broadcast into the output.
KERAS_REGISTER_KERNEL(where, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  dispatch_dtype(in[1].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool* pc = static_cast<const bool*>(in[0].raw_data());
    const T* pa = static_cast<const T*>(in[1].raw_data());
    const T* pb = static_cast<const T*>(in[2].raw_data());
    T* po = static_cast<T*>(out[0].raw_data());
    auto plan = make_plan<3>(out[0].shape(), {&in[0].shape(), &in[1].shape(), &in[2].shape()});
    const int64_t sc = plan.strides[0].back(), sa = plan.strides[1].back(), sb = plan.strides[2].back();
    run_rows(plan, out[0].numel(), true, [&](int64_t o, const std::array<int64_t, 3>& off, int64_t len) {
      T* __restrict__ y = po + o;
      const bool* __restrict__ c = pc + off[0];
      const T* __restrict__ x = pa + off[1];
      const T* __restrict__ z = pb + off[2];
      if (sc == 1 && sa == 1 && sb == 1) {
        for (int64_t i = 0; i < len; ++i) y[i] = c[i] ? x[i] : z[i];
      } else if (sc == 1 && sa == 1 && sb == 0) {  // where(mask, x, 0)-style gradients
        const T s = *z;
        for (int64_t i = 0; i < len; ++i) y[i] = c[i] ? x[i] : s;
      } else if (sc == 1 && sa == 0 && sb == 1) {
        const T s = *x;
        for (int64_t i = 0; i < len; ++i) y[i] = c[i] ? s : z[i];
      } else {
        for (int64_t i = 0; i < len; ++i) y[i] = c[i * sc] ? x[i * sa] : z[i * sb];
      }
    });
  });
});

// Copies x into the larger output shape.
KERAS_REGISTER_KERNEL(broadcast_to, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(in[0].raw_data());
    T* po = static_cast<T*>(out[0].raw_data());
    auto plan = make_plan<1>(out[0].shape(), {&in[0].shape()});
    const int64_t sx = plan.strides[0].back();
    run_rows(plan, out[0].numel(), true, [&](int64_t o, const std::array<int64_t, 1>& off, int64_t len) {
      T* __restrict__ y = po + o;
      const T* __restrict__ x = px + off[0];
      if (sx == 1) std::copy(x, x + len, y);
      else std::fill(y, y + len, *x);
    });
  });
});

// Sums grad (the larger shape) into out (a shape that broadcasts to it). The iteration space is
// grad's shape with out as the broadcast operand. Rows with a contiguous output run are split
// into column chunks (disjoint outputs, so no races and a fixed summation order); rows that
// reduce into one output element run serially, since several rows may share that element.
namespace {
// (A named function: pragmas cannot sit inside the registration macro's arguments.)
void sum_to_shape_kernel(const TensorList& in, TensorList& out, const Attrs&) {
  dispatch_numeric(in[0].dtype(), "sum_to_shape", [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
    const T* pg = static_cast<const T*>(in[0].raw_data());
    T* po = static_cast<T*>(out[0].raw_data());
    std::fill(po, po + out[0].numel(), T(0));
    if (in[0].numel() == 0) return;
    auto plan = make_plan<1>(in[0].shape(), {&out[0].shape()});
    const int64_t so = plan.strides[0].back();
    const int64_t n = plan.dims.back();
    const int64_t total = in[0].numel();
    if (so == 1 && total / n > 1) {
      // Column chunks: each chunk walks every row (serially) over its own output columns.
      const int threads = total >= kParallelMin ? num_threads() : 1;
      const int64_t chunk = threads > 1 ? std::max<int64_t>(256, (n + threads - 1) / threads) : n;
      const int64_t chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t begin = c * chunk, len = std::min(chunk, n - begin);
        run_rows(plan, total, false, [&](int64_t g, const std::array<int64_t, 1>& off, int64_t) {
          T* __restrict__ y = po + off[0] + begin;
          const T* __restrict__ x = pg + g + begin;
          for (int64_t i = 0; i < len; ++i) y[i] += x[i];
        });
      }
      return;
    }
    run_rows(plan, total, so == 1, [&](int64_t g, const std::array<int64_t, 1>& off, int64_t len) {
      const T* __restrict__ x = pg + g;
      if (so == 1) {
        T* __restrict__ y = po + off[0];
        for (int64_t i = 0; i < len; ++i) y[i] += x[i];
      } else {
        // Eight independent partial sums let the compiler vectorise the reduction.
        Acc part[8] = {};
        int64_t i = 0;
        for (; i + 8 <= len; i += 8)
          for (int j = 0; j < 8; ++j) part[j] += x[i + j];
        Acc s = 0;
        for (; i < len; ++i) s += x[i];
        for (int j = 0; j < 8; ++j) s += part[j];
        po[off[0]] += static_cast<T>(s);
      }
    });
  });
}
}  // namespace
KERAS_REGISTER_KERNEL(sum_to_shape, cpu, sum_to_shape_kernel);

namespace cpu {

void unary_math_reference(UnaryMath op, const Tensor& x, Tensor& out) {
  dispatch_float(x.dtype(), "unary_math_reference", [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case UnaryMath::exp: return unary_loop<T, T>(x, out, [](T v) { return std::exp(v); });
      case UnaryMath::log: return unary_loop<T, T>(x, out, [](T v) { return std::log(v); });
      case UnaryMath::sqrt: return unary_loop<T, T>(x, out, [](T v) { return std::sqrt(v); });
    }
  });
}

void unary_math(UnaryMath op, const Tensor& x, Tensor& out) {
  const int64_t n = x.numel();
  if (x.dtype() != DType::float32 || n < kUnaryMathDnnlMin) return unary_math_reference(op, x, out);
  const dnnl::algorithm alg = op == UnaryMath::exp   ? dnnl::algorithm::eltwise_exp
                              : op == UnaryMath::log ? dnnl::algorithm::eltwise_log
                                                     : dnnl::algorithm::eltwise_sqrt;
  // Flat 1-D: the op is elementwise, so only the element count shapes the primitive.
  const dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  const std::string key = KeyBuilder("elementwise_math").add(static_cast<int64_t>(op)).add(n).str();
  auto prim = primitive_cache().get<dnnl::eltwise_forward>(key, [&] {
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, md, 0.f, 0.f);
    return std::make_shared<dnnl::eltwise_forward>(dnnl::eltwise_forward::primitive_desc(d, own_scratchpad(), dnnl_engine()));
  });
  execute(*prim, {{DNNL_ARG_SRC, wrap(x, md)}, {DNNL_ARG_DST, wrap(out, md)}});
  dnnl_stream().wait();
}

}  // namespace cpu

// cast shares the data conversion of astype (backend/cpu/copy_kernels.cpp); it is a separate op
// only so that it can carry a gradient.
KERAS_REGISTER_KERNEL(cast, cpu, [](const TensorList& in, TensorList& out, const Attrs& attrs) {
  static const KernelFn& astype = OpRegistry::instance().find("astype").kernels[static_cast<int>(DeviceKind::cpu)];
  astype(in, out, attrs);
});

}  // namespace keras
