// Memory ops every device provides: strided copy, dtype conversion, fill, assign.
#include <cstring>

#include "backend/cpu/bf16_convert.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/half.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

// Copies a (possibly strided) tensor into dense row-major order, one innermost row at a time: a
// row with unit stride is one memcpy, so contiguous sources and slices along outer axes copy at
// memory speed (per-element memcpy made cloning a 400 KB batch take 300 us instead of 20).
void copy_strided(const Tensor& t, char* dst) {
  const Shape& shape = t.shape();
  const Shape& strides = t.strides();
  const int64_t n = t.numel();
  if (n == 0) return;
  const auto es = static_cast<int64_t>(dtype_size(t.dtype()));
  const char* base = static_cast<const char*>(t.impl().storage->data) + t.impl().offset * es;
  if (t.is_contiguous() || shape.empty()) {
    std::memcpy(dst, base, static_cast<size_t>(n * es));
    return;
  }
  const size_t inner_axis = shape.size() - 1;
  const int64_t len = shape[inner_axis], step = strides[inner_axis] * es;
  const int64_t rows = n / len;
  std::vector<int64_t> idx(inner_axis, 0);
  int64_t offset = 0;  // in elements, of the current row's first element
  for (int64_t r = 0; r < rows; ++r, dst += len * es) {
    const char* src = base + offset * es;
    if (step == es) {
      std::memcpy(dst, src, static_cast<size_t>(len * es));
    } else {
      for (int64_t i = 0; i < len; ++i) std::memcpy(dst + i * es, src + i * step, static_cast<size_t>(es));
    }
    for (size_t a = inner_axis; a-- > 0;) {
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
  def.half_native = true;
}
KERAS_REGISTER_KERNEL(copy, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  const Tensor& src = in[0];
  Tensor dst = Tensor::empty(src.shape(), src.dtype(), src.device());
  out = {dst};
  copy_strided(src, static_cast<char*>(dst.raw_data()));
});

namespace {

// bfloat16 <-> float32, the conversions mixed_bfloat16 makes all the time, in vector code.
template <class S, class D>
void convert_spans(const S* s, D* d, int64_t n, void (*convert)(const S*, D*, int64_t)) {
  cpu::parallel_spans(n, 1 << 16, [&](int64_t begin, int64_t end) { convert(s + begin, d + begin, end - begin); });
}

// Conversions to and from the two-byte floats pass through float32 (double -> bfloat16 rounds
// twice, as TensorFlow's cast does).
void astype_half(const Tensor& src, Tensor& dst) {
  const int64_t n = src.numel();
  const DType from = src.dtype(), to = dst.dtype();
  if (from == DType::bfloat16 && to == DType::float32)
    return convert_spans(static_cast<const uint16_t*>(src.raw_data()), static_cast<float*>(dst.raw_data()), n,
                         cpu::bf16_to_floats);
  if (from == DType::float32 && to == DType::bfloat16)
    return convert_spans(static_cast<const float*>(src.raw_data()), static_cast<uint16_t*>(dst.raw_data()), n,
                         cpu::floats_to_bf16);
  if (is_half(from)) {
    const auto* s = static_cast<const uint16_t*>(src.raw_data());
    if (is_half(to)) {
      auto* d = static_cast<uint16_t*>(dst.raw_data());
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
      for (int64_t i = 0; i < n; ++i) d[i] = half_from_float(to, half_to_float(from, s[i]));
      return;
    }
    dispatch_dtype(to, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      D* d = static_cast<D*>(dst.raw_data());
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(half_to_float(from, s[i]));
    });
    return;
  }
  auto* d = static_cast<uint16_t*>(dst.raw_data());
  dispatch_dtype(from, [&](auto src_tag) {
    using S = decltype(src_tag);
    const S* s = static_cast<const S*>(src.raw_data());
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < n; ++i) d[i] = half_from_float(to, static_cast<float>(s[i]));
  });
}

void astype_kernel(const TensorList& in, TensorList& out, const Attrs&) {
  if (in[0].dtype() == out[0].dtype()) {
    std::memcpy(out[0].raw_data(), in[0].raw_data(), in[0].nbytes());
    return;
  }
  if (is_half(in[0].dtype()) || is_half(out[0].dtype())) return astype_half(in[0], out[0]);
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
}

void fill_kernel(const TensorList& in, TensorList&, const Attrs& a) {
  double v = a.get_float("value");
  Tensor t = in[0];
  int64_t n = t.numel();
  if (is_half(t.dtype())) {
    const uint16_t bits = half_from_float(t.dtype(), static_cast<float>(v));
    auto* p = static_cast<uint16_t*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) p[i] = bits;
    return;
  }
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.raw_data());
    T value = static_cast<T>(v);
    for (int64_t i = 0; i < n; ++i) p[i] = value;
  });
}

}  // namespace

KERAS_REGISTER_OP(astype) {
  def.shape = astype_shape;
  def.half_native = true;
}
KERAS_REGISTER_KERNEL(astype, cpu, astype_kernel);

KERAS_REGISTER_OP(fill) {
  def.shape = [](const std::vector<TensorSpec>&, const Attrs&) { return std::vector<TensorSpec>{}; };
  def.mutates_inputs = true;
  def.half_native = true;
}
KERAS_REGISTER_KERNEL(fill, cpu, fill_kernel);

// assign(dst, src): copies src into dst's memory.
KERAS_REGISTER_OP(assign) {
  def.shape = [](const std::vector<TensorSpec>&, const Attrs&) { return std::vector<TensorSpec>{}; };
  def.mutates_inputs = true;
  def.half_native = true;
}
KERAS_REGISTER_KERNEL(assign, cpu, [](const TensorList& in, TensorList&, const Attrs&) {
  Tensor dst = in[0];
  Tensor src = in[1].contiguous();
  std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
});

}  // namespace keras
