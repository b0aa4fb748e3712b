// CPU kernels of the data-moving shape ops: transpose, concatenate, slice / slice_grad, take /
// take_grad, one_hot. (reshape, expand_dims and squeeze are views: see backend/ops_shape.cpp.)
//
// These kernels move elements without looking at them, so they work on bytes: one template per
// element size (1, 4, 8) serves every dtype, and contiguous runs go through memcpy. Index
// validation happens before any parallel region, since an exception must not leave an OpenMP
// region.
#include <algorithm>
#include <cstring>

#include "backend/op_registry.h"

namespace keras {
namespace {

// Below this many bytes moved, waking threads costs more than they save on memory-bound copies.
constexpr int64_t kParallelBytes = 1 << 20;

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// Calls f(U{}) with an unsigned integer type of the element size, for dtype-blind copies.
template <class F>
void dispatch_size(size_t es, F&& f) {
  switch (es) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

// ---- transpose ----

// Drops extent-1 axes and merges input axes that stay adjacent under the permutation, so that
// e.g. NHWC->NCHW becomes a batched 2-D transpose and an identity becomes one memcpy.
void simplify_permutation(const Shape& shape, const std::vector<int64_t>& perm, Shape& s_out, std::vector<int64_t>& p_out) {
  // Renumber the axes of extent > 1 densely, so that axes around a dropped one count as adjacent.
  std::vector<int64_t> dense(shape.size(), -1), extent;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) dense[i] = static_cast<int64_t>(extent.size()), extent.push_back(shape[i]);
  std::vector<int64_t> kept;  // dense input axes in output order
  for (int64_t p : perm)
    if (dense[static_cast<size_t>(p)] >= 0) kept.push_back(dense[static_cast<size_t>(p)]);
  // Runs of consecutive input axes become one axis.
  std::vector<std::vector<int64_t>> groups;
  for (int64_t p : kept) {
    if (!groups.empty() && groups.back().back() + 1 == p) groups.back().push_back(p);
    else groups.push_back({p});
  }
  // Number the groups by their input position.
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  s_out.assign(groups.size(), 1);
  p_out.assign(groups.size(), 0);
  for (size_t rank_in = 0; rank_in < order.size(); ++rank_in) {
    const auto& grp = groups[order[rank_in]];
    for (int64_t ax : grp) s_out[rank_in] *= extent[static_cast<size_t>(ax)];
    p_out[order[rank_in]] = static_cast<int64_t>(rank_in);
  }
}

// One micro-tile of a strided plane: out[i + j*ostride] = in[i*istride + j]. Full 8x8 tiles have
// constant bounds so the compiler can keep them in registers.
template <class U>
inline void transpose_tile(const U* in, U* out, int64_t istride, int64_t ostride, int64_t i0, int64_t j0, int64_t i1, int64_t j1) {
  if (i1 - i0 == 8 && j1 - j0 == 8) {
    for (int64_t j = 0; j < 8; ++j)
      for (int64_t i = 0; i < 8; ++i) out[(j0 + j) * ostride + i0 + i] = in[(i0 + i) * istride + j0 + j];
    return;
  }
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t i = i0; i < i1; ++i) out[j * ostride + i] = in[i * istride + j];
}

// Permutations that move the innermost input axis (the 2-D transpose is the simplest). Input axis
// a = perm[r-1] becomes innermost in the output, so each output element lies in a plane spanned by
// axis a and the innermost input axis: contiguous along one side when read, along the other when
// written. Planes are transposed in 64x64 blocks (the unit of parallel work) of 8x8 micro-tiles;
// small micro-tiles avoid the cache-set conflicts that power-of-two strides cause with larger ones.
template <class U>
void tiled_transpose(const U* in, U* out, const Shape& shape, const std::vector<int64_t>& perm) {
  size_t r = perm.size();
  Shape in_strides = contiguous_strides(shape), out_shape(r);
  for (size_t i = 0; i < r; ++i) out_shape[i] = shape[static_cast<size_t>(perm[i])];
  Shape out_strides = contiguous_strides(out_shape);
  size_t a = static_cast<size_t>(perm[r - 1]);
  size_t q = static_cast<size_t>(std::find(perm.begin(), perm.end(), static_cast<int64_t>(r - 1)) - perm.begin());
  int64_t rows = shape[a], cols = shape[r - 1], istride = in_strides[a], ostride = out_strides[q];
  std::vector<size_t> others;  // output positions that enumerate the planes
  for (size_t pos = 0; pos + 1 < r; ++pos)
    if (pos != q) others.push_back(pos);
  int64_t planes = 1;
  for (size_t pos : others) planes *= out_shape[pos];
  constexpr int64_t B = 64;
  int64_t tiles_r = (rows + B - 1) / B, tiles_c = (cols + B - 1) / B, per_plane = tiles_r * tiles_c;
  int64_t total = planes * per_plane;
  bool par = total > 1 && planes * rows * cols * static_cast<int64_t>(sizeof(U)) > kParallelBytes;
#pragma omp parallel for if (par) schedule(static)
  for (int64_t t = 0; t < total; ++t) {
    int64_t rem = t / per_plane, ib = 0, ob = 0;
    for (size_t k = others.size(); k-- > 0;) {
      size_t pos = others[k];
      int64_t idx = rem % out_shape[pos];
      rem /= out_shape[pos];
      ib += idx * in_strides[static_cast<size_t>(perm[pos])];
      ob += idx * out_strides[pos];
    }
    int64_t rc = t % per_plane, R0 = (rc / tiles_c) * B, C0 = (rc % tiles_c) * B;
    int64_t R1 = std::min(rows, R0 + B), C1 = std::min(cols, C0 + B);
    for (int64_t i0 = R0; i0 < R1; i0 += 8)
      for (int64_t j0 = C0; j0 < C1; j0 += 8)
        transpose_tile(in + ib, out + ob, istride, ostride, i0, j0, std::min(R1, i0 + 8), std::min(C1, j0 + 8));
  }
}

// Permutations that keep the innermost axis: the output is a sequence of contiguous input runs.
template <class U>
void run_transpose(const U* in, U* out, const Shape& shape, const std::vector<int64_t>& perm) {
  size_t r = perm.size();
  Shape in_strides = contiguous_strides(shape), out_shape(r), src_stride(r);
  for (size_t i = 0; i < r; ++i) {
    out_shape[i] = shape[static_cast<size_t>(perm[i])];
    src_stride[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  int64_t inner = out_shape[r - 1], outer = prod(out_shape, 0, r - 1);
  bool par = outer > 1 && outer * inner * static_cast<int64_t>(sizeof(U)) > kParallelBytes;
#pragma omp parallel for if (par) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o, base = 0;
    for (size_t ax = r - 1; ax-- > 0;) {
      base += (rem % out_shape[ax]) * src_stride[ax];
      rem /= out_shape[ax];
    }
    std::memcpy(out + o * inner, in + base, static_cast<size_t>(inner) * sizeof(U));
  }
}

void transpose_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  if (x.numel() == 0) return;
  std::vector<int64_t> perm = a.get_ints("perm");
  for (auto& p : perm) if (p < 0) p += x.rank();
  Shape s;
  std::vector<int64_t> p;
  simplify_permutation(x.shape(), perm, s, p);
  size_t es = dtype_size(x.dtype());
  bool identity = true;
  for (size_t i = 0; i < p.size(); ++i) identity = identity && p[i] == static_cast<int64_t>(i);
  if (identity) {
    std::memcpy(out[0].raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  dispatch_size(es, [&](auto tag) {
    using U = decltype(tag);
    const U* src = static_cast<const U*>(x.raw_data());
    U* dst = static_cast<U*>(out[0].raw_data());
    if (p.back() == static_cast<int64_t>(p.size()) - 1) run_transpose(src, dst, s, p);
    else tiled_transpose(src, dst, s, p);
  });
}

// ---- slice and its zero-padded inverse ----

// Copies the window [begin, begin+size) of a row-major tensor `big` of shape `full` to/from the
// compact tensor `small` (kToSmall: gather, else scatter). Trailing axes the window spans fully
// join the contiguous run, so each run is one memcpy.
template <bool kToSmall>
void window_copy(char* big, char* small, const Shape& full, const Shape& begin, const Shape& size, size_t es) {
  size_t r = full.size();
  if (shape_numel(size) == 0) return;
  if (r == 0) {
    kToSmall ? std::memcpy(small, big, es) : std::memcpy(big, small, es);
    return;
  }
  size_t k = r - 1;  // last axis that the window does not span fully
  while (k > 0 && begin[k] == 0 && size[k] == full[k]) --k;
  int64_t tail = prod(full, k + 1, r);
  int64_t run = size[k] * tail;
  Shape strides(r, 1);
  for (size_t i = r - 1; i-- > 0;) strides[i] = strides[i + 1] * full[i + 1];
  int64_t outer = prod(size, 0, k);
  size_t run_bytes = static_cast<size_t>(run) * es;
  bool par = outer > 1 && static_cast<int64_t>(run_bytes) * outer > kParallelBytes;
#pragma omp parallel for if (par) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o, off = begin[k] * strides[k];
    for (size_t ax = k; ax-- > 0;) {
      off += (begin[ax] + rem % size[ax]) * strides[ax];
      rem /= size[ax];
    }
    char* b = big + static_cast<size_t>(off) * es;
    char* s = small + static_cast<size_t>(o) * run_bytes;
    kToSmall ? std::memcpy(s, b, run_bytes) : std::memcpy(b, s, run_bytes);
  }
}

void slice_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  Shape begin = a.get_ints("begin");
  window_copy<true>(static_cast<char*>(const_cast<void*>(x.raw_data())), static_cast<char*>(out[0].raw_data()), x.shape(), begin,
                    out[0].shape(), dtype_size(x.dtype()));
}

void slice_grad_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  Tensor& y = out[0];
  std::memset(y.raw_data(), 0, y.nbytes());  // all-zero bytes are 0 in every dtype
  window_copy<false>(static_cast<char*>(y.raw_data()), static_cast<char*>(const_cast<void*>(in[0].raw_data())), y.shape(),
                     a.get_ints("begin"), in[0].shape(), dtype_size(y.dtype()));
}

