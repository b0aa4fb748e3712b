// CPU kernels of the reductions (sum, mean, max, min, argmax, argmin) and their gradient ops,
// as plain loops written to vectorise; every dtype works, float64 included.
//
// A reduction first merges neighbouring axes that are all reduced or all kept (extent-1 axes
// vanish), then runs one (outer O, reduced R, inner I) pass per reduced group, last group first.
// I == 1 is a contiguous reduction (lane accumulators; long float sums accumulate in double);
// I > 1 accumulates whole rows, which is the fast shape for the bias gradient (sum over the
// leading axis of (batch, units)). Work is split over OpenMP threads only when large.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "backend/cpu/reference_linalg.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

constexpr int64_t kParallelWork = 1 << 15;

// Merged groups of axes; `red[g]` tells whether group g is reduced.
struct Plan {
  std::vector<int64_t> ext;
  std::vector<bool> red;
};

Plan make_plan(const Shape& shape, const std::vector<bool>& mask) {
  Plan p;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!p.ext.empty() && p.red.back() == mask[i]) p.ext.back() *= shape[i];
    else p.ext.push_back(shape[i]), p.red.push_back(mask[i]);
  }
  return p;
}

struct SumOp {
  static constexpr bool is_sum = true;
  template <class T> static T init() { return T(0); }
  template <class T> static T combine(T a, T b) { return a + b; }
};
struct MaxOp {
  static constexpr bool is_sum = false;
  template <class T> static T init() {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  // NaN wins (b != b), as numpy.max propagates NaN.
  template <class T> static T combine(T a, T b) { return (b > a || b != b) ? b : a; }
  template <class T> static T fast(T a, T b) { return b > a ? b : a; }  // NaN-blind, vectorises
};
struct MinOp {
  static constexpr bool is_sum = false;
  template <class T> static T init() {
    if constexpr (std::numeric_limits<T>::has_infinity) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
  template <class T> static T combine(T a, T b) { return (b < a || b != b) ? b : a; }
  template <class T> static T fast(T a, T b) { return b < a ? b : a; }
};

// Accumulator type: float sums run in double (sums of many similar values otherwise drift by
// a systematic rounding bias); everything else in the element type.
template <class T, class Op>
using AccOf = std::conditional_t<Op::is_sum && std::is_same_v<T, float>, double, T>;

// Reduces n contiguous values with 8 independent lanes so that the loop vectorises.
template <class T, class Op>
T reduce_contiguous(const T* p, int64_t n) {
  constexpr int64_t L = 8;
  using A = AccOf<T, Op>;
  if constexpr (!Op::is_sum && std::is_floating_point_v<T>) {
    // max/min: NaN-blind lanes plus a lane sum of (v - v), which turns NaN only for NaN or
    // inf inputs; in that rare case the NaN-aware loop below decides.
    T lanes[L], poison[L];
    for (int64_t l = 0; l < L; ++l) lanes[l] = Op::template init<T>(), poison[l] = T(0);
    int64_t i = 0;
    for (; i + L <= n; i += L)
      for (int64_t l = 0; l < L; ++l) {
        T v = p[i + l];
        lanes[l] = Op::fast(lanes[l], v);
        poison[l] += v - v;
      }
    T total = Op::template init<T>(), bad = T(0);
    for (int64_t l = 0; l < L; ++l) total = Op::combine(total, lanes[l]), bad += poison[l];
    for (; i < n; ++i) total = Op::combine(total, p[i]);
    if (bad == bad) return total;
  }
  A lanes[L];
  for (int64_t l = 0; l < L; ++l) lanes[l] = Op::template init<A>();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int64_t l = 0; l < L; ++l) lanes[l] = Op::combine(lanes[l], static_cast<A>(p[i + l]));
  for (; i < n; ++i) lanes[0] = Op::combine(lanes[0], static_cast<A>(p[i]));
  A total = lanes[0];
  for (int64_t l = 1; l < L; ++l) total = Op::combine(total, lanes[l]);
  return static_cast<T>(total);
}

// Rows [0, R) of width `stride`, columns [c0, c1): dst[i] = reduce_r src[r * stride + i].
// Long float sums accumulate in double for the same reason as above.
template <class T, class Op>
void reduce_rows(const T* src, T* dst, int64_t R, int64_t stride, int64_t c0, int64_t c1) {
  if constexpr (!std::is_same_v<AccOf<T, Op>, T>) {
    if (R > 256) {
      std::vector<double> acc(static_cast<size_t>(c1 - c0), 0.0);
      for (int64_t r = 0; r < R; ++r) {
        const T* row = src + r * stride + c0;
        for (int64_t i = 0; i < c1 - c0; ++i) acc[static_cast<size_t>(i)] += row[i];
      }
      for (int64_t i = c0; i < c1; ++i) dst[i] = static_cast<T>(acc[static_cast<size_t>(i - c0)]);
      return;
    }
  }
  for (int64_t i = c0; i < c1; ++i) dst[i] = Op::template init<T>();
  for (int64_t r = 0; r < R; ++r) {
    const T* row = src + r * stride;
    for (int64_t i = c0; i < c1; ++i) dst[i] = Op::combine(dst[i], row[i]);
  }
}

// out[o, i] = reduce_r in[o, r, i].
template <class T, class Op>
void reduce_ori(const T* in, T* out, int64_t O, int64_t R, int64_t I) {
  int64_t work = O * R * I;
  int threads = omp_get_max_threads();
  if (I == 1) {
    if (O == 1 && work >= 4 * kParallelWork && threads > 1) {
      // One long reduction: per-thread partials, combined in a fixed order (deterministic).
      std::vector<T> part(static_cast<size_t>(threads), Op::template init<T>());
      int64_t chunk = (R + threads - 1) / threads;
#pragma omp parallel for num_threads(threads)
      for (int t = 0; t < threads; ++t) {
        int64_t s = std::min(R, t * chunk), e = std::min(R, s + chunk);
        part[static_cast<size_t>(t)] = reduce_contiguous<T, Op>(in + s, e - s);
      }
      T acc = Op::template init<T>();
      for (T v : part) acc = Op::combine(acc, v);
      out[0] = acc;
      return;
    }
#pragma omp parallel for if (work >= kParallelWork && O > 1)
    for (int64_t o = 0; o < O; ++o) out[o] = reduce_contiguous<T, Op>(in + o * R, R);
    return;
  }
  // Row accumulation, split into (o, column chunk) tasks so that few outer rows still use
  // every thread.
  int64_t chunk = I;
  if (work >= kParallelWork && O < threads) chunk = std::max<int64_t>(64, (I + threads - 1) / threads);
  int64_t nchunks = (I + chunk - 1) / chunk;
#pragma omp parallel for if (work >= kParallelWork)
  for (int64_t task = 0; task < O * nchunks; ++task) {
    int64_t o = task / nchunks, c0 = (task % nchunks) * chunk, c1 = std::min(I, c0 + chunk);
    reduce_rows<T, Op>(in + o * R * I, out + o * I, R, I, c0, c1);
  }
}

template <class T, class Op>
void reduce_typed(const Tensor& x, Tensor& y, const std::vector<bool>& mask) {
  Plan p = make_plan(x.shape(), mask);
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  std::unique_ptr<T[]> buf[2];  // not std::vector: vector<bool> has no data()
  int which = 0;
  bool any = std::find(p.red.begin(), p.red.end(), true) != p.red.end();
  if (!any) {
    std::copy(src, src + y.numel(), dst);
    return;
  }
  while (true) {
    size_t j = p.red.size();
    while (!p.red[--j]) {}
    int64_t O = 1, I = 1;
    for (size_t g = 0; g < j; ++g) O *= p.ext[g];
    for (size_t g = j + 1; g < p.ext.size(); ++g) I *= p.ext[g];
    bool last = std::count(p.red.begin(), p.red.end(), true) == 1;
    T* target = dst;
    if (!last) {
      buf[which] = std::make_unique<T[]>(static_cast<size_t>(O * I));
      target = buf[which].get();
    }
    reduce_ori<T, Op>(src, target, O, p.ext[j], I);
    if (last) return;
    src = target;
    which ^= 1;
    // The reduced group is gone; its kept neighbours become one group.
    p.ext.erase(p.ext.begin() + static_cast<std::ptrdiff_t>(j));
    p.red.erase(p.red.begin() + static_cast<std::ptrdiff_t>(j));
    if (j > 0 && j < p.ext.size()) {
      p.ext[j - 1] *= p.ext[j];
      p.ext.erase(p.ext.begin() + static_cast<std::ptrdiff_t>(j));
      p.red.erase(p.red.begin() + static_cast<std::ptrdiff_t>(j));
    }
  }
}

std::vector<bool> mask_of(const Tensor& x, const Attrs& a, const char* op) {
  return cpu::reduced_axes_mask(x.rank(), a.has("axes") ? a.get_ints("axes") : std::vector<int64_t>{}, op);
}

template <class Op>
void reduce_kernel(const TensorList& in, TensorList& out, const Attrs& a, const char* op, bool mean) {
  auto mask = mask_of(in[0], a, op);
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    reduce_typed<T, Op>(in[0], out[0], mask);
    if constexpr (std::is_floating_point_v<T>) {
      if (mean) {
        int64_t count = out[0].numel() == 0 ? 1 : in[0].numel() / out[0].numel();
        T scale = count == 0 ? std::numeric_limits<T>::quiet_NaN() : T(1) / static_cast<T>(count);
        T* y = out[0].data<T>();
        for (int64_t i = 0; i < out[0].numel(); ++i) y[i] *= scale;
      }
    }
  });
}

