// The process default device (keras::set_default_device) for the span of a scope. Scopes nest:
// an inner one gives back the outer one's device; the outermost one forgets the setting, so that
// the next default_device() resolves KERAS_DEVICE again (as ctest's environment sets it).
// One thread, and not inside a keras::DeviceScope (whose device default_device() would report).
#pragma once
#include "backend/device.h"

namespace keras::test_support {

class DefaultDeviceScope {
 public:
  explicit DefaultDeviceScope(Device device) : previous_(default_device()), outermost_(depth()++ == 0) {
    set_default_device(device);
  }
  ~DefaultDeviceScope() {
    --depth();
    if (outermost_) reset_default_device();
    else set_default_device(previous_);
  }
  DefaultDeviceScope(const DefaultDeviceScope&) = delete;
  DefaultDeviceScope& operator=(const DefaultDeviceScope&) = delete;

 private:
  static int& depth() {
    static int open = 0;
    return open;
  }
  Device previous_;
  bool outermost_;
};

}  // namespace keras::test_support