// ---- concatenate ----

void concatenate_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  Tensor& y = out[0];
  size_t axis = static_cast<size_t>(normalize_axis(a.get_int("axis"), y.rank(), "concatenate"));
  size_t es = dtype_size(y.dtype());
  int64_t outer = prod(y.shape(), 0, axis);
  int64_t inner = prod(y.shape(), axis + 1, y.shape().size());
  std::vector<size_t> chunk(in.size()), at(in.size());  // bytes per outer step, offset in a row
  size_t row = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    chunk[i] = static_cast<size_t>(in[i].shape()[axis] * inner) * es;
    at[i] = row;
    row += chunk[i];
  }
  char* dst = static_cast<char*>(y.raw_data());
  bool par = outer > 1 && static_cast<int64_t>(row) * outer > kParallelBytes;
#pragma omp parallel for if (par) schedule(static)
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < in.size(); ++i)
      if (chunk[i])
        std::memcpy(dst + static_cast<size_t>(o) * row + at[i], static_cast<const char*>(in[i].raw_data()) + static_cast<size_t>(o) * chunk[i],
                    chunk[i]);
}

// ---- take and its scatter-add inverse ----

// Reads indices as int64, wrapping negatives as NumPy does; IndexError naming the first bad one.
std::vector<int64_t> checked_indices(const Tensor& indices, int64_t extent, size_t axis, const Shape& x_shape, const char* op) {
  std::vector<int64_t> idx(static_cast<size_t>(indices.numel()));
  dispatch_dtype(indices.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* p = static_cast<const T*>(indices.raw_data());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(p[i]);
    }
  });
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t v = idx[i];
    if (v < -extent || v >= extent)
      fail<IndexError>(op, "indices in [" + std::to_string(-extent) + ", " + std::to_string(extent) + ") for axis " + std::to_string(axis) + " of shape " + shape_str(x_shape),
                       "index " + std::to_string(v) + " at position " + std::to_string(i) + " of the indices");
    if (v < 0) idx[i] = v + extent;
  }
  return idx;
}

