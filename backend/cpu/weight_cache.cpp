// The weight cache of weight_cache.h: reordered weight tensors keyed by storage and offset,
// valid while the storage lives and its version is unchanged.
#include "backend/cpu/weight_cache.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "backend/cpu/dnnl_context.h"

namespace keras::cpu {
namespace {

using dnnl::memory;

bool env_cache_enabled() {
  for (const char* name : {"KERAS_WEIGHT_CACHE", "KERAS_CONV_WEIGHT_CACHE"}) {  // the second: its name before Dense used it
    const char* v = std::getenv(name);
    if (v && std::string(v) == "0") return false;
  }
  return true;
}

struct WeightCache {
  struct Entry {
    std::weak_ptr<Storage> storage;
    uint64_t version = 0;  // the storage version the last call saw
    bool packed = false;   // whether `mem` holds that version, reordered
    memory mem;
  };
  std::mutex mutex;
  std::unordered_map<std::string, Entry> entries;
  bool enabled = env_cache_enabled();
  uint64_t hits = 0, reorders = 0;
  // Live weights only (dead ones are pruned first); a Dense weight in inference may hold two
  // layouts (oneDNN's and dense_panels.h's), so a 24-layer transformer's ~150 Dense layers fit.
  static constexpr size_t kCapacity = 1024;

  // Entries of dead tensors hold memory for nothing: drop them, and everything when still full.
  void prune() {
    for (auto it = entries.begin(); it != entries.end();)
      it = it->second.storage.expired() ? entries.erase(it) : std::next(it);
    if (entries.size() >= kCapacity) entries.clear();
  }
};

WeightCache& weight_cache() {
  static WeightCache cache;
  return cache;
}

// The shared body of both lookups. `always`: reorder on a version change (else only when the
// previous call saw this version); returns a null memory when it does not reorder.
memory lookup(const Tensor& w, const memory::desc& keras, const memory::desc& wanted, const std::string& reorder_key,
              bool always) {
  auto& eng = dnnl_engine();
  memory user(keras, eng, const_cast<void*>(w.raw_data()));
  if (wanted == keras) return user;
  auto reorder = primitive_cache().get<dnnl::reorder>(
      reorder_key, [&] { return std::make_shared<dnnl::reorder>(make_reorder(keras, wanted)); });
  auto run = [&](memory& dst) {
    execute_reorder(*reorder, user, dst);
    dnnl_stream().wait();
  };
  WeightCache& cache = weight_cache();
  const auto& storage = w.impl().storage;
  std::unique_lock lock(cache.mutex);
  if (!cache.enabled) {
    lock.unlock();
    if (!always) return memory();
    memory dst(wanted, eng);
    run(dst);
    return dst;
  }
  std::string key = reorder_key + ";@" + std::to_string(reinterpret_cast<uintptr_t>(storage.get())) + "+" +
                    std::to_string(w.impl().offset);
  auto it = cache.entries.find(key);
  if (it == cache.entries.end() || it->second.storage.lock() != storage) {
    if (it != cache.entries.end()) cache.entries.erase(it);
    cache.prune();
    it = cache.entries.emplace(key, WeightCache::Entry{storage, storage->version, false, memory()}).first;
    if (!always) return memory();
  }
  WeightCache::Entry& e = it->second;
  const bool seen = e.version == storage->version;
  if (seen && e.packed) {
    ++cache.hits;
    return e.mem;
  }
  e.version = storage->version;
  e.packed = false;
  if (!seen && !always) return memory();
  if (!e.mem) e.mem = memory(wanted, eng);
  ++cache.reorders;
  e.packed = true;
  memory dst = e.mem;
  run(dst);
  return dst;
}

}  // namespace

memory prepared_weights(const Tensor& w, const memory::desc& keras, const memory::desc& wanted,
                        const std::string& reorder_key) {
  return lookup(w, keras, wanted, reorder_key, true);
}

memory prepared_weights_if_stable(const Tensor& w, const memory::desc& keras, const memory::desc& wanted,
                                  const std::string& reorder_key) {
  return lookup(w, keras, wanted, reorder_key, false);
}

WeightCacheStats weight_cache_stats() {
  WeightCache& c = weight_cache();
  std::lock_guard lock(c.mutex);
  return {c.hits, c.reorders, c.entries.size()};
}

void set_weight_cache_enabled(bool enabled) {
  WeightCache& c = weight_cache();
  std::lock_guard lock(c.mutex);
  c.enabled = enabled;
  if (!enabled) c.entries.clear();
}

bool weight_cache_enabled() {
  WeightCache& c = weight_cache();
  std::lock_guard lock(c.mutex);
  return c.enabled;
}

void clear_weight_cache() {
  WeightCache& c = weight_cache();
  std::lock_guard lock(c.mutex);
  c.entries.clear();
  c.hits = c.reorders = 0;
}

}  // namespace keras::cpu
