// The CPU kernels' weight cache: kernel tensors in oneDNN's preferred layout, per storage version.
//
// oneDNN runs fastest on weights in its own blocked layout, but Keras weights are stored as
// (kh, kw, in/groups, out) for convolutions and (in, units) for Dense. The convolution and dense
// kernels reorder a weight tensor once per storage VERSION and reuse the result until the tensor
// is written again (optimizer updates and Variable::assign bump the version). A write that
// bypasses the version (raw pointer writes) must disable the cache or bump_version() itself.
// KERAS_WEIGHT_CACHE=0 (or KERAS_CONV_WEIGHT_CACHE=0, its former name) disables it from the
// environment.
#pragma once
#include <cstdint>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/tensor.h"

namespace keras::cpu {

// The tensor `w`, described by `keras`, in layout `wanted`: wrapped as is when the layouts are
// equal, else reordered once per storage version (`reorder_key` names the reorder primitive in
// primitive_cache(); it must differ for different (keras, wanted) pairs). The returned memory
// stays valid until the next call for the same tensor. Throws dnnl::error when oneDNN has no
// such reorder.
dnnl::memory prepared_weights(const Tensor& w, const dnnl::memory::desc& keras, const dnnl::memory::desc& wanted,
                              const std::string& reorder_key);

// The same for a weight that may be written between any two calls (a Dense kernel in training):
// reordered only when the previous call with this key saw the same version (weights unchanged,
// as in inference), else a null memory, and the caller runs on the plain layout: a weight written
// on every step would otherwise be reordered on every call for a single use.
dnnl::memory prepared_weights_if_stable(const Tensor& w, const dnnl::memory::desc& keras,
                                        const dnnl::memory::desc& wanted, const std::string& reorder_key);

struct WeightCacheStats {
  uint64_t hits = 0;      // kernel calls that reused a reordered weight tensor
  uint64_t reorders = 0;  // reorders performed (cache misses)
  size_t entries = 0;
};

WeightCacheStats weight_cache_stats();
void set_weight_cache_enabled(bool enabled);
bool weight_cache_enabled();
void clear_weight_cache();

}  // namespace keras::cpu
