// CUDA kernels of the data-moving shape ops: transpose, slice, slice_grad, concatenate. Same
// semantics as backend/cpu/shape_kernels.cpp (every dtype, bytes moved blindly); the op
// definitions in backend/ops_shape.cpp validate attrs and shapes before these run.
//
// transpose: a permutation that moves the innermost axis goes through shared-memory tiles
// (the 2-D and NHWC<->NCHW cases, unless a side is narrow); one that keeps it is a gather of
// contiguous runs. All the
// strided copies widen their innermost contiguous run to 16-byte units where alignment allows.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/indexing.h"
#include "backend/cuda/runtime.h"
#include "backend/cuda/shape_kernels.h"
#include "backend/cuda/op_checks.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using cuda::require_float;
using cuda::require_numeric;
using cuda::stream_of;

using cuda::DeviceGuard;
namespace k = cuda::kernels;


const char* byte_ptr(const Tensor& t) { return static_cast<const char*>(t.raw_data()); }
char* byte_ptr(Tensor& t) { return static_cast<char*>(t.raw_data()); }

// Rewrites `ix` (element strides, innermost stride 1 on the strided side, the other side
// contiguous) in the widest unit of at most 16 bytes that divides the innermost run, every
// stride and both base addresses; returns the unit in bytes.
int widen(k::Indexer& ix, size_t es, const void* a, const void* b) {
  const int e = static_cast<int>(es);
  if (ix.rank == 0 || ix.stride[ix.rank - 1] != 1) return e;
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  for (int w = 16; w > e; w /= 2) {
    bool ok = (ix.ext[ix.rank - 1] * e) % w == 0 && pa % static_cast<uintptr_t>(w) == 0 &&
              pb % static_cast<uintptr_t>(w) == 0;
    for (int d = 0; ok && d + 1 < ix.rank; ++d) ok = (ix.stride[d] * e) % w == 0;
    if (!ok) continue;
    ix.ext[ix.rank - 1] = ix.ext[ix.rank - 1] * e / w;
    for (int d = 0; d + 1 < ix.rank; ++d) ix.stride[d] = ix.stride[d] * e / w;
    return w;
  }
  return e;
}

// out (contiguous, `n` elements of es bytes) = src read through (ext, strides); or the reverse.
void strided_copy(bool to_contiguous, const char* strided_base, char* contiguous_base, const Shape& ext,
                  const Shape& strides, size_t es, cudaStream_t stream, const char* where) {
  const int64_t n = shape_numel(ext);
  if (n == 0) return;
  k::Indexer ix = cuda::make_indexers(ext, {strides}, where)[0];
  const int unit = widen(ix, es, strided_base, contiguous_base);
  const int64_t units = n * static_cast<int64_t>(es) / unit;
  if (to_contiguous) k::gather_units(unit, strided_base, ix, contiguous_base, units, stream);
  else k::scatter_units(unit, contiguous_base, ix, const_cast<char*>(strided_base), units, stream);
  cuda::check_launch(where);
}

// ---- transpose ----

