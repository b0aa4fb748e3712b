#include "backend/cpu/dnnl_context.h"

#include <cstdlib>
#include <map>
#include <new>
#include <tuple>

namespace keras::cpu {

dnnl::engine& dnnl_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& dnnl_stream() {
  // One stream per thread: oneDNN streams are not meant to be shared across threads.
  thread_local dnnl::stream stream(dnnl_engine());
  return stream;
}

dnnl::primitive_attr own_scratchpad(dnnl::primitive_attr attr) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::primitive_attr activation_attr(const std::string& where, const std::string& act,
                                     const dnnl::memory::desc* add_first) {
  dnnl::primitive_attr attr = own_scratchpad();
  dnnl::post_ops po;
  if (add_first) po.append_binary(dnnl::algorithm::binary_add, *add_first);
  if (act == "linear") {
    if (add_first) attr.set_post_ops(po);
    return attr;
  }
  using alg = dnnl::algorithm;
  static const std::map<std::string, std::tuple<alg, float, float>> kFusable = {
      {"relu", {alg::eltwise_relu, 0.f, 0.f}},       {"relu6", {alg::eltwise_clip_v2, 0.f, 6.f}},
      {"sigmoid", {alg::eltwise_logistic, 0.f, 0.f}}, {"tanh", {alg::eltwise_tanh, 0.f, 0.f}},
      {"elu", {alg::eltwise_elu, 1.f, 0.f}},          {"gelu", {alg::eltwise_gelu_erf, 0.f, 0.f}},
      {"swish", {alg::eltwise_swish, 1.f, 0.f}}};
  auto it = kFusable.find(act);
  if (it == kFusable.end())
    fail<ValueError>(where, "a fusable activation (linear, relu, relu6, sigmoid, tanh, elu, gelu, swish)", "'" + act + "'");
  auto [kind, alpha, beta] = it->second;
  po.append_eltwise(1.f, kind, alpha, beta);
  attr.set_post_ops(po);
  return attr;
}

namespace {

// The calling thread's scratchpad: 64-byte aligned, grown on demand, never shrunk.
void* thread_scratchpad(size_t bytes) {
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  if (bytes > buffer.size) {
    std::free(buffer.data);
    size_t rounded = (bytes + 4095) / 4096 * 4096;
    buffer.data = std::aligned_alloc(64, rounded);
    buffer.size = buffer.data ? rounded : 0;
    if (!buffer.data) throw std::bad_alloc();
  }
  return buffer.data;
}

}  // namespace

void execute(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args) {
  const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(prim.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  size_t bytes = md ? dnnl_memory_desc_get_size(md) : 0;
  if (bytes > 0) args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(dnnl::memory::desc(*md), dnnl_engine(), thread_scratchpad(bytes));
  prim.execute(dnnl_stream(), args);
}

dnnl::reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  auto& eng = dnnl_engine();
  return dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to, own_scratchpad()));
}

void execute_reorder(const dnnl::primitive& reorder, const dnnl::memory& from, const dnnl::memory& to) {
  execute(reorder, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

dnnl::memory::data_type dnnl_dtype(DType dtype) {
  switch (dtype) {
    case DType::float32: return dnnl::memory::data_type::f32;
    case DType::bfloat16: return dnnl::memory::data_type::bf16;
    case DType::int32: return dnnl::memory::data_type::s32;
    default:
      fail<TypeError>("oneDNN", "float32, bfloat16 or int32", dtype_name(dtype), "Cast before calling this kernel.");
  }
}

dnnl::memory::dims dnnl_dims(const Shape& shape) {
  if (shape.empty()) return {1};
  return dnnl::memory::dims(shape.begin(), shape.end());
}

dnnl::memory::desc plain_desc(const Shape& shape, DType dtype) {
  auto dims = dnnl_dims(shape);
  Shape strides = contiguous_strides(Shape(dims.begin(), dims.end()));
  return dnnl::memory::desc(dims, dnnl_dtype(dtype), dnnl::memory::dims(strides.begin(), strides.end()));
}

dnnl::memory wrap(const Tensor& t) { return wrap(t, plain_desc(t.shape(), t.dtype())); }

dnnl::memory wrap(const Tensor& t, const dnnl::memory::desc& desc) {
  if (!t.is_contiguous()) fail<ValueError>("oneDNN wrap", "a contiguous tensor", "a strided view", "Call contiguous().");
  return dnnl::memory(desc, dnnl_engine(), const_cast<void*>(t.raw_data()));
}

PrimitiveCache::PrimitiveCache(size_t capacity) : capacity_(capacity) {}

std::shared_ptr<void> PrimitiveCache::lookup(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->second;
}

void PrimitiveCache::insert(const std::string& key, std::shared_ptr<void> value) {
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) {
    it->second->second = std::move(value);
    return;
  }
  order_.emplace_front(key, std::move(value));
  index_[key] = order_.begin();
  while (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

PrimitiveCacheStats PrimitiveCache::stats() const {
  std::lock_guard lock(mutex_);
  return {hits_, misses_, order_.size(), capacity_};
}

void PrimitiveCache::clear() {
  std::lock_guard lock(mutex_);
  order_.clear();
  index_.clear();
  hits_ = misses_ = 0;
}

void PrimitiveCache::set_capacity(size_t capacity) {
  std::lock_guard lock(mutex_);
  capacity_ = capacity < 1 ? 1 : capacity;
  while (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

PrimitiveCache& primitive_cache() {
  static PrimitiveCache cache([] {
    const char* env = std::getenv("KERAS_PRIMITIVE_CACHE_CAPACITY");
    long v = env ? std::strtol(env, nullptr, 10) : 0;
    return v > 0 ? static_cast<size_t>(v) : size_t{1024};
  }());
  return cache;
}

}  // namespace keras::cpu

namespace keras {
KernelCacheStats cpu_primitive_cache_stats() {
  auto s = cpu::primitive_cache().stats();
  return {s.hits, s.misses, s.size, s.capacity};
}
}  // namespace keras
