#include "backend/tensor.h"

#include "backend/half.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "backend/autodiff.h"
#include "backend/cuda.h"
#include "backend/device_copy.h"
#include "backend/op_registry.h"

namespace keras {

namespace {
std::shared_ptr<TensorImpl> make_impl(const Shape& shape, DType dtype, Device device) {
  for (auto d : shape)
    if (d < 0) fail<ShapeError>("Tensor::empty", "non-negative extents", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return impl;
}

std::array<std::array<DeviceCopyFn, kNumDeviceKinds>, kNumDeviceKinds>& device_copies() {
  static std::array<std::array<DeviceCopyFn, kNumDeviceKinds>, kNumDeviceKinds> table{};
  return table;
}
}  // namespace

void register_device_copy(DeviceKind from, DeviceKind to, DeviceCopyFn fn) {
  device_copies()[static_cast<int>(from)][static_cast<int>(to)] = fn;
}

DeviceCopyFn registered_device_copy(DeviceKind from, DeviceKind to) {
  return device_copies()[static_cast<int>(from)][static_cast<int>(to)];
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) { return Tensor(make_impl(shape, dtype, device)); }

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::scalar(double value, DType dtype, Device device) { return full({}, value, dtype, device); }

Tensor Tensor::arange(double start, double stop, double step, DType dtype, Device device) {
  if (step == 0) fail<ValueError>("Tensor::arange", "a non-zero step", "0");
  if (is_half(dtype)) return arange(start, stop, step, DType::float32, device).astype(dtype);
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((stop - start) / step)));
  Tensor t = empty({n}, dtype, Device::cpu());
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  return device == Device::cpu() ? t : t.to(device);
}

int64_t Tensor::dim(int64_t axis) const { return shape()[normalize_axis(axis, rank(), "Tensor::dim")]; }

bool Tensor::is_contiguous() const {
  const auto& im = impl();
  int64_t expected = 1;
  for (size_t i = im.shape.size(); i-- > 0;) {
    if (im.shape[i] != 1 && im.strides[i] != expected) return false;
    expected *= im.shape[i];
  }
  return true;
}

void* Tensor::raw_data() {
  auto& im = impl();
  return static_cast<char*>(im.storage->data) + im.offset * static_cast<int64_t>(dtype_size(im.dtype));
}
const void* Tensor::raw_data() const {
  auto& im = impl();
  return static_cast<const char*>(im.storage->data) + im.offset * static_cast<int64_t>(dtype_size(im.dtype));
}

bool host_memory(Device device, int cuda_device_count) {
  return device.kind == DeviceKind::cpu || cuda_device_count == 0;
}

void Tensor::require_host_memory() const {
  const Device d = device();
  if (!host_memory(d, cuda::device_count()))
    fail<DeviceError>("Tensor::data", "a tensor in host memory", "one in the memory of " + d.str(),
                      "Copy it to the host first: t.to(Device::cpu()), or read it with to_vector().");
}

TensorImpl& Tensor::impl() const {
  if (!impl_) throw ValueError("Tensor: expected a defined tensor, got an undefined (empty) handle.");
  return *impl_;
}

Tensor Tensor::slice_batch(int64_t start, int64_t stop) const {
  if (rank() == 0) fail<IndexError>("Tensor::slice_batch", "a tensor of rank >= 1", "a scalar");
  int64_t n = shape()[0];
  if (start < 0 || stop < start || stop > n)
    fail<IndexError>("Tensor::slice_batch", "0 <= start <= stop <= " + std::to_string(n),
                     "[" + std::to_string(start) + ", " + std::to_string(stop) + ")");
  auto v = std::make_shared<TensorImpl>(impl());
  v->grad_fn = nullptr;
  v->requires_grad = false;
  v->keras_mask = nullptr;
  v->shape[0] = stop - start;
  v->offset += start * impl().strides[0];
  return Tensor(v);
}

static Shape resolve_shape(const Shape& target, int64_t numel, const std::string& where, const Shape& from) {
  Shape out = target;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) fail<ShapeError>(where, "at most one -1 extent", shape_str(target));
      infer = static_cast<int>(i);
    } else if (out[i] < 0) {
      fail<ShapeError>(where, "extents >= 0 or -1", shape_str(target));
    } else {
      known *= out[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      fail<ShapeError>(where, "a shape with " + std::to_string(numel) + " elements", shape_str(target),
                       "Cannot reshape " + shape_str(from) + ".");
    out[infer] = numel / known;
  }
  if (shape_numel(out) != numel)
    fail<ShapeError>(where, "a shape with " + std::to_string(numel) + " elements (from " + shape_str(from) + ")",
                     shape_str(target));
  return out;
}

Tensor Tensor::view(const Shape& shape) const {
  Tensor base = contiguous();
  Shape resolved = resolve_shape(shape, numel(), "Tensor::view", this->shape());
  auto v = std::make_shared<TensorImpl>(base.impl());
  v->grad_fn = nullptr;
  v->requires_grad = false;
  v->keras_mask = nullptr;  // a view is a new tensor: the mask stays with the layer output it was set on
  v->shape = resolved;
  v->strides = contiguous_strides(resolved);
  return Tensor(v);
}

