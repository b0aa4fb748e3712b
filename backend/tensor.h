// Tensor: a ref-counted handle to a strided view of device memory, with the autodiff hooks
// (requires_grad, the node that produced it). Copying a Tensor copies the handle, not the data.
//
// Kernels see contiguous tensors; views (reshape of a contiguous tensor, batch slices) share
// storage. Differentiable transformations (reshape, transpose, arithmetic) live in
// backend/ops.h and record on the tape; the methods here that say "view" do not.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "backend/allocator.h"
#include "backend/device.h"
#include "backend/dtype.h"
#include "backend/errors.h"
#include "backend/shape.h"

namespace keras {

struct Node;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape shape;
  Shape strides;  // in elements
  DType dtype = DType::float32;
  bool requires_grad = false;      // leaf flag: gradients are wanted for this tensor
  std::shared_ptr<Node> grad_fn;   // set on outputs of recorded ops
  int output_index = 0;            // which output of grad_fn this is
  // Keras's `_keras_mask`: which timesteps of this tensor are real (boolean, the leading axes of
  // the tensor). Layers set it; the backend only carries it, and no op propagates it.
  std::shared_ptr<TensorImpl> keras_mask;
};

// Whether tensors on `device` live in memory the host may read: the CPU's, and cuda devices only
// while no real GPU exists (then they are test_support::SimulatedCuda's host memory).
bool host_memory(Device device, int cuda_device_count);

class Tensor {
 public:
  Tensor() = default;  // undefined tensor
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- creation (contiguous, on `device`, default device when omitted) ----
  static Tensor empty(const Shape& shape, DType dtype = DType::float32, Device device = default_device());
  static Tensor zeros(const Shape& shape, DType dtype = DType::float32, Device device = default_device());
  static Tensor ones(const Shape& shape, DType dtype = DType::float32, Device device = default_device());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::float32, Device device = default_device());
  static Tensor scalar(double value, DType dtype = DType::float32, Device device = default_device());
  // [start, stop) with `step`; throws ValueError for step 0.
  static Tensor arange(double start, double stop, double step = 1, DType dtype = DType::float32,
                       Device device = default_device());
  // Copies `values` (size must equal the shape's element count; ShapeError otherwise).
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device = default_device());
  template <class T>
  static Tensor from_vector(const std::vector<T>& values) {
    return from_vector(values, Shape{static_cast<int64_t>(values.size())});
  }

  // ---- properties ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Shape& strides() const { return impl().strides; }
  int rank() const { return static_cast<int>(impl().shape.size()); }
  // Extent of `axis` (negative counts from the end); throws IndexError.
  int64_t dim(int64_t axis) const;
  int64_t numel() const { return shape_numel(impl().shape); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device; }
  bool is_contiguous() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }

  // Typed pointer to the first element, for reading and writing on the host. Throws TypeError if
  // T does not match dtype(), DeviceError if the elements live in GPU memory (copy with
  // to(Device::cpu()) first). raw_data() is the address wherever the storage lives (kernels).
  template <class T> T* data();
  template <class T> const T* data() const;
  void* raw_data();
  const void* raw_data() const;

  // ---- views and copies (not recorded on the tape) ----
  // Rows [start, stop) of axis 0, sharing storage; throws IndexError.
  Tensor slice_batch(int64_t start, int64_t stop) const;
  // Same data with another shape (one extent may be -1); a view when contiguous.
  Tensor view(const Shape& shape) const;
  // Permuted strides, sharing storage (perm empty = reverse the axes).
  Tensor permuted(const std::vector<int>& perm = {}) const;
  Tensor contiguous() const;  // self if already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  Tensor to(Device device) const;
  Tensor astype(DType dtype) const;
  // Copies `src` (same shape and dtype) into this tensor's memory, bumping its version.
  void copy_from(const Tensor& src);
  // Sets every element to `value` in place.
  void fill_(double value);

  // ---- autodiff ----
  bool requires_grad() const;  // leaf flag or produced by a recorded op
  Tensor& set_requires_grad(bool value);
  const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }
  Tensor detach() const;  // shares storage, no grad history

  // ---- Keras mask (keras.backend.get_keras_mask / set_keras_mask) ----
  // The mask attached by the layer that produced this tensor; undefined when none.
  Tensor keras_mask() const;
  // Attaches `mask` (undefined clears it) to this tensor and every handle sharing it.
  void set_keras_mask(const Tensor& mask) const;

  // ---- values ----
  double item() const;  // one-element tensors only; ValueError otherwise
  template <class T> std::vector<T> to_vector() const;
  std::string str() const;  // NumPy-like text, elided beyond 6 entries per axis
  uint64_t version() const { return impl().storage->version; }
  void bump_version() { ++impl().storage->version; }

  TensorImpl& impl() const;
  // DeviceError from data() when the storage is not host memory (host_memory above).
  void require_host_memory() const;
  TensorImpl* impl_ptr() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_shared() const { return impl_; }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Copies between device kinds (host<->device) are registered by the device backends.
using DeviceCopyFn = void (*)(const Tensor& src, Tensor& dst);  // same shape/dtype, both contiguous
void register_device_copy(DeviceKind from, DeviceKind to, DeviceCopyFn fn);

// Element access by flat index for any dtype, as double (tests and printing).
double element_as_double(const Tensor& t, int64_t flat_index);

}  // namespace keras

#include "backend/tensor_inl.h"