// ---- argmax / argmin ----
template <class T, bool IsMax>
bool better(T v, T best) {
  if constexpr (std::is_floating_point_v<T>)
    if (v != v) return best == best;  // the first NaN wins, as numpy
  return IsMax ? v > best : v < best;
}

template <class T, bool IsMax>
void arg_typed(const T* x, int64_t* y, int64_t O, int64_t R, int64_t I) {
#pragma omp parallel for if (O * R * I >= kParallelWork && O > 1)
  for (int64_t o = 0; o < O; ++o) {
    const T* base = x + o * R * I;
    if (I == 1) {
      int64_t bi = 0;
      for (int64_t r = 1; r < R; ++r)
        if (better<T, IsMax>(base[r], base[bi])) bi = r;
      y[o] = bi;
      continue;
    }
    std::vector<T> best(base, base + I);
    int64_t* idx = y + o * I;
    std::fill(idx, idx + I, 0);
    for (int64_t r = 1; r < R; ++r)
      for (int64_t i = 0; i < I; ++i)
        if (better<T, IsMax>(base[r * I + i], best[static_cast<size_t>(i)])) best[static_cast<size_t>(i)] = base[r * I + i], idx[i] = r;
  }
}

template <bool IsMax>
void arg_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Shape& s = in[0].shape();
  int axis = normalize_axis(a.get_int("axis"), in[0].rank(), IsMax ? "argmax" : "argmin");
  int64_t O = 1, I = 1;
  for (int i = 0; i < axis; ++i) O *= s[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) I *= s[i];
  int64_t R = s[static_cast<size_t>(axis)];
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) fail<TypeError>("argmax/argmin", "a numeric tensor", "bool");
    else arg_typed<T, IsMax>(in[0].data<T>(), out[0].data<int64_t>(), O, R, I);
  });
}

