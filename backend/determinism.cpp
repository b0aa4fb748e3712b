#include "backend/determinism.h"

#include <atomic>

#include "backend/cuda.h"

namespace keras {
namespace {
std::atomic<bool> deterministic{false};
}  // namespace

void set_op_determinism(bool enabled) {
  deterministic.store(enabled, std::memory_order_relaxed);
  cuda::set_deterministic(enabled);  // cuDNN convolution algorithms (a no-op without the backend)
}
bool op_determinism() { return deterministic.load(std::memory_order_relaxed); }

}  // namespace keras
