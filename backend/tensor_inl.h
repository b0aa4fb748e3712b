// Template members of Tensor.
#pragma once
#include <cstring>

namespace keras {

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    fail<ShapeError>("Tensor::from_vector", std::to_string(shape_numel(shape)) + " values for shape " + shape_str(shape),
                     std::to_string(values.size()) + " values");
  Tensor cpu = empty(shape, dtype_of<T>::value, Device::cpu());
  if constexpr (std::is_same_v<T, bool>) {
    auto* out = cpu.data<bool>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  } else if (!values.empty()) {
    std::memcpy(cpu.raw_data(), values.data(), values.size() * sizeof(T));
  }
  return device == Device::cpu() ? cpu : cpu.to(device);
}

template <class T>
T* Tensor::data() {
  if (dtype_of<T>::value != dtype())
    fail<TypeError>("Tensor::data", dtype_name(dtype_of<T>::value), dtype_name(dtype()));
  if (device().kind != DeviceKind::cpu) require_host_memory();
  return static_cast<T*>(raw_data());
}

template <class T>
const T* Tensor::data() const {
  if (dtype_of<T>::value != dtype())
    fail<TypeError>("Tensor::data", dtype_name(dtype_of<T>::value), dtype_name(dtype()));
  if (device().kind != DeviceKind::cpu) require_host_memory();
  return static_cast<const T*>(raw_data());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = (device() == Device::cpu() ? *this : to(Device::cpu())).contiguous();
  if (c.dtype() != dtype_of<T>::value) c = c.astype(dtype_of<T>::value);
  std::vector<T> out(static_cast<size_t>(c.numel()));
  const T* p = c.data<T>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  return out;
}

}  // namespace keras
