// CUDA kernels of take, take_grad and one_hot, as backend/cpu/shape_kernels.cpp: negative
// indices wrap (take, take_grad), and an index out of range is the CPU's IndexError with the
// same text, naming the first bad index in flat order and its position.
//
// The check runs on the device (the smallest bad position, found with an integer atomicMin),
// and its one-word answer is copied back with a wait on the stream: raising the error is part
// of these ops' contract, so this is the one place they synchronise. The lookup is queued before
// the wait, so the copy overlaps the check.
#include <climits>
#include <cstdint>
#include <string>

#include "backend/cuda/runtime.h"
#include "backend/cuda/scratch_pool.h"
#include "backend/cuda/shape_kernels.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using cuda::DeviceGuard;
namespace k = cuda::kernels;

struct BadIndex {
  int64_t position = -1;  // -1: none
  int64_t value = 0;
};

// The first index (flat order) outside [lo, hi), after the work queued so far; waits for the stream.
BadIndex first_bad(const Tensor& idx, int64_t lo, int64_t hi, const char* where) {
  BadIndex bad;
  const int64_t n = idx.numel();
  if (n == 0) return bad;
  cudaStream_t stream = cuda::stream(idx.device().index);
  Tensor flag = Tensor::empty({1}, DType::int64, idx.device());
  cuda::check(cudaMemsetAsync(flag.raw_data(), 0xff, sizeof(unsigned long long), stream), where);
  k::find_bad_index(idx.dtype(), idx.raw_data(), n, lo, hi, static_cast<unsigned long long*>(flag.raw_data()), stream);
  cuda::check_launch(where);
  unsigned long long pos = 0;
  cuda::check(cudaMemcpyAsync(&pos, flag.raw_data(), sizeof(pos), cudaMemcpyDeviceToHost, stream), where);
  cuda::check(cudaStreamSynchronize(stream), where);
  if (pos == ULLONG_MAX) return bad;
  bad.position = static_cast<int64_t>(pos);
  const size_t es = dtype_size(idx.dtype());
  const char* at = static_cast<const char*>(idx.raw_data()) + static_cast<size_t>(pos) * es;
  if (idx.dtype() == DType::int32) {
    int32_t v = 0;
    cuda::check(cudaMemcpy(&v, at, es, cudaMemcpyDeviceToHost), where);
    bad.value = v;
  } else {
    cuda::check(cudaMemcpy(&bad.value, at, es, cudaMemcpyDeviceToHost), where);
  }
  return bad;
}

// The CPU's checked_indices message.
void check_take_indices(const Tensor& idx, int64_t extent, size_t axis, const Shape& x_shape, const char* op,
                        const char* where) {
  BadIndex bad = first_bad(idx, -extent, extent, where);
  if (bad.position < 0) return;
  fail<IndexError>(op, "indices in [" + std::to_string(-extent) + ", " + std::to_string(extent) + ") for axis " +
                           std::to_string(axis) + " of shape " + shape_str(x_shape),
                   "index " + std::to_string(bad.value) + " at position " + std::to_string(bad.position) +
                       " of the indices");
}

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// Widest unit (<= 16 bytes) dividing a row of `row_bytes` and both base addresses.
int row_unit(int64_t row_bytes, size_t es, const void* a, const void* b) {
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  for (int w = 16; w > static_cast<int>(es); w /= 2)
    if (row_bytes % w == 0 && pa % static_cast<uintptr_t>(w) == 0 && pb % static_cast<uintptr_t>(w) == 0) return w;
  return static_cast<int>(es);
}

void take_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& x = in[0];
  const Tensor& idx = in[1];
  Tensor& y = out[0];
  const char* where = "take (cuda)";
  const size_t axis = static_cast<size_t>(normalize_axis(a.get_int("axis"), x.rank(), "take"));
  const int64_t extent = x.shape()[axis];
  const int64_t outer = prod(x.shape(), 0, axis), inner = prod(x.shape(), axis + 1, x.shape().size());
  const size_t es = dtype_size(x.dtype());
  DeviceGuard guard(x.device().index);
  cudaStream_t stream = cuda::stream(x.device().index);
  const int64_t row_bytes = inner * static_cast<int64_t>(es);
  const int unit = row_unit(row_bytes, es, x.raw_data(), y.raw_data());
  // Bad indices read nothing out of range (they give zeros) and raise below.
  k::take_rows(unit, idx.dtype(), x.raw_data(), idx.raw_data(), y.raw_data(), outer, extent, idx.numel(),
               row_bytes / unit, stream);
  cuda::check_launch(where);
  check_take_indices(idx, extent, axis, x.shape(), "take", where);
}

void take_grad_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& g = in[0];
  const Tensor& idx = in[1];
  Tensor& y = out[0];
  const char* where = "take_grad (cuda)";
  const size_t axis = static_cast<size_t>(normalize_axis(a.get_int("axis"), y.rank(), "take_grad"));
  const int64_t extent = y.shape()[axis];
  DeviceGuard guard(y.device().index);
  // Checked first: the scatter needs valid rows to sort.
  check_take_indices(idx, extent, axis, y.shape(), "take_grad", where);
  const int64_t outer = prod(y.shape(), 0, axis), inner = prod(y.shape(), axis + 1, y.shape().size());
  cuda::ScratchPool pool(y.device());
  cuda::check(k::take_grad(y.dtype(), idx.dtype(), g.raw_data(), idx.raw_data(), y.raw_data(), outer, extent,
                           idx.numel(), inner, pool.fn(), cuda::stream(y.device().index)),
              where);
  cuda::check_launch(where);
}

void one_hot_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor& labels = in[0];
  Tensor& y = out[0];
  const char* where = "one_hot (cuda)";
  const int64_t classes = a.get_int("num_classes");
  DeviceGuard guard(labels.device().index);
  k::one_hot(y.dtype(), labels.dtype(), labels.raw_data(), y.raw_data(), labels.numel(), classes,
             cuda::stream(labels.device().index));
  cuda::check_launch(where);
  BadIndex bad = first_bad(labels, 0, classes, where);
  if (bad.position < 0) return;
  // The position as a multi-index of the labels tensor, as the CPU names it.
  Shape pos(labels.shape().size());
  int64_t rem = bad.position;
  for (size_t ax = pos.size(); ax-- > 0;) {
    pos[ax] = rem % labels.shape()[ax];
    rem /= labels.shape()[ax];
  }
  fail<IndexError>("one_hot", "labels in [0, " + std::to_string(classes) + ")",
                   "label " + std::to_string(bad.value) + " at position " + shape_str(pos),
                   "num_classes must exceed the largest label.");
}

}  // namespace

KERAS_REGISTER_KERNEL(take, cuda, take_kernel);
KERAS_REGISTER_KERNEL(take_grad, cuda, take_grad_kernel);
KERAS_REGISTER_KERNEL(one_hot, cuda, one_hot_kernel);

}  // namespace keras
