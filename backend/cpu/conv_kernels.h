// Controls of the CPU convolution kernels' weight cache.
//
// oneDNN runs fastest on weights in its own blocked layout, but Keras weights are stored as
// (kh, kw, in/groups, out). The kernels reorder a kernel tensor once per storage VERSION and
// reuse the result until the tensor is written again (optimizer updates and Variable::assign
// bump the version). A write that bypasses the version (raw pointer writes) must disable the
// cache or bump_version() itself. KERAS_CONV_WEIGHT_CACHE=0 disables it from the environment.
#pragma once
#include <cstdint>

namespace keras::cpu {

struct ConvWeightCacheStats {
  uint64_t hits = 0;      // kernel calls that reused a reordered kernel
  uint64_t reorders = 0;  // kernel reorders performed (cache misses)
  size_t entries = 0;
};

ConvWeightCacheStats conv_weight_cache_stats();
void set_conv_weight_cache_enabled(bool enabled);
bool conv_weight_cache_enabled();
void clear_conv_weight_cache();

}  // namespace keras::cpu
