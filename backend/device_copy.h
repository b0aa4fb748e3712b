// Lookup of the copy routines between device kinds that device backends register with
// register_device_copy (backend/tensor.h). Apart from tensor.h so that tests which swap a
// routine in and out (tests/support/simulated_device.h) add no include to every source.
#pragma once
#include "backend/tensor.h"

namespace keras {

// The routine registered for copies from `from` to `to`, or null.
DeviceCopyFn registered_device_copy(DeviceKind from, DeviceKind to);

}  // namespace keras