// ---- gradients ----
// Calls f(in_offset, out_offset, length, out_step) for each run of the innermost group, where
// out offsets index the reduction's (kept-axes) output and out_step is 0 along a reduced group.
template <class F>
void for_each_run(const Plan& p, bool parallel, F&& f) {
  size_t G = p.ext.size();
  if (G == 0) return f(int64_t{0}, int64_t{0}, int64_t{1}, int64_t{0});
  std::vector<int64_t> in_stride(G), out_stride(G);
  int64_t si = 1, so = 1;
  for (size_t g = G; g-- > 0;) {
    in_stride[g] = si;
    si *= p.ext[g];
    out_stride[g] = p.red[g] ? 0 : so;
    if (!p.red[g]) so *= p.ext[g];
  }
  int64_t len = p.ext[G - 1], step = out_stride[G - 1];
  if (G == 1) return f(int64_t{0}, int64_t{0}, len, step);
  int64_t outer = p.ext[0];
#pragma omp parallel for if (parallel && si >= kParallelWork)
  for (int64_t t = 0; t < outer; ++t) {
    std::vector<int64_t> idx(G - 1, 0);
    int64_t io = t * in_stride[0], oo = t * out_stride[0];
    int64_t runs = in_stride[0] / len;
    for (int64_t r = 0; r < runs; ++r) {
      f(io, oo, len, step);
      for (size_t g = G - 1; g-- > 1;) {
        io += in_stride[g];
        oo += out_stride[g];
        if (++idx[g] < p.ext[g]) break;
        io -= in_stride[g] * p.ext[g];
        oo -= out_stride[g] * p.ext[g];
        idx[g] = 0;
      }
    }
  }
}

void broadcast_grad_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  Tensor& dx = out[0];
  if (dx.numel() == 0) return;
  Plan p = make_plan(dx.shape(), cpu::reduced_axes_mask(dx.rank(), a.get_ints("axes"), "reduce_broadcast_grad"));
  double scale = a.get_float("scale");
  dispatch_dtype(dx.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* dy = in[0].data<T>();
    T* d = dx.data<T>();
    T s = static_cast<T>(scale);
    for_each_run(p, true, [&](int64_t io, int64_t oo, int64_t len, int64_t step) {
      if (step == 0) std::fill(d + io, d + io + len, static_cast<T>(dy[oo] * s));
      else for (int64_t j = 0; j < len; ++j) d[io + j] = static_cast<T>(dy[oo + j] * s);
    });
  });
}

