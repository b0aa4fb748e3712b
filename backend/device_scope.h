// A thread-local override of default_device(), as TensorFlow's `with tf.device(...)`: inside a
// DeviceScope, tensors created without a device (constants made by layers, losses, metrics and
// initializers) land on the scope's device. Model steps open one on the model's device, so a
// model moved with model.to(cuda:0) computes there even while the process default is the CPU.
// Scopes nest; each restores the previous on destruction.
#pragma once
#include "backend/device.h"

namespace keras {

class DeviceScope {
 public:
  explicit DeviceScope(Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  bool had_previous_;
  Device previous_;
};

}  // namespace keras