Tensor Tensor::permuted(const std::vector<int>& perm_in) const {
  std::vector<int> perm = perm_in;
  if (perm.empty()) {
    perm.resize(static_cast<size_t>(rank()));
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  std::vector<int> check = perm;
  std::sort(check.begin(), check.end());
  bool ok = static_cast<int>(perm.size()) == rank();
  for (size_t i = 0; ok && i < check.size(); ++i) ok = check[i] == static_cast<int>(i);
  if (!ok) {
    std::string got = "[";
    for (int p : perm) got += std::to_string(p) + ",";
    fail<ValueError>("Tensor::permuted", "a permutation of 0.." + std::to_string(rank() - 1), got + "]");
  }
  auto v = std::make_shared<TensorImpl>(impl());
  v->grad_fn = nullptr;
  v->requires_grad = false;
  v->keras_mask = nullptr;
  for (size_t i = 0; i < perm.size(); ++i) {
    v->shape[i] = impl().shape[static_cast<size_t>(perm[i])];
    v->strides[i] = impl().strides[static_cast<size_t>(perm[i])];
  }
  return Tensor(v);
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  NoGradGuard no_grad;
  return run_op("copy", {*this})[0];
}

Tensor Tensor::astype(DType dtype) const {
  if (dtype == this->dtype()) return *this;
  NoGradGuard no_grad;
  return run_op("astype", {*this}, {{"dtype", static_cast<int64_t>(dtype)}})[0];
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  DeviceCopyFn fn = device_copies()[static_cast<int>(this->device().kind)][static_cast<int>(device.kind)];
  if (!fn)
    fail<DeviceError>("Tensor::to", "a copy routine from " + this->device().str() + " to " + device.str(), "none",
                      "This build has no " + device_kind_name(device.kind) + " backend.");
  Tensor src = contiguous();
  Tensor dst = empty(shape(), dtype(), device);
  fn(src, dst);
  return dst;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.shape() != shape() || src.dtype() != dtype())
    fail<ShapeError>("Tensor::copy_from", shape_str(shape()) + " " + dtype_name(dtype()),
                     shape_str(src.shape()) + " " + dtype_name(src.dtype()));
  NoGradGuard no_grad;
  run_op("assign", {*this, src.to(device()).contiguous()});
}

void Tensor::fill_(double value) {
  NoGradGuard no_grad;
  run_op("fill", {*this}, {{"value", value}});
}

bool Tensor::requires_grad() const { return impl().requires_grad || impl().grad_fn != nullptr; }

Tensor Tensor::keras_mask() const { return impl().keras_mask ? Tensor(impl().keras_mask) : Tensor(); }

void Tensor::set_keras_mask(const Tensor& mask) const { impl().keras_mask = mask.impl_shared(); }

Tensor& Tensor::set_requires_grad(bool value) {
  impl().requires_grad = value;
  return *this;
}

Tensor Tensor::detach() const {
  auto v = std::make_shared<TensorImpl>(impl());
  v->grad_fn = nullptr;
  v->requires_grad = false;
  v->output_index = 0;
  return Tensor(v);
}

double Tensor::item() const {
  if (numel() != 1) fail<ValueError>("Tensor::item", "a tensor with one element", shape_str(shape()));
  Tensor c = to(Device::cpu());
  return element_as_double(c, 0);
}

double element_as_double(const Tensor& t, int64_t flat) {
  // Walks the strides so that views print correctly.
  int64_t offset = 0, rem = flat;
  const auto& shape = t.shape();
  for (size_t i = shape.size(); i-- > 0;) {
    offset += (rem % shape[i]) * t.strides()[i];
    rem /= shape[i];
  }
  const char* base = static_cast<const char*>(t.impl().storage->data);
  int64_t index = t.impl().offset + offset;
  if (is_half(t.dtype())) return half_to_float(t.dtype(), reinterpret_cast<const uint16_t*>(base)[index]);
  return dispatch_dtype(t.dtype(), [&](auto tag) -> double {
    using T = decltype(tag);
    return static_cast<double>(reinterpret_cast<const T*>(base)[index]);
  });
}

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  Tensor c = to(Device::cpu());
  std::ostringstream os;
  const Shape& s = c.shape();
  os << "Tensor(";
  std::vector<int64_t> idx(s.size(), 0);
  const int64_t edge = 3;
  // Recursive lambda over axes, eliding the middle of long axes.
  std::function<void(size_t, int64_t)> rec = [&](size_t axis, int64_t flat_base) {
    if (axis == s.size()) {
      double v = element_as_double(c, flat_base);
      if (is_floating(c.dtype())) os << std::setprecision(6) << v;
      else os << static_cast<int64_t>(v);
      return;
    }
    int64_t inner = 1;
    for (size_t j = axis + 1; j < s.size(); ++j) inner *= s[j];
    os << "[";
    for (int64_t i = 0; i < s[axis]; ++i) {
      if (s[axis] > 2 * edge && i == edge) {
        os << "..., ";
        i = s[axis] - edge - 1;
        continue;
      }
      rec(axis + 1, flat_base + i * inner);
      if (i + 1 < s[axis]) os << ", ";
    }
    os << "]";
  };
  rec(0, 0);
  os << ", shape=" << shape_str(s) << ", dtype=" << dtype_name(c.dtype()) << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace keras