void extreme_grad_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  Tensor& dx = out[0];
  if (dx.numel() == 0) return;
  Plan p = make_plan(x.shape(), cpu::reduced_axes_mask(x.rank(), a.get_ints("axes"), "reduce_extreme_grad"));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_floating_point_v<T>) {
      fail<TypeError>("gradient of max/min", "a float tensor", dtype_name(x.dtype()));
    } else {
      const T* xs = x.data<T>();
      const T* ys = in[1].data<T>();
      const T* dy = in[2].data<T>();
      T* d = dx.data<T>();
      std::vector<T> ties(static_cast<size_t>(in[1].numel()), T(0));
      for_each_run(p, false, [&](int64_t io, int64_t oo, int64_t len, int64_t step) {
        for (int64_t j = 0; j < len; ++j) ties[static_cast<size_t>(oo + j * step)] += xs[io + j] == ys[oo + j * step] ? T(1) : T(0);
      });
      for_each_run(p, true, [&](int64_t io, int64_t oo, int64_t len, int64_t step) {
        for (int64_t j = 0; j < len; ++j) {
          int64_t o = oo + j * step;
          d[io + j] = xs[io + j] == ys[o] ? dy[o] / ties[static_cast<size_t>(o)] : T(0);
        }
      });
    }
  });
}

}  // namespace

KERAS_REGISTER_KERNEL(sum, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) {
  reduce_kernel<SumOp>(in, out, a, "sum", false);
});
KERAS_REGISTER_KERNEL(mean, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) {
  reduce_kernel<SumOp>(in, out, a, "mean", true);
});
KERAS_REGISTER_KERNEL(max, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) {
  reduce_kernel<MaxOp>(in, out, a, "max", false);
});
KERAS_REGISTER_KERNEL(min, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) {
  reduce_kernel<MinOp>(in, out, a, "min", false);
});
KERAS_REGISTER_KERNEL(argmax, cpu, arg_kernel<true>);
KERAS_REGISTER_KERNEL(argmin, cpu, arg_kernel<false>);
KERAS_REGISTER_KERNEL(reduce_broadcast_grad, cpu, broadcast_grad_kernel);
KERAS_REGISTER_KERNEL(reduce_extreme_grad, cpu, extreme_grad_kernel);

// ---- references (tests only) ----
namespace cpu {

Tensor reference_reduce(const Tensor& x_in, const std::vector<int64_t>& axes, bool keepdims, ReduceKind kind) {
  Tensor x = x_in.contiguous();
  auto mask = reduced_axes_mask(x.rank(), axes, "reference_reduce");
  Shape keep = reduced_shape(x.shape(), mask, true);
  Shape ks = contiguous_strides(keep);
  int64_t on = shape_numel(keep);
  double init = kind == ReduceKind::max ? -INFINITY : kind == ReduceKind::min ? INFINITY : 0.0;
  std::vector<double> acc(static_cast<size_t>(on), init);
  std::vector<int64_t> count(static_cast<size_t>(on), 0);
  std::vector<int64_t> idx(x.shape().size(), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) o += (mask[d] ? 0 : idx[d]) * ks[d];
    double v = element_as_double(x, i);
    double& a = acc[static_cast<size_t>(o)];
    if (kind == ReduceKind::max) a = std::isnan(v) || v > a ? v : a;
    else if (kind == ReduceKind::min) a = std::isnan(v) || v < a ? v : a;
    else a += v;
    ++count[static_cast<size_t>(o)];
    for (size_t d = idx.size(); d-- > 0;)
      if (++idx[d] < x.shape()[d]) break;
      else idx[d] = 0;
  }
  if (kind == ReduceKind::mean)
    for (size_t o = 0; o < acc.size(); ++o) acc[o] /= static_cast<double>(count[o]);
  Tensor y = Tensor::empty(reduced_shape(x.shape(), mask, keepdims), x.dtype());
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t o = 0; o < on; ++o) y.data<T>()[o] = static_cast<T>(acc[static_cast<size_t>(o)]);
  });
  return y;
}

Tensor reference_arg_reduce(const Tensor& x_in, int axis, bool is_max) {
  Tensor x = x_in.contiguous();
  axis = normalize_axis(axis, x.rank(), "reference_arg_reduce");
  Shape s = x.shape();
  int64_t O = 1, I = 1, R = s[static_cast<size_t>(axis)];
  for (int i = 0; i < axis; ++i) O *= s[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) I *= s[i];
  Shape os = s;
  os.erase(os.begin() + axis);
  Tensor y = Tensor::empty(os, DType::int64);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) {
      int64_t bi = 0;
      double best = element_as_double(x, o * R * I + i);
      for (int64_t r = 1; r < R; ++r) {
        double v = element_as_double(x, (o * R + r) * I + i);
        if (is_max ? v > best : v < best) best = v, bi = r;
      }
      y.data<int64_t>()[o * I + i] = bi;
    }
  return y;
}

}  // namespace cpu
}  // namespace keras