void take_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  size_t axis = static_cast<size_t>(normalize_axis(a.get_int("axis"), x.rank(), "take"));
  int64_t extent = x.shape()[axis];
  auto idx = checked_indices(in[1], extent, axis, x.shape(), "take");
  int64_t outer = prod(x.shape(), 0, axis), inner = prod(x.shape(), axis + 1, x.shape().size());
  int64_t n = static_cast<int64_t>(idx.size());
  size_t es = dtype_size(x.dtype()), bytes = static_cast<size_t>(inner) * es;
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(out[0].raw_data());
  bool par = outer * n > 1 && static_cast<int64_t>(bytes) * outer * n > kParallelBytes;
#pragma omp parallel for if (par) schedule(static)
  for (int64_t t = 0; t < outer * n; ++t) {
    int64_t o = t / n, j = t % n;
    std::memcpy(dst + static_cast<size_t>(t) * bytes, src + static_cast<size_t>(o * extent + idx[static_cast<size_t>(j)]) * bytes, bytes);
  }
}

void take_grad_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  Tensor& y = out[0];
  size_t axis = static_cast<size_t>(normalize_axis(a.get_int("axis"), y.rank(), "take_grad"));
  int64_t extent = y.shape()[axis];
  auto idx = checked_indices(in[1], extent, axis, y.shape(), "take_grad");
  int64_t outer = prod(y.shape(), 0, axis), inner = prod(y.shape(), axis + 1, y.shape().size());
  int64_t n = static_cast<int64_t>(idx.size());
  std::memset(y.raw_data(), 0, y.nbytes());
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* g = static_cast<const T*>(in[0].raw_data());
      T* d = static_cast<T*>(y.raw_data());
      // Repeated indices add into the same row, so threads split (outer, column block) pairs
      // and every one walks all indices in order: each output element has one writer and a
      // fixed summation order, which keeps the result deterministic.
      constexpr int64_t kBlock = 1024;
      int64_t blocks = (inner + kBlock - 1) / kBlock, tasks = outer * blocks;
      bool par = tasks > 1 && outer * n * inner * static_cast<int64_t>(sizeof(T)) > kParallelBytes;
