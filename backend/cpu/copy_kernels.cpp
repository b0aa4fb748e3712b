// Memory ops every device provides: strided copy, dtype conversion, fill, assign.
#include <cstring>

#include "backend/op_registry.h"

namespace keras {
namespace {

// Visits the elements of a (possibly strided) tensor in row-major order.
template <class F>
void for_each_strided(const Tensor& t, F&& f) {
  const Shape& shape = t.shape();
  const Shape& strides = t.strides();
  int64_t n = t.numel();
  if (n == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(i, offset);
    for (size_t a = shape.size(); a-- > 0;) {
      offset += strides[a];
      if (++idx[a] < shape[a]) break;
      offset -= strides[a] * shape[a];
      idx[a] = 0;
    }
  }
}

std::vector<TensorSpec> astype_shape(const std::vector<TensorSpec>& in, const Attrs& a) {
  return {{in.at(0).shape, static_cast<DType>(a.get_int("dtype"))}};
}

}  // namespace

// The strided copy behind Tensor::contiguous/clone: it is the one op that reads views directly.
KERAS_REGISTER_OP(copy) {
  def.shape = same_as_first_input;
  def.kernel_allocates = true;
  def.strided_inputs = true;
}
KERAS_REGISTER_KERNEL(copy, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  const Tensor& src = in[0];
  Tensor dst = Tensor::empty(src.shape(), src.dtype(), src.device());
  out = {dst};
  size_t es = dtype_size(src.dtype());
  const char* base = static_cast<const char*>(src.impl().storage->data) + src.impl().offset * static_cast<int64_t>(es);
  char* d = static_cast<char*>(dst.raw_data());
  for_each_strided(src, [&](int64_t i, int64_t off) { std::memcpy(d + i * es, base + off * static_cast<int64_t>(es), es); });
});

KERAS_REGISTER_OP(astype) { def.shape = astype_shape; }
KERAS_REGISTER_KERNEL(astype, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  int64_t n = in[0].numel();
  dispatch_dtype(in[0].dtype(), [&](auto src_tag) {
    using S = decltype(src_tag);
    const S* s = static_cast<const S*>(in[0].raw_data());
    dispatch_dtype(out[0].dtype(), [&](auto dst_tag) {
      using D = decltype(dst_tag);
      D* d = static_cast<D*>(out[0].raw_data());
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
    });
  });
});

KERAS_REGISTER_OP(fill) {
  def.shape = [](const std::vector<TensorSpec>&, const Attrs&) { return std::vector<TensorSpec>{}; };
  def.mutates_inputs = true;
}
KERAS_REGISTER_KERNEL(fill, cpu, [](const TensorList& in, TensorList&, const Attrs& a) {
  double v = a.get_float("value");
  Tensor t = in[0];
  int64_t n = t.numel();
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.raw_data());
    T value = static_cast<T>(v);
    for (int64_t i = 0; i < n; ++i) p[i] = value;
  });
});

// assign(dst, src): copies src into dst's memory.
KERAS_REGISTER_OP(assign) {
  def.shape = [](const std::vector<TensorSpec>&, const Attrs&) { return std::vector<TensorSpec>{}; };
  def.mutates_inputs = true;
}
KERAS_REGISTER_KERNEL(assign, cpu, [](const TensorList& in, TensorList&, const Attrs&) {
  Tensor dst = in[0];
  Tensor src = in[1].contiguous();
  std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
});

}  // namespace keras
