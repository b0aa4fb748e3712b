// The CUDA queries of a build without the CUDA backend (KERAS_CUDA=OFF or no toolkit found):
// no devices, nothing cached. The real ones are in backend/cuda/runtime.cpp.
#ifndef KERAS_HAS_CUDA
#include <atomic>

#include "backend/cuda.h"

namespace keras::cuda {
namespace {
std::atomic<bool> tf32{false};
}

bool built() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() { return "this build has no CUDA backend (configure with -DKERAS_CUDA=ON)"; }
AllocatorStats allocator_stats(int) { return {}; }
void empty_cache() {}
void synchronize(int) {}
void set_allow_tf32(bool allow) { tf32 = allow; }
bool allow_tf32() { return tf32; }

}  // namespace keras::cuda
#endif