#pragma omp parallel for if (par) schedule(static)
      for (int64_t t = 0; t < tasks; ++t) {
        int64_t o = t / blocks, k0 = (t % blocks) * kBlock, k1 = std::min(inner, k0 + kBlock);
        for (int64_t j = 0; j < n; ++j) {
          const T* src = g + (o * n + j) * inner;
          T* row = d + (o * extent + idx[static_cast<size_t>(j)]) * inner;
          for (int64_t k = k0; k < k1; ++k) row[k] += src[k];
        }
      }
    }
  });
}

// ---- one_hot ----

void one_hot_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& labels = in[0];
  int64_t classes = a.get_int("num_classes");
  std::vector<int64_t> lab(static_cast<size_t>(labels.numel()));
  dispatch_dtype(labels.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* p = static_cast<const T*>(labels.raw_data());
      for (size_t i = 0; i < lab.size(); ++i) lab[i] = static_cast<int64_t>(p[i]);
    }
  });
  for (size_t i = 0; i < lab.size(); ++i) {
    if (lab[i] >= 0 && lab[i] < classes) continue;
    // Name the position as a multi-index of the labels tensor, as the user indexes it.
    Shape pos(labels.shape().size());
    int64_t rem = static_cast<int64_t>(i);
    for (size_t ax = pos.size(); ax-- > 0;) {
      pos[ax] = rem % labels.shape()[ax];
      rem /= labels.shape()[ax];
    }
    fail<IndexError>("one_hot", "labels in [0, " + std::to_string(classes) + ")",
                     "label " + std::to_string(lab[i]) + " at position " + shape_str(pos),
                     "num_classes must exceed the largest label.");
  }
  Tensor& y = out[0];
  std::memset(y.raw_data(), 0, y.nbytes());
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* d = static_cast<T*>(y.raw_data());
    for (size_t i = 0; i < lab.size(); ++i) d[static_cast<int64_t>(i) * classes + lab[i]] = static_cast<T>(1);
  });
}

}  // namespace

KERAS_REGISTER_KERNEL(transpose, cpu, transpose_kernel);
KERAS_REGISTER_KERNEL(slice, cpu, slice_kernel);
KERAS_REGISTER_KERNEL(slice_grad, cpu, slice_grad_kernel);
KERAS_REGISTER_KERNEL(concatenate, cpu, concatenate_kernel);
KERAS_REGISTER_KERNEL(take, cpu, take_kernel);
KERAS_REGISTER_KERNEL(take_grad, cpu, take_grad_kernel);
KERAS_REGISTER_KERNEL(one_hot, cpu, one_hot_kernel);

}  // namespace keras