// Drops extent-1 axes and merges input axes that stay adjacent (and in order) under the
// permutation, so that NHWC->NCHW becomes (N, HW, C) with perm (0, 2, 1).
void simplify(const Shape& shape, const std::vector<int64_t>& perm, Shape& s, std::vector<int64_t>& p) {
  std::vector<int64_t> dense(shape.size(), -1);
  Shape extent;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) dense[i] = static_cast<int64_t>(extent.size()), extent.push_back(shape[i]);
  std::vector<std::vector<int64_t>> groups;  // in output order, each a run of dense input axes
  for (int64_t ax : perm) {
    int64_t d = dense[static_cast<size_t>(ax)];
    if (d < 0) continue;
    if (!groups.empty() && groups.back().back() + 1 == d) groups.back().push_back(d);
    else groups.push_back({d});
  }
  std::vector<size_t> by_input(groups.size());
  for (size_t i = 0; i < by_input.size(); ++i) by_input[i] = i;
  std::sort(by_input.begin(), by_input.end(), [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  s.assign(groups.size(), 1);
  p.assign(groups.size(), 0);
  for (size_t in_pos = 0; in_pos < by_input.size(); ++in_pos) {
    for (int64_t ax : groups[by_input[in_pos]]) s[in_pos] *= extent[static_cast<size_t>(ax)];
    p[by_input[in_pos]] = static_cast<int64_t>(in_pos);
  }
}

void transpose_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  if (x.numel() == 0) return;
  const char* where = "transpose (cuda)";
  std::vector<int64_t> perm = a.get_ints("perm");
  for (auto& ax : perm)
    if (ax < 0) ax += x.rank();
  Shape s;
  std::vector<int64_t> p;
  simplify(x.shape(), perm, s, p);
  const size_t es = dtype_size(x.dtype());
  DeviceGuard guard(x.device().index);
  cudaStream_t stream = stream_of(x);
  bool identity = true;
  for (size_t i = 0; i < p.size(); ++i) identity = identity && p[i] == static_cast<int64_t>(i);
  if (identity) {
    cuda::check(cudaMemcpyAsync(y.raw_data(), x.raw_data(), x.nbytes(), cudaMemcpyDeviceToDevice, stream), where);
    return;
  }
  const size_t r = p.size();
  Shape in_st = contiguous_strides(s), out_shape(r), src_st(r);
  for (size_t i = 0; i < r; ++i) {
    out_shape[i] = s[static_cast<size_t>(p[i])];
    src_st[i] = in_st[static_cast<size_t>(p[i])];
  }
  // Input axis p[r-1] becomes the output's innermost. A gather (coalesced writes, reads within
  // short spans) serves when it is the input's innermost too (contiguous runs), or when either
  // side of the plane is too narrow for 32 x 32 tiles to keep threads busy (NHWC with C = 3).
  const size_t ax = static_cast<size_t>(p[r - 1]);
  constexpr int64_t kNarrow = 16;
  if (ax == r - 1 || s[ax] < kNarrow || s[r - 1] < kNarrow) {
    strided_copy(true, byte_ptr(x), byte_ptr(y), out_shape, src_st, es, stream, where);
    return;
  }
  // Input axis r-1 sits at output position q.
  Shape out_st = contiguous_strides(out_shape);
  const size_t q = static_cast<size_t>(std::find(p.begin(), p.end(), static_cast<int64_t>(r - 1)) - p.begin());
  Shape plane_ext, plane_in, plane_out;
  for (size_t pos = 0; pos + 1 < r; ++pos) {
    if (pos == q) continue;
    plane_ext.push_back(out_shape[pos]);
    plane_in.push_back(src_st[pos]);
    plane_out.push_back(out_st[pos]);
  }
  auto planes = cuda::make_indexers(plane_ext, {plane_in, plane_out}, where);
  k::transpose_tiled(static_cast<int>(es), x.raw_data(), y.raw_data(), planes[0], planes[1], shape_numel(plane_ext),
                     s[ax], s[r - 1], in_st[ax], out_st[q], stream);
  cuda::check_launch(where);
}

// ---- slice and its zero-padded inverse ----

int64_t window_offset(const Shape& full, const std::vector<int64_t>& begin) {
  Shape st = contiguous_strides(full);
  int64_t off = 0;
  for (size_t i = 0; i < full.size(); ++i) off += begin[i] * st[i];
  return off;
}

void slice_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  DeviceGuard guard(x.device().index);
  const size_t es = dtype_size(x.dtype());
  const char* src = byte_ptr(x) + window_offset(x.shape(), a.get_ints("begin")) * static_cast<int64_t>(es);
  strided_copy(true, src, byte_ptr(y), y.shape(), contiguous_strides(x.shape()), es, stream_of(x), "slice (cuda)");
}

void slice_grad_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& g = in[0];
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  DeviceGuard guard(y.device().index);
  cudaStream_t stream = stream_of(y);
  // All-zero bytes are 0 in every dtype.
  cuda::check(cudaMemsetAsync(y.raw_data(), 0, y.nbytes(), stream), "slice_grad (cuda)");
  const size_t es = dtype_size(y.dtype());
  char* dst = byte_ptr(y) + window_offset(y.shape(), a.get_ints("begin")) * static_cast<int64_t>(es);
  strided_copy(false, dst, const_cast<char*>(byte_ptr(g)), g.shape(), contiguous_strides(y.shape()), es, stream,
               "slice_grad (cuda)");
}

// ---- concatenate ----

// Each input is a block of (outer, chunk_i) elements placed at column at_i of the output's
// (outer, row) view: one strided scatter per input.
void concatenate_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  const size_t axis = static_cast<size_t>(normalize_axis(a.get_int("axis"), y.rank(), "concatenate"));
  const size_t es = dtype_size(y.dtype());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= y.shape()[d];
  for (size_t d = axis + 1; d < y.shape().size(); ++d) inner *= y.shape()[d];
  const int64_t row = y.shape()[axis] * inner;
  DeviceGuard guard(y.device().index);
  cudaStream_t stream = stream_of(y);
  int64_t at = 0;
  for (const Tensor& t : in) {
    const int64_t chunk = t.shape()[axis] * inner;
    strided_copy(false, byte_ptr(y) + at * static_cast<int64_t>(es), const_cast<char*>(byte_ptr(t)), {outer, chunk},
                 {row, 1}, es, stream, "concatenate (cuda)");
    at += chunk;
  }
}

}  // namespace

KERAS_REGISTER_KERNEL(transpose, cuda, transpose_kernel);
KERAS_REGISTER_KERNEL(slice, cuda, slice_kernel);
KERAS_REGISTER_KERNEL(slice_grad, cuda, slice_grad_kernel);
KERAS_REGISTER_KERNEL(concatenate, cuda, concatenate_kernel);

}  // namespace keras
