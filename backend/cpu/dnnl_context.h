// oneDNN plumbing for CPU kernels: one engine and stream per process, tensor -> memory wrapping,
// and the bounded LRU primitive cache.
//
// Primitive creation costs far more than a small execution, so every primitive (forward,
// backward-data, backward-weights, reorders) is built once per full parameter key and reused.
// Keys must include every parameter that shapes the primitive: op, propagation kind, dtypes, all
// dims, strides/padding/dilation/groups and post-ops. Hit and miss counts are public so that
// tests can prove a second training step creates no primitive.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/tensor.h"

namespace keras::cpu {

dnnl::engine& dnnl_engine();
dnnl::stream& dnnl_stream();

// oneDNN's library-managed scratchpad is shared by executions running at the same time on
// different threads (Debian's oneDNN is built without DNNL_ENABLE_CONCURRENT_EXEC): concurrent
// convolutions gave wrong results or crashed. So every primitive is created with `attr` plus
// scratchpad_mode::user (own_scratchpad) and run through execute(), which hands it a scratchpad
// from the calling thread's own buffer (grown to the largest need, kept for the thread's life).
dnnl::primitive_attr own_scratchpad(dnnl::primitive_attr attr = dnnl::primitive_attr());
// own_scratchpad's attributes plus, unless `act` is "linear", the Keras activation `act` fused as
// an eltwise post-op: relu, relu6, sigmoid, tanh, elu, gelu (erf), swish. ValueError naming
// `where` for any other activation. With `add_first`, a binary add of a tensor of that desc comes
// before the activation (post-op 0: its argument is DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1).
dnnl::primitive_attr activation_attr(const std::string& where, const std::string& act,
                                     const dnnl::memory::desc* add_first = nullptr);
// Runs `prim` (created with own_scratchpad) on the calling thread's stream.
void execute(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args);
// A reorder primitive from `from` to `to` (created with own_scratchpad), and running one.
dnnl::reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
void execute_reorder(const dnnl::primitive& reorder, const dnnl::memory& from, const dnnl::memory& to);

dnnl::memory::data_type dnnl_dtype(DType dtype);  // TypeError for dtypes oneDNN lacks
dnnl::memory::dims dnnl_dims(const Shape& shape);
// Plain row-major descriptor of a contiguous tensor (scalars become 1-D of extent 1).
dnnl::memory::desc plain_desc(const Shape& shape, DType dtype);
// Wraps the tensor's memory (no copy). The tensor must be contiguous and outlive the memory.
dnnl::memory wrap(const Tensor& t);
dnnl::memory wrap(const Tensor& t, const dnnl::memory::desc& desc);

struct PrimitiveCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;  // = primitives created
  size_t size = 0;
  size_t capacity = 0;
};

// Bounded LRU of type-erased cached objects (primitives with their descriptors).
class PrimitiveCache {
 public:
  explicit PrimitiveCache(size_t capacity);
  // Returns the entry for `key`, building it with `make` on a miss.
  template <class T>
  std::shared_ptr<T> get(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
    if (auto hit = lookup(key)) return std::static_pointer_cast<T>(hit);
    std::shared_ptr<T> made = make();
    insert(key, made);
    return made;
  }
  PrimitiveCacheStats stats() const;
  void clear();
  void set_capacity(size_t capacity);

 private:
  std::shared_ptr<void> lookup(const std::string& key);
  void insert(const std::string& key, std::shared_ptr<void> value);
  mutable std::mutex mutex_;
  size_t capacity_;
  std::list<std::pair<std::string, std::shared_ptr<void>>> order_;  // front = most recent
  std::unordered_map<std::string, decltype(order_)::iterator> index_;
  uint64_t hits_ = 0, misses_ = 0;
};

// The process-wide cache (capacity from KERAS_PRIMITIVE_CACHE_CAPACITY, default 1024).
PrimitiveCache& primitive_cache();

// Builds a cache key from heterogenous parts: key("matmul", dims, transpose, ...).
class KeyBuilder {
 public:
  explicit KeyBuilder(const std::string& op) : key_(op) {}
  KeyBuilder& add(int64_t v) { key_ += ';' + std::to_string(v); return *this; }
  // Exact (hexadecimal) so that parameters differing in any bit never share a primitive.
  KeyBuilder& add(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, ";%a", v);
    key_ += buf;
    return *this;
  }
  KeyBuilder& add(const std::string& v) { key_ += ';' + v; return *this; }
  KeyBuilder& add(const Shape& s) { key_ += ";["; for (auto d : s) key_ += std::to_string(d) + ','; key_ += ']'; return *this; }
  KeyBuilder& add(DType t) { return add(static_cast<int64_t>(t)); }
  const std::string& str() const { return key_; }

 private:
  std::string key_;
};

}  // namespace keras::cpu

namespace keras {
// Public counters of the CPU primitive cache (backend-agnostic view for tests and tools).
struct KernelCacheStats { uint64_t hits, misses; size_t size, capacity; };
KernelCacheStats cpu_primitive_cache_stats();
}  // namespace keras
