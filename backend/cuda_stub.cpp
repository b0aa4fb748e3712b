// The CUDA queries of a build without the CUDA backend (KERAS_CUDA=OFF or no toolkit found):
// no devices, nothing cached. The real ones are in backend/cuda/runtime.cpp.
#ifndef KERAS_HAS_CUDA
#include <atomic>

#include "backend/cuda.h"

namespace keras::cuda {
namespace {
std::atomic<bool> deterministic_on{false}, force_direct{false};
}

bool built() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() { return "this build has no CUDA backend (configure with -DKERAS_CUDA=ON)"; }
AllocatorStats allocator_stats(int) { return {}; }
void empty_cache() {}
void synchronize(int) {}
void set_deterministic(bool on) { deterministic_on = on; }
bool deterministic() { return deterministic_on; }
void set_conv_force_direct(bool on) { force_direct = on; }
bool conv_force_direct() { return force_direct; }
ConvCounters conv_counters() { return {}; }
void clear_conv_algorithm_cache() {}

}  // namespace keras::cuda
#endif
